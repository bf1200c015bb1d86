"""How long the event loop was held: a probe task that asks to wake every millisecond and notes how
late it woke. A wake-up ``d`` seconds late means some callback (a world slice, a request handler, a
garbage collection) held the loop for about ``d``, or that the machine did not give the process a
core for that long; so the probe also notes the CPU time the loop's thread used between two
wake-ups, which only the process's own work accounts for. It costs about a thousand wake-ups a
second, a few percent of one core.

The probe runs only once asked (``POST /loop/reset`` on the control plane starts it and zeroes the
figures; ``GET /loop`` reads them): the longest block since the reset, when it happened, and how many
blocks passed 5, 20 and 100 ms. The wall clock is read here only to measure the loop, never to move
the world.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

PROBE_S = 0.001
THRESHOLDS_MS = (5, 20, 100)


@dataclass
class LoopWatch:
    wall: Callable[[], float] = time.perf_counter
    cpu: Callable[[], float] = time.thread_time
    longest_s: float = 0.0
    longest_cpu_s: float = 0.0
    """The most CPU time the loop's thread used between two wake-ups of the probe."""
    longest_at: float | None = None
    """Seconds after the last reset at which the longest block ended."""
    wakeups: int = 0
    over: dict[int, int] = field(default_factory=lambda: dict.fromkeys(THRESHOLDS_MS, 0))
    since: float = 0.0
    task: asyncio.Task | None = None

    def __post_init__(self) -> None:
        self.since = self.wall()

    def note(self, late_s: float, cpu_s: float = 0.0) -> None:
        """One wake-up ``late_s`` seconds after it was due, ``cpu_s`` of thread CPU since the last."""
        self.wakeups += 1
        self.longest_cpu_s = max(self.longest_cpu_s, cpu_s)
        if late_s > self.longest_s:
            self.longest_s = late_s
            self.longest_at = self.wall() - self.since
        late_ms = late_s * 1000.0
        for limit in THRESHOLDS_MS:
            if late_ms > limit:
                self.over[limit] += 1

    def start(self) -> None:
        """Zero the figures; start the probe on the running loop if it is not running yet."""
        self.reset()
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self.run(), name="loop-watch")

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    def reset(self) -> None:
        self.longest_s, self.longest_cpu_s, self.longest_at, self.wakeups = 0.0, 0.0, None, 0
        self.over = dict.fromkeys(THRESHOLDS_MS, 0)
        self.since = self.wall()

    def figures(self) -> dict:
        return {
            "watching": self.task is not None and not self.task.done(),
            "longest_block_ms": round(self.longest_s * 1000.0, 3),
            "longest_cpu_ms": round(self.longest_cpu_s * 1000.0, 3),
            "longest_at_s": None if self.longest_at is None else round(self.longest_at, 3),
            "blocks_over_ms": {str(k): v for k, v in self.over.items()},
            "wakeups": self.wakeups,
            "seconds": round(self.wall() - self.since, 3),
        }

    async def run(self, period: float = PROBE_S) -> None:
        """The probe: sleep ``period``, note how much later than that it woke; until cancelled."""
        wall, cpu = self.wall, self.cpu
        while True:
            due, used = wall() + period, cpu()
            await asyncio.sleep(period)
            self.note(max(0.0, wall() - due), cpu() - used)
