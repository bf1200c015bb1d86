"""The twin's implementation of the control-plane port: clock, reset, snapshot, restore, seed."""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.types import ClockState, SnapshotInfo
from twin.clock import SimClock
from twin.world import World, WorldSnapshot

MAX_SNAPSHOTS = 32


class TwinControl:
    def __init__(self, world: World, clock: SimClock) -> None:
        self.world = world
        self.clock = clock
        self._snapshots: OrderedDict[str, WorldSnapshot] = OrderedDict()
        self._ids = itertools.count(1)

    def clock_state(self) -> ClockState:
        return self.clock.state()

    def pause(self) -> ClockState:
        self.clock.pause()
        return self.clock.state()

    def resume(self) -> ClockState:
        self.clock.resume()
        return self.clock.state()

    def set_speed(self, speed: float) -> ClockState:
        self.clock.set_speed(speed)
        return self.clock.state()

    def advance(self, seconds: float) -> ClockState:
        self.clock.advance(seconds)
        return self.clock.state()

    def run_to(self, sim_time: float) -> ClockState:
        self.clock.run_to(sim_time)
        return self.clock.state()

    def reset(self, seed: int | None = None) -> ClockState:
        if seed is not None and seed < 0:
            raise InvalidInput("seed must be a non-negative integer", field="seed")
        config = self.world.config if seed is None else dataclasses.replace(self.world.config, seed=seed)
        self.world.reset(config)
        self.clock.rebased()
        return self.clock.state()

    def snapshot(self) -> SnapshotInfo:
        snap = self.world.snapshot()
        snapshot_id = f"snap-{next(self._ids)}"
        self._snapshots[snapshot_id] = snap
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)
        return SnapshotInfo(id=snapshot_id, sim_time=snap.sim_time, seed=snap.config.seed)

    def restore(self, snapshot_id: str) -> ClockState:
        snap = self._snapshots.get(snapshot_id)
        if snap is None:
            raise NotFound(f"no snapshot {snapshot_id!r}", resource="snapshot")
        self.world.restore(snap)
        self.clock.rebased()
        return self.clock.state()

    def seed(self) -> int:
        return self.world.seed
