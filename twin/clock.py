"""The one owner of the world's SimPy environment.

A single asyncio task advances ``world.env`` in slices (``env.run(until=...)``). In ``realtime``
mode sim time follows the wall clock times a speed factor; in ``step`` mode it moves only when
:meth:`SimClock.advance` or :meth:`SimClock.run_to` is called. Handlers run between slices on the
same thread, so world mutations need no locks. ``simpy.rt.RealtimeEnvironment`` is never used:
it blocks the event loop.

The wall clock is read only here, through an injectable ``wall`` function, so tests drive the
driver with a fake one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import simpy
from simpy.core import StopSimulation

from hardware.ports.errors import InvalidInput, Unavailable
from hardware.ports.types import ClockMode, ClockState
from twin.engine import Engine

log = logging.getLogger(__name__)

SLICE_WALL_S = 0.01


@dataclass(frozen=True, slots=True)
class Anchor:
    """One clock's position shared by several processes (the shards of one world): sim time
    ``sim_at`` at wall time ``wall_at`` (Unix seconds, a little ahead so that every process takes
    it at the same instant), then ``speed`` sim seconds per wall second, or held there when
    ``paused``."""

    sim_at: float
    wall_at: float
    speed: float
    paused: bool

    def sim_time(self, wall: float) -> float:
        """Sim time at ``wall`` on this anchor."""
        return self.sim_at if self.paused else self.sim_at + (wall - self.wall_at) * self.speed


class SimClock:
    def __init__(
        self,
        world: Engine,
        *,
        mode: ClockMode = ClockMode.REALTIME,
        speed: float = 1.0,
        wall: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed <= 0:
            raise InvalidInput("speed must be positive", field="speed")
        self.world = world
        self.mode = mode
        self.speed = speed
        self.paused = False
        self._wall = wall
        self._anchor()
        self._following: list[Anchor] = []
        """Shared anchors still ahead on the wall clock, oldest first (:meth:`follow`)."""
        self._waiters: set[asyncio.Future[None]] = set()
        self._driving: set[asyncio.Future[None]] = set()
        self.errors = 0

    # Reading -------------------------------------------------------------------------------
    def now(self) -> float:
        return self.world.now()

    def state(self) -> ClockState:
        return ClockState(self.mode, self.speed, self.paused, self.world.env.now, self.world.epoch)

    # Waiting (for handlers) ----------------------------------------------------------------
    async def sleep(self, seconds: float, *, background: bool = False) -> None:
        """Wait ``seconds`` of world time. Many waiters cost one SimPy timeout each, nothing more."""
        if seconds <= 0:
            return
        await self.wait(self.world.env.timeout(seconds), background=background)

    async def wait(self, event: simpy.Event, *, background: bool = False) -> object:
        """Wait until a SimPy event of the current world fires; returns its value.

        A ``background`` wait (a stream's keep-alive, heartbeat or pacing, a session watchdog) is
        not counted in :attr:`waiting`: only a request that cannot be answered until time passes
        makes a step-mode runner move time."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def _done(ev: simpy.Event) -> None:
            if fut.done():
                return
            if ev.ok:
                fut.set_result(ev.value)
            else:
                ev.defused = True
                fut.set_exception(cast(BaseException, ev.value))

        if event.processed:
            _done(event)
        else:
            event.callbacks.append(_done)
        self._waiters.add(fut)
        if not background:
            self._driving.add(fut)
        try:
            return await fut
        finally:
            self._waiters.discard(fut)
            self._driving.discard(fut)

    def release_waiters(self, reason: str) -> None:
        """Fail every pending wait: their world is gone (reset or restore)."""
        for fut in list(self._waiters):
            if not fut.done():
                fut.set_exception(Unavailable(reason))
        self._waiters.clear()
        self._driving.clear()

    @property
    def waiting(self) -> bool:
        """Whether a request is waiting on the world clock (background waits not counted)."""
        return bool(self._driving)

    # Control -------------------------------------------------------------------------------
    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        self._anchor()

    def set_speed(self, speed: float) -> None:
        if not speed > 0:
            raise InvalidInput("speed must be positive", field="speed")
        self.speed = speed
        self._anchor()

    def set_mode(self, mode: ClockMode) -> None:
        self.mode = mode
        self._anchor()

    def follow(self, anchor: Anchor) -> None:
        """Realtime on an anchor shared with other processes (``wall`` must then be Unix time, as
        :func:`time.time` is): from ``anchor.wall_at`` on, sim time is what the anchor says. Until
        then the clock keeps its current course, which the sender computed the anchor from."""
        if anchor.speed <= 0:
            raise InvalidInput("speed must be positive", field="speed")
        self._following.append(anchor)
        self.tick()

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise InvalidInput("cannot advance by a negative duration", field="seconds")
        self.run_to(self.world.env.now + seconds)

    def run_to(self, sim_time: float) -> None:
        if sim_time < self.world.env.now:
            raise InvalidInput("cannot run to a time in the past", field="sim_time")
        self._run_until(sim_time)
        self._anchor()

    def rebased(self) -> None:
        """Call after the world was rebuilt (reset/restore): waiters fail, the anchor restarts."""
        self.release_waiters("the world was reset")
        self._anchor()

    # Driving -------------------------------------------------------------------------------
    def tick(self) -> None:
        """Advance to where the wall clock says sim time should be (realtime, not paused)."""
        while self._following and self._wall() >= self._following[0].wall_at:
            self._take(self._following.pop(0))
        if self.mode is ClockMode.STEP or self.paused:
            self._anchor()
            return
        target = self._anchor_sim + (self._wall() - self._anchor_wall) * self.speed
        self._run_until(target)

    async def run(self, slice_wall: float = SLICE_WALL_S) -> None:
        """The driver task: tick every ``slice_wall`` seconds until cancelled."""
        self._anchor()
        while True:
            await asyncio.sleep(slice_wall)
            self.tick()

    def _take(self, anchor: Anchor) -> None:
        self._run_until(anchor.sim_at)
        self.mode, self.speed, self.paused = ClockMode.REALTIME, anchor.speed, anchor.paused
        self._anchor_wall, self._anchor_sim = anchor.wall_at, max(anchor.sim_at, self.world.env.now)

    def _anchor(self) -> None:
        self._anchor_wall = self._wall()
        self._anchor_sim = self.world.env.now

    def _run_until(self, target: float) -> None:
        """Run the world up to and including ``target``: events due exactly then have happened."""
        env = self.world.env
        while True:
            try:
                if target > env.now:
                    env.run(until=target)
                while env.peek() <= target:
                    env.step()
            except StopSimulation:  # a stale ``until`` marker left by an interrupted run
                continue
            except Exception:  # a model process crashed: log it, keep the clock alive
                self.errors += 1
                log.exception("world process failed at t=%.3f", env.now)
                continue
            return
