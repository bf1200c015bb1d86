"""What the edge gateway API needs from one camera (simulated, or a real device behind a passthrough).

The gateway is split per area (auth, system, power, time, media, picture, lens, autofocus,
peripherals, RS485, audio, files, logs, shell, OTA, OS upgrade, ai, apps, containers, monitor,
events...); ``GatewayBackend`` hands out the areas.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.camera_audio import GatewayAudio
from hardware.ports.camera_hw import (
    GatewayAutofocus,
    GatewayLens,
    GatewayPeripherals,
    GatewayPicture,
    Rs485Line,
)
from hardware.ports.clock import Clock
from hardware.ports.gateway_admin import GatewayAdmin, GatewayWorkbench
from hardware.ports.gateway_ai import GatewayAi
from hardware.ports.gateway_apps import GatewayApps, GatewayContainers, GatewayEvents, GatewayLifecycle
from hardware.ports.gateway_files import (
    GatewayFiles,
    GatewayLogs,
    GatewayLogStream,
    GatewayOsUpgrade,
    GatewayOta,
    GatewayShell,
)
from hardware.ports.gateway_monitor import GatewayMonitor, GatewayStorage
from hardware.ports.media import GatewayMedia, GatewayMediaConfig
from hardware.ports.types import (
    ClientTimeSync,
    DeviceTime,
    GatewayInfo,
    PublicKey,
    SystemStats,
    TimeConfig,
    TimezoneInfo,
)


@runtime_checkable
class GatewayAuth(Protocol):
    def public_key(self) -> PublicKey:
        """The device's RSA-2048 public key and its current time."""

    def login(self, username: str, password: str, timestamp: int) -> str:
        """Check credentials and open a session; returns the raw session token.

        ``password`` is base64 RSA-PKCS#1 v1.5 ciphertext or plaintext. A non-zero ``timestamp``
        more than five minutes from device time raises ``TimestampSkew``; bad credentials raise
        ``Unauthenticated``.
        """

    def logout(self, token: str) -> bool:
        """Drop the session; idempotent. True if a session was dropped."""

    def check_token(self, token: str) -> str:
        """The username the token belongs to; ``Unauthenticated`` otherwise."""


@runtime_checkable
class GatewaySystem(Protocol):
    def info(self) -> GatewayInfo: ...

    def stats(self) -> SystemStats: ...

    def device_info(self, host: str) -> dict[str, object]:
        """The handler's ``DeviceInfo``; ``host`` is the request's Host header (its ``ip_address``)."""

    def change_password(self, old: str, new: str, timestamp: int) -> None:
        """Both passwords RSA ciphertext or plaintext, like login. ``TimestampSkew`` for a stale
        non-zero timestamp; ``InvalidInput(resource="parameter")`` for a new password outside 8-32
        characters; ``InvalidInput`` for a wrong (non-empty) old password. Sessions end shortly after."""

    def device_time(self) -> DeviceTime:
        """The device's clock; every timestamp the device reports is on it."""


@runtime_checkable
class GatewayPower(Protocol):
    def restart(self) -> None:
        """Reboot the device: it goes down shortly after answering and is unreachable while booting."""


@runtime_checkable
class GatewayTime(Protocol):
    """The device's clock settings: manual time, timezone, NTP."""

    def set_time(self, datetime_: str) -> None:
        """RFC 3339; ``InvalidInput`` if malformed or while NTP is enabled."""

    def sync_from_client(self, client_timestamp: int) -> ClientTimeSync: ...

    def config(self) -> TimeConfig: ...

    def save_config(
        self,
        timezone_: str,
        time_format: str,
        sync_mode: str,
        ntp_server: str,
        ntp_interval: int,
        manual: str,
    ) -> None: ...

    def set_timezone(self, name: str) -> None:
        """``InvalidInput`` for a name not in :meth:`timezones`."""

    def timezones(self) -> tuple[TimezoneInfo, ...]: ...

    def set_ntp(self, enabled: bool | None, server: str, interval: int) -> None: ...

    def sync_ntp(self) -> None:
        """Enable NTP and put the device clock back on true time."""


@runtime_checkable
class GatewayBackend(Protocol):
    id: str

    @property
    def clock(self) -> Clock: ...

    def reachable(self) -> bool:
        """False while the device is down (booting, powered off) or gone: the API then refuses
        connections."""

    @property
    def auth(self) -> GatewayAuth: ...
    @property
    def system(self) -> GatewaySystem: ...
    @property
    def power(self) -> GatewayPower: ...
    @property
    def time(self) -> GatewayTime: ...
    @property
    def media(self) -> GatewayMedia: ...
    @property
    def media_config(self) -> GatewayMediaConfig: ...
    @property
    def picture(self) -> GatewayPicture: ...
    @property
    def lens(self) -> GatewayLens: ...
    @property
    def autofocus(self) -> GatewayAutofocus: ...
    @property
    def peripherals(self) -> GatewayPeripherals: ...
    @property
    def rs485(self) -> Rs485Line: ...
    @property
    def audio(self) -> GatewayAudio: ...
    @property
    def files(self) -> GatewayFiles: ...
    @property
    def logs(self) -> GatewayLogs: ...
    @property
    def log_stream(self) -> GatewayLogStream: ...
    @property
    def shell(self) -> GatewayShell: ...
    @property
    def ota(self) -> GatewayOta: ...
    @property
    def os_upgrade(self) -> GatewayOsUpgrade: ...

    @property
    def lifecycle(self) -> GatewayLifecycle: ...

    @property
    def ai(self) -> GatewayAi: ...
    @property
    def apps(self) -> GatewayApps: ...
    @property
    def containers(self) -> GatewayContainers: ...
    @property
    def events(self) -> GatewayEvents: ...
    @property
    def storage(self) -> GatewayStorage: ...
    @property
    def monitor(self) -> GatewayMonitor: ...
    @property
    def admin(self) -> GatewayAdmin: ...
    @property
    def workbench(self) -> GatewayWorkbench: ...
