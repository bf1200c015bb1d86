"""The camera's field lines, held by :class:`twin.camera.peripherals.Peripherals`: Wiegand card
reads (seeded SimPy arrivals that become events) and the radar's targets (from the scene's ground
truth) in :class:`FieldLines`, and the simulated RS485 port, :class:`SimulatedRs485` (the HAL's return
codes the camera daemon answers; with ``loopback`` in its config the sent bytes come back as an
event)."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from typing import Any

import simpy

from hardware.ports.camera_hw import HAL_EINVAL, HAL_ENODEV, HwStatus
from hardware.ports.events import EventKind
from twin.camera.video.scene import Scene, SceneWorld
from twin.rng import hash_uniform

CHANNELS = (0, 1)
WIEGAND_MEAN_S = 600.0
"""Mean time between card reads on an enabled Wiegand channel."""
BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200)


class FieldLines:
    """One camera's Wiegand readers and radar: which are enabled, the card reads, the targets."""

    def __init__(
        self, world: SceneWorld, camera_id: str, key: int, scene: Scene, pan_deg: Callable[[], float]
    ) -> None:
        self.world = world
        self.env = world.env
        self.id = camera_id
        self._key = key
        self.scene = scene
        self._pan_deg = pan_deg
        """Where the PTZ points, in degrees: the radar's angles are from the camera's axis."""
        self.radar = False
        self.wiegand = dict.fromkeys(CHANNELS, False)

    def cards(self) -> Generator[simpy.Event, Any, None]:
        """Card reads on enabled Wiegand channels: 26-bit frames (facility 8 bits, card 16 bits)."""
        n = 10_000
        while True:
            n += 1
            yield self.env.timeout(_exp(self._key, n, WIEGAND_MEAN_S))
            channel = int(hash_uniform(self._key, n + 500_000) * len(CHANNELS))
            if not self.wiegand[channel]:
                continue
            facility = int(hash_uniform(self._key, n + 600_000) * 256)
            card = int(hash_uniform(self._key, n + 700_000) * 65536)
            self.world.emit(
                EventKind.CAMERA_WIEGAND, self.id, channel=channel, bits=26, facility=facility, card=card
            )

    # Radar ---------------------------------------------------------------------------------------
    def radar_targets(self) -> list[dict[str, float]]:
        """Targets from the scene's ground truth: range the object's distance, angle from its centre."""
        if not self.radar:
            return []
        out = []
        for box in self.scene.boxes(self.env.now):
            out.append(
                {
                    "id": box.object_id,
                    "range_m": round(box.depth, 2),
                    "angle_deg": round((box.x + box.w / 2 - 0.5) * 60.0 + self._pan_deg(), 2),
                }
            )
        return out


class SimulatedRs485:
    """The simulated RS485 port: its setup (``None`` until ``rs485/init``) is part of the
    peripherals' durable settings, written through ``saved``."""

    def __init__(self, world: SceneWorld, camera_id: str, saved: Callable[[], None]) -> None:
        self.world = world
        self.env = world.env
        self.id = camera_id
        self._saved = saved
        self.setup: dict[str, Any] | None = None

    def rs485_init(self, baudrate: int, config: str) -> HwStatus:
        """The daemon takes a 3-character ``config`` (``8N1``, ``7E1``…) and ``8N1`` otherwise; the twin
        also reads ``loopback`` in it (the sent bytes come back as an event)."""
        if baudrate not in BAUD_RATES:
            return HwStatus(HAL_EINVAL)
        frame = config if len(config) == 3 else "8N1"
        self.setup = {"baudrate": baudrate, "config": frame, "loopback": "loopback" in config.lower()}
        self._saved()
        return HwStatus()

    def rs485_deinit(self) -> HwStatus:
        self.setup = None
        self._saved()
        return HwStatus()

    def rs485_tx(self, data: bytes) -> HwStatus:
        if self.setup is None:
            return HwStatus(HAL_ENODEV)
        if data and self.setup["loopback"]:
            seconds = len(data) * 10 / self.setup["baudrate"]
            self.env.process(self._echo(data, seconds))
        return HwStatus()

    def _echo(self, data: bytes, seconds: float) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(seconds)
        self.world.emit(EventKind.CAMERA_RS485_RX, self.id, data=data.hex())


def _exp(key: int, n: int, mean: float) -> float:
    """A seeded exponential interval: the ``n``-th draw of this entity, at least 1 s."""
    u = float(hash_uniform(key, n))
    return max(1.0, -mean * math.log(1.0 - u))
