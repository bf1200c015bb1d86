"""A camera's power: a timed state machine on the world clock,
``up → (restart, delay) → down → (BOOT_S) → up``.

Going down runs the ``on_down`` hooks in order (the camera drops its sessions, the logs and the
apps go down) and emits ``CAMERA_POWER_DOWN`` (the composition root closes the camera's listeners
on it); coming up counts a boot, runs the ``on_up`` hooks and emits ``CAMERA_POWER_UP``. Parts that
only need to know whether the device is up, how long it has been, or to reboot it take this."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hardware.ports.events import EventKind

if TYPE_CHECKING:
    from twin.engine import Engine

RESTART_DELAY_S = 2.0
"""The device answers a reboot or password change, then acts on it this much later."""
BOOT_S = 40.0
"""From power-down to a listening gateway again: kernel, services, platform-api."""


class Power:
    def __init__(self, world: Engine, camera_id: str) -> None:
        self.world = world
        self.camera_id = camera_id
        self.powered = True
        self.boot_count = 0
        self.booted_at = world.env.now - world.config.history  # up since the world's past began
        self.down_until: float | None = None
        self._restart_pending = False
        self.on_down: list[Callable[[str], None]] = []
        """Run in order with the reason as the device goes down."""
        self.on_up: list[Callable[[], None]] = []
        """Run in order as the device comes up."""

    def restart(self, delay: float = RESTART_DELAY_S, reason: str = "reboot") -> None:
        """Reboot ``delay`` from now (an OTA's deploy script, a power cut: 0); a second request
        while one is pending is a no-op."""
        if self._restart_pending or not self.powered:
            return
        self._restart_pending = True
        self.world.env.process(self._reboot(delay, reason))

    def _reboot(self, delay: float, reason: str):
        yield self.world.env.timeout(delay)
        self._restart_pending = False
        self.powered = False
        self.down_until = self.world.env.now + BOOT_S
        for hook in self.on_down:
            hook(reason)
        self.world.emit(EventKind.CAMERA_POWER_DOWN, self.camera_id, reason=reason)
        yield from self._boot(BOOT_S)

    def _boot(self, duration: float):
        yield self.world.env.timeout(duration)
        self.powered = True
        self.down_until = None
        self.boot_count += 1
        self.booted_at = self.world.env.now
        for hook in self.on_up:
            hook()
        self.world.emit(EventKind.CAMERA_POWER_UP, self.camera_id, boot=self.boot_count)

    def uptime(self) -> float:
        return self.world.env.now - self.booted_at

    def boot_id(self) -> str:
        """The kernel's random boot id: a UUID per (seed, camera, boot)."""
        digest = hashlib.blake2b(
            f"{self.world.seed}/{self.camera_id}/{self.boot_count}".encode(), digest_size=16
        )
        h = digest.hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"

    # Snapshot ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "powered": self.powered,
            "boot_count": self.boot_count,
            "booted_at": self.booted_at,
            "down_until": self.down_until,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.powered = state["powered"]
        self.boot_count = state.get("boot_count", 0)
        self.booted_at = state.get("booted_at", self.booted_at)
        self.down_until = state.get("down_until")

    def resume(self) -> None:
        """After a restore: a device that was down boots at the time it was due to."""
        if not self.powered and self.down_until is not None:
            self.world.env.process(self._boot(max(0.0, self.down_until - self.world.env.now)))
