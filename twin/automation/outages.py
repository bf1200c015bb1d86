"""Simulated sensor outages and telemetry windows, as scenarios drive them.

A sensor taken offline stops reporting until it is brought back; the server notices as the real one
does (:meth:`DeviceOutages.take_offline`). A telemetry window is a gap or a spike in one sensor's
reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind

if TYPE_CHECKING:
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine
    from twin.sensors import SensorFleet, Window


class DeviceOutages:
    """Outages of the simulated sensors among ``devices``."""

    def __init__(self, world: Engine, *, devices: DeviceRegistry) -> None:
        self.world = world
        self.devices = devices

    def take_offline(self, device_id: str) -> Callable[[], None]:
        """A simulated sensor stops reporting (its link is gone) until :meth:`bring_online` or the
        returned function. The server notices as the real one does: once the effective offline
        timeout has passed since its last report the device reads ``offline`` and
        ``DEVICE_OFFLINE`` is emitted; its first report afterwards emits ``DEVICE_ONLINE``."""
        fleet = self._sensor(device_id)
        self.devices.doc(device_id)  # NotFound once deleted
        if fleet.link_down(device_id) is not None:
            raise InvalidInput(f"{device_id} is offline already", field="device")
        window = fleet.open_window(device_id, self.world.env.now, None)
        self.world.env.process(self._notice_offline(device_id, window))
        return lambda: self._reconnect(device_id)

    def bring_online(self, device_id: str) -> None:
        if self._sensor(device_id).link_down(device_id) is None:
            raise InvalidInput(f"{device_id} is not offline", field="device")
        self._reconnect(device_id)

    def rearm(self) -> None:
        """After a restore: sensors whose link was down when the snapshot was taken, and whose
        offline notice was still to come, get it again (one already given is not repeated)."""
        for fleet in self.devices.sensors.values():
            for device_id in fleet.device_ids:
                window = fleet.link_down(device_id)
                if (
                    window is not None
                    and self.devices.find_doc(device_id) is not None
                    and self._notice_due(device_id) > 0
                ):
                    self.world.env.process(self._notice_offline(device_id, window))

    def _notice_due(self, device_id: str) -> float:
        """World seconds until the server notices the device is gone (0 or less: it has)."""
        last = self.devices.last_sample(device_id) or self.world.now()
        return last + self.devices.view(device_id).effective_offline_timeout_secs - self.world.now()

    def _notice_offline(self, device_id: str, window: Window):
        fleet, world = self.devices.sensor_of[device_id], self.world
        yield world.env.timeout(max(0.0, self._notice_due(device_id)) + 1e-3)
        if fleet.link_down(device_id) != window or self.devices.find_doc(device_id) is None:
            return  # back already, or deleted
        if self.devices.view(device_id).status == "offline":  # a device never seen stays "disconnected"
            world.emit(EventKind.DEVICE_OFFLINE, device_id, reason="heartbeat timeout", timestamp=world.now())

    def _reconnect(self, device_id: str) -> None:
        fleet = self.devices.sensor_of[device_id]
        window = fleet.link_down(device_id)
        if window is None:
            return
        noticed = (
            self.devices.find_doc(device_id) is not None and self.devices.view(device_id).status == "offline"
        )
        fleet.close_window(window, self.world.env.now)
        if noticed:
            self.world.env.process(self._reports_again(device_id))

    def _reports_again(self, device_id: str):
        """``DEVICE_ONLINE`` with the device's first report back (the group's next tick)."""
        fleet, env = self.devices.sensor_of[device_id], self.world.env
        period = fleet.group.period
        due = math.ceil(env.now / period - 1e-9) * period
        if fleet.last_sample_at is not None and due <= fleet.last_sample_at:
            due = fleet.last_sample_at + period
        yield env.timeout(due - env.now)
        self.world.emit(
            EventKind.DEVICE_ONLINE,
            device_id,
            device_type=fleet.group.device_type,
            timestamp=self.world.now(),
        )

    def telemetry_window(
        self, device_id: str, seconds: float | None, metric: str | None = None, delta: float = 0.0
    ) -> Callable[[], None]:
        """A gap (``metric`` None: no reports) or a spike (``metric`` shifted by ``delta``) from now
        for ``seconds`` of world time (``None``: one sample); the returned function ends it early."""
        fleet = self._sensor(device_id)
        now = self.world.env.now
        seconds = seconds or fleet.group.period
        window = fleet.open_window(device_id, now, now + seconds, metric, delta)
        return lambda: fleet.close_window(window, self.world.env.now)

    def _sensor(self, device_id: str) -> SensorFleet:
        fleet = self.devices.sensor_of.get(device_id)
        if fleet is None:
            raise NotFound(f"no simulated sensor {device_id!r}", resource="device")
        return fleet
