"""The twin's edge gateway backend: one per simulated camera, handing out the camera's parts.

A reset or a restore rebuilds the world's cameras, so each part is looked up in the current world
when it is asked for; the areas that keep state of their own across resets (media, audio) and the
host's hardware put in place of a part (a serial RS485, this machine's figures) belong to the
gateway, where the composition root puts it (:func:`twin.wings.host_hardware`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardware.ports.camera_hw import GatewayAutofocus, GatewayLens, GatewayPeripherals, Rs485Line
from hardware.ports.gateway import GatewayAuth, GatewayPower, GatewaySystem, GatewayTime
from hardware.ports.gateway_admin import GatewayAdmin, GatewayWorkbench
from hardware.ports.gateway_ai import GatewayAi
from hardware.ports.gateway_apps import GatewayApps, GatewayContainers, GatewayEvents
from hardware.ports.gateway_files import GatewayLogs, GatewayOsUpgrade, GatewayOta
from hardware.ports.gateway_monitor import GatewayMonitor, GatewayStorage, MachineFigures
from twin.camera.area import camera_of
from twin.camera.gateway_files import LogStream, TwinGatewayFiles, TwinGatewayShell
from twin.camera.lifecycle import Lifecycle
from twin.camera.video.audio import TwinGatewayAudio
from twin.camera.video.backend import CameraMedia
from twin.camera.video.media_config import MediaConfiguration
from twin.camera.wing import cameras_of
from twin.clock import SimClock
from twin.world import World

if TYPE_CHECKING:
    from twin.camera.camera import Camera


class TwinGateway:
    """The gateway backend of camera ``camera_id``: the camera's parts, each looked up in the
    current world (``Unavailable`` while the world has no such camera)."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self.id = camera_id
        self.clock = clock
        self._world = world
        self.host_rs485: Rs485Line | None = None
        """The RS485 on this machine's serial port in place of the simulated one (put here by
        :func:`twin.wings.host_hardware`)."""
        self.media = CameraMedia(world, clock, camera_id)
        self.picture = self.media
        self.media_config = MediaConfiguration(self.media)
        self.audio = TwinGatewayAudio(world, clock, camera_id)
        self.files = TwinGatewayFiles(world, camera_id)
        self.log_stream = LogStream(world, clock, camera_id)
        self.shell = TwinGatewayShell(world, camera_id)
        self.lifecycle = Lifecycle(world, clock, camera_id)
        self.host_figures: MachineFigures | None = None
        """This machine's figures behind the monitor, in place of the camera's (put here by
        :func:`twin.wings.host_hardware`)."""

    @property
    def camera(self) -> Camera:
        return camera_of(self._world, self.id)

    def reachable(self) -> bool:
        camera = cameras_of(self._world).get(self.id)
        return camera is not None and camera.powered

    @property
    def auth(self) -> GatewayAuth:
        return self.camera

    @property
    def system(self) -> GatewaySystem:
        return self.camera

    @property
    def power(self) -> GatewayPower:
        return self.camera.power

    @property
    def time(self) -> GatewayTime:
        return self.camera.clock

    @property
    def lens(self) -> GatewayLens:
        return self.camera.lens

    @property
    def autofocus(self) -> GatewayAutofocus:
        return self.camera.lens.autofocus

    @property
    def peripherals(self) -> GatewayPeripherals:
        return self.camera.peripherals

    @property
    def rs485(self) -> Rs485Line:
        if self.host_rs485 is not None:
            return self.host_rs485
        return self.camera.peripherals.rs485

    @property
    def logs(self) -> GatewayLogs:
        return self.camera.logs

    @property
    def ota(self) -> GatewayOta:
        return self.camera.ota

    @property
    def os_upgrade(self) -> GatewayOsUpgrade:
        return self.camera.os_upgrade

    @property
    def ai(self) -> GatewayAi:
        return self.camera.ai

    @property
    def apps(self) -> GatewayApps:
        return self.camera.apps

    @property
    def containers(self) -> GatewayContainers:
        return self.camera.containers

    @property
    def events(self) -> GatewayEvents:
        return self.camera.events

    @property
    def storage(self) -> GatewayStorage:
        return self.camera.storage

    @property
    def monitor(self) -> GatewayMonitor:
        """The camera's monitor, on this machine's figures when ``host_figures`` is set (a camera
        rebuilt by a reset or restore gets them again here)."""
        monitor = self.camera.monitor
        if self.host_figures is not None:
            monitor.figures = self.host_figures
        return monitor

    @property
    def admin(self) -> GatewayAdmin:
        return self.camera.admin

    @property
    def workbench(self) -> GatewayWorkbench:
        return self.camera.apps.workbench
