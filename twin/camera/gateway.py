"""The twin's implementation of the edge gateway port: one per simulated camera.

Each call looks the camera up in the current world, so the same backend object keeps working
across resets and restores.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from hardware.adapters.host_stats import HostFigures, HostMonitor
from hardware.adapters.serial_port import SerialPeripherals, SerialRs485
from hardware.ports.events import EventKind
from hardware.ports.types import (
    ClientTimeSync,
    DeviceTime,
    GatewayInfo,
    OtaStatus,
    PublicKey,
    SystemStats,
    TimeConfig,
    TimezoneInfo,
)
from twin.camera.area import CameraArea
from twin.camera.gateway_apps import AppAreas
from twin.camera.gateway_files import TwinGatewayFiles, TwinGatewayLogs, TwinGatewayShell, TwinGatewayUpgrade
from twin.camera.gateway_hw import TwinGatewayLens, TwinGatewayPeripherals
from twin.camera.video.audio import TwinGatewayAudio
from twin.camera.video.backend import TwinGatewayMedia
from twin.camera.wing import cameras_of
from twin.clock import SimClock
from twin.world import World

if TYPE_CHECKING:
    from twin.settings import Settings


class TwinGatewayAuth(CameraArea):
    def public_key(self) -> PublicKey:
        return self.camera.public_key()

    def login(self, username: str, password: str, timestamp: int) -> str:
        return self.camera.login(username, password, timestamp)

    def logout(self, token: str) -> bool:
        return self.camera.logout(token)

    def check_token(self, token: str) -> str:
        return self.camera.check_token(token)


class TwinGatewaySystem(CameraArea):
    def info(self) -> GatewayInfo:
        return self.camera.info()

    def reachable(self) -> bool:
        camera = cameras_of(self._world).get(self._id)
        return camera is not None and camera.powered

    def stats(self) -> SystemStats:
        return self.camera.stats()

    def change_password(self, old_password: str, new_password: str, timestamp: int) -> None:
        self.camera.change_password(old_password, new_password, timestamp)

    def restart(self) -> None:
        self.camera.restart()

    def ota_status(self) -> OtaStatus:
        return self.camera.ota_status()

    def os_upgrade_status(self) -> dict[str, object] | None:
        return self.camera.os_upgrade.report()

    def device_time(self) -> DeviceTime:
        return self.camera.device_time()

    def set_time(self, datetime: str) -> None:
        self.camera.clock.set_time(datetime)

    def sync_time_from_client(self, client_timestamp: int) -> ClientTimeSync:
        return self.camera.clock.sync_from_client(client_timestamp)

    def time_config(self) -> TimeConfig:
        return self.camera.clock.config()

    def save_time_config(
        self,
        timezone: str,
        time_format: str,
        sync_mode: str,
        ntp_server: str,
        ntp_interval: int,
        manual_datetime: str,
    ) -> None:
        self.camera.clock.save_config(
            timezone, time_format, sync_mode, ntp_server, ntp_interval, manual_datetime
        )

    def set_timezone(self, timezone: str) -> None:
        self.camera.clock.set_timezone(timezone)

    def timezones(self) -> tuple[TimezoneInfo, ...]:
        return self.camera.clock.timezones()

    def set_ntp(self, enabled: bool | None, server: str, interval: int) -> None:
        self.camera.clock.set_ntp(enabled, server, interval)

    def sync_ntp(self) -> None:
        self.camera.clock.sync_ntp()


class TwinGateway:
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self.id = camera_id
        self.clock = clock
        self.auth = TwinGatewayAuth(world, camera_id)
        self.system = TwinGatewaySystem(world, camera_id)
        self.media = TwinGatewayMedia(world, clock, camera_id)
        self.lens, self.picture = TwinGatewayLens(world, camera_id), self.media
        self.peripherals = TwinGatewayPeripherals(world, camera_id)
        self.audio = TwinGatewayAudio(world, clock, camera_id)
        self.files = TwinGatewayFiles(world, camera_id)
        self.logs = TwinGatewayLogs(world, clock, camera_id)
        self.shell = TwinGatewayShell(world, camera_id)
        self.upgrade = TwinGatewayUpgrade(world, camera_id)
        AppAreas(world, clock, camera_id).attach(self)


def host_hardware(
    settings: Settings, world: World, gateways: Mapping[str, TwinGateway], real: Collection[str]
) -> None:
    """Simulated cameras' parts on this machine's hardware in place of the world's, as the settings
    and the scenario's camera groups say: the RS485 on a serial port (what it receives becomes
    ``camera.rs485_rx``), the monitor's figures from ``/proc``. Each serial port is opened once
    here, so a wrong one stops the start (``SerialPortError``, an ``OSError``)."""
    specs = world.config.spec_by_camera()
    serial, hosted = settings.host_hardware(
        {camera_id: spec.rs485 for camera_id, spec in specs.items()},
        {camera_id: spec.host_stats for camera_id, spec in specs.items()},
        real,
    )
    for camera_id, url in serial.items():

        def on_rx(frame: bytes, camera_id: str = camera_id) -> None:
            world.emit(EventKind.CAMERA_RS485_RX, camera_id, data=frame.hex())

        port = SerialRs485(camera_id, url, on_rx)
        port.check()
        gateways[camera_id].peripherals = SerialPeripherals(gateways[camera_id].peripherals, port)
    for camera_id in hosted:
        gateways[camera_id].monitor = HostMonitor(gateways[camera_id].monitor, HostFigures())


def close_host_hardware(gateways: Iterable[TwinGateway]) -> None:
    """Close the serial ports :func:`host_hardware` put behind these gateways."""
    for gateway in gateways:
        if isinstance(gateway.peripherals, SerialPeripherals):
            gateway.peripherals.rs485.close()
