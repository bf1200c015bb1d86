"""The twin's own control plane: clock, reset, snapshot, restore, seed. Only the twin implements it."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.clock import Clock
from hardware.ports.types import ClockState, SnapshotInfo


@runtime_checkable
class WorldControl(Protocol):
    @property
    def clock(self) -> Clock:
        """The world clock; its ``state()`` is what the control plane reports."""

    def pause(self) -> ClockState: ...

    def resume(self) -> ClockState: ...

    def set_speed(self, speed: float) -> ClockState:
        """Raises ``InvalidInput`` for a speed that is not positive."""

    def advance(self, seconds: float) -> ClockState:
        """Move world time forward by ``seconds`` (any mode). ``InvalidInput`` if negative."""

    def run_to(self, sim_time: float) -> ClockState:
        """Move world time to ``sim_time``. ``InvalidInput`` if that is in the past."""

    def reset(self, seed: int | None = None) -> ClockState:
        """Rebuild the world from its constructor (optionally with a new seed); durable state is wiped."""

    def snapshot(self, label: str = "") -> SnapshotInfo: ...

    def restore(self, snapshot_id: str) -> ClockState:
        """``NotFound`` for an unknown snapshot id."""

    def seed(self) -> int: ...
