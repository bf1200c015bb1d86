"""The clock every API layer reads time from and waits on. Its time is the world's, not the wall's."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from hardware.ports.types import ClockState


@runtime_checkable
class Clock(Protocol):
    def now(self) -> float:
        """Unix seconds: the world's epoch plus its sim time."""

    def state(self) -> ClockState: ...

    async def sleep(self, seconds: float, *, background: bool = False) -> None:
        """Return after ``seconds`` of world time have passed (in step mode: when time is advanced).
        ``background``: a stream's keep-alive or pacing, which must not make a step runner move time."""
