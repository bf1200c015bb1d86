"""One shard of a world: the wings of its slice of the fleet, served as one process serves them.

A :class:`Shard` builds the world with the scenario's seed, epoch and whole fleet list and the
slice it holds (:class:`twin.fleet.FleetSlice`), serves its members' APIs through the composition
root (no control plane: the coordinator serves the one control plane) and puts on its world clock
the scenario's timeline steps that act on what it holds. Its clock is moved only from outside: a
barrier in step mode (:meth:`run_to`), a shared anchor in realtime (:meth:`follow`).

Nothing here imports Ray; the coordinator (:mod:`twin.cluster.coordinator`) makes the class a Ray
actor, and the tests build shards in one process. What the coordinator asks for comes back as
plain data: the journal's entries, the world's events and actions with their sim times.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hardware.ports.events import Event, EventKind
from hardware.ports.types import ClockMode
from twin.clock import Anchor
from twin.cluster.plan import AUTOMATION_SHARD, ShardSpec
from twin.journal import JournalEntry
from twin.kinds import Kinds
from twin.scenario.actions import Reach
from twin.scenario.catalog import ACTIONS
from twin.scenario.model import Scenario, Step, load_scenario
from twin.scenario.reach import member
from twin.settings import AUTOMATION, Settings

_TELEMETRY = EventKind.DEVICE_TELEMETRY
CONTROL_CALLS = frozenset({"run_action", "undo_action", "active_actions"})
"""What :meth:`Shard.control` passes to the shard's :class:`twin.control.TwinControl`."""


@dataclass(frozen=True, slots=True)
class ShardTime:
    name: str
    sim_time: float
    waiting: bool
    """A request of one of its clients waits on the world clock (step mode moves time then)."""
    next_event: float
    """Sim time of its world's next event (``inf``: none)."""
    errors: int
    """World processes that failed since it started."""
    paused: bool
    speed: float
    wall: float
    """Unix wall time of the reading (realtime: the world was brought up to it first)."""


@dataclass
class ShardRecord:
    """What a run's verdicts read, from one shard: its requests, world events and actions."""

    name: str
    journal: list[JournalEntry]
    events: list[Event]
    actions: list[tuple[float, int, str, dict[str, Any]]]
    undone: dict[int, float]
    errors: list[str]
    trace: list[str]
    """Its world's trace lines (when it records one), for the merged trace."""
    events_emitted: int = 0
    mqtt: list[Any] = field(default_factory=list)
    broker_outages: list[tuple[float, float | None]] = field(default_factory=list)


def step_owner(step: Step, owners: dict[str, str]) -> str | None:
    """The shard that runs a timeline step: the one holding the member it acts on; the automation
    shard for what acts on no member; ``None`` for a clock step (the coordinator's)."""
    action = ACTIONS[step.do]
    if action.reach is Reach.CLOCK:
        return None
    target = member(action, step.params)
    return owners.get(target or AUTOMATION, AUTOMATION_SHARD)


def event_owner(source: str | None, owners: dict[str, str]) -> str | None:
    """The shard whose world emits events of ``source``: a camera's on its shard, the rest on the
    automation shard; ``None`` when any shard may (no source named)."""
    if source is None:
        return None
    return owners.get(source, AUTOMATION_SHARD)


class Shard:
    def __init__(
        self,
        settings: Settings,
        spec: ShardSpec,
        owners: dict[str, str],
        *,
        trace: bool = False,
        wall_now: float | None = None,
    ) -> None:
        self.settings = settings
        self.spec = spec
        self.name = spec.name
        self.owners = owners
        """The shard holding each member, by member name (camera ids, ``automation``)."""
        self.record_trace = trace
        self.wall_now = wall_now
        """The coordinator's wall clock at the run's start: a scenario's ``epoch: now`` on every shard."""
        self.running: Any = None
        self.twin: Any = None
        self.errors: list[str] = []
        self._recorder: Any = None
        self._timeline: list[Step] = []
        self._relayed: list[tuple[int, Step]] = []
        self._outbox: list[tuple[float, int]] = []
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._sessions: Any = None
        self._stopped = asyncio.Event()

    # Life ------------------------------------------------------------------------------------------
    async def start(self) -> dict[str, Any]:
        """Build the world's slice, serve its members and put its timeline steps on its clock;
        returns where each listener is (its URL by name), the MQTT broker's and the sim time."""
        from twin.serve import build, start  # the composition root, imported where a shard runs
        from twin.wings import KINDS

        kinds = KINDS if self.spec.slice.automation else _without(KINDS, AUTOMATION)
        # on Unix wall time, which the coordinator's anchors are given in
        twin = build(
            self.settings,
            record_trace=self.record_trace,
            kinds=kinds,
            slice=self.spec.slice,
            wall=time.time,
            wall_now=self.wall_now,
        )
        if twin.publisher is not None and self.spec.slice.automation:
            lo, hi = self.spec.slice.sensors
            ids = [d for g in twin.world.config.sensors for d in g.device_ids()]
            twin.publisher.only = frozenset(ids[lo:hi])
        self.twin = twin
        if self.settings.scenario is not None:
            self._schedule(load_scenario(self.settings.scenario, allowed=self.settings.scenario_files))
        self._tmp = tempfile.TemporaryDirectory(prefix=f"twin-{self.name}-")
        self.running = await start(twin, Path(self._tmp.name), control=False)
        if self.running.broker is not None and twin.journal is not None:
            self._sessions = self.running.broker.keep_sessions(twin.journal.now)
        return {
            "name": self.name,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "holds": self.spec.describe(),
            "urls": {name: listener.url for name, listener in self.running.listeners.items()},
            "rtsp": {name: rtsp.url("main") for name, rtsp in twin.rtsp.items() if rtsp.serving},
            "mqtt": None if self.running.broker is None else f"mqtt://127.0.0.1:{self.running.broker.port}",
            "sim_time": twin.world.env.now,
            "epoch": twin.world.epoch,
        }

    def _schedule(self, scenario: Scenario) -> None:
        """Its own timeline steps on its clock, and a watch for the events that start another
        shard's ``after`` steps (handed to the coordinator, :meth:`outbox`)."""
        from twin.scenario.timeline import schedule

        mine = [s for s in scenario.timeline if step_owner(s, self.owners) == self.name]
        self._recorder = schedule(
            scenario.model_copy(update={"timeline": mine}), self.twin.control, self.errors
        )
        self._timeline = list(scenario.timeline)
        self._relayed = [
            (i, step) for i, step in enumerate(self._timeline)
            if step.after is not None and step_owner(step, self.owners) not in (self.name, None)
            and event_owner(step.after.source, self.owners) in (self.name, None)
        ]  # fmt: skip
        if self._relayed:
            self.twin.world.observers.append(self._relay)

    def _relay(self, event: Event) -> None:
        for i, step in list(self._relayed):
            after = step.after
            assert after is not None
            if after.event == event.kind.value and after.source in (None, event.source):
                self._outbox.append((event.at, i))
                self._relayed.remove((i, step))

    def outbox(self) -> list[tuple[float, int]]:
        """The events seen since the last call that start another shard's ``after`` step: each
        one's sim time and the step's place in the timeline."""
        out, self._outbox = self._outbox, []
        return out

    def deliver(self, index: int, at: float) -> bool:
        """Another shard saw the event that starts ``after`` step ``index`` at sim time ``at``: it
        runs ``delay`` after that, or now if that is past (the event came at a barrier). ``False``
        when the step has started already."""
        step = self._timeline[index]
        if self._recorder is None or step not in self._recorder.pending or step.after is None:
            return False
        self._recorder.pending.remove(step)
        self._recorder.fire(step, max(0.0, at + step.after.delay - self.twin.world.env.now))
        return True

    async def until_stopped(self) -> None:
        """Returns once the shard is stopped: a call its coordinator holds open to learn that its
        process is gone (the call then fails), without ever asking a busy shard to answer."""
        await self._stopped.wait()

    async def stop(self) -> None:
        from twin.serve import stop

        self._stopped.set()
        if self.running is not None:
            self.twin.control.released.set()
            await stop(self.running)
            self.running = None
        if self._recorder is not None:
            self._recorder.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    # The clock -------------------------------------------------------------------------------------
    def time(self) -> ShardTime:
        clock, env = self.twin.clock, self.twin.world.env
        clock.tick()  # realtime: where the anchor says the world is now
        wall = time.time()
        return ShardTime(
            self.name, env.now, clock.waiting, env.peek(), clock.errors, clock.paused, clock.speed, wall
        )

    def run_to(self, sim_time: float) -> ShardTime:
        """Step mode: run the world to ``sim_time`` (the barrier's call)."""
        clock = self.twin.clock
        if clock.mode is not ClockMode.STEP:
            clock.set_mode(ClockMode.STEP)
        if sim_time > self.twin.world.env.now:
            clock.run_to(sim_time)
        return self.time()

    def follow(self, anchor: Anchor) -> ShardTime:
        """Realtime on the coordinator's anchor."""
        self.twin.clock.follow(anchor)
        return self.time()

    # Actions and state -----------------------------------------------------------------------------
    def control(self, method: str, *args: Any) -> Any:
        """One of the shard's control calls the coordinator routes here by name (an action run on
        what the shard holds, its undo, the actions still undoable): an actor is called by name."""
        if method not in CONTROL_CALLS:
            raise ValueError(f"{method!r} is no control call of a shard")
        return getattr(self.twin.control, method)(*args)

    def snapshot(self, label: str = "") -> str:
        return self.twin.control.snapshot(label).id

    def restore(self, snapshot_id: str) -> float:
        return self.twin.control.restore(snapshot_id).sim_time

    def forget(self, snapshot_id: str) -> None:
        with contextlib.suppress(Exception):
            self.twin.control.delete_snapshot(snapshot_id)

    def reset(self, seed: int | None = None) -> float:
        return self.twin.control.reset(seed).sim_time

    def journal_all(self) -> list[JournalEntry]:
        return list(self.twin.journal.entries)

    def watched(self, end: float) -> dict[str, tuple[list[float], list[float]]]:
        """The scenario's watched metrics from its sensors (the automation shard's), for the report."""
        from twin.scenario.runner import watched_series

        if self.settings.scenario is None:
            return {}
        scenario = load_scenario(self.settings.scenario, allowed=self.settings.scenario_files)
        return watched_series(scenario, self.twin.world, end)

    def readings(self, page: int, limit: int, points: int) -> dict[str, Any]:
        """What the console shows of this shard's world (its sensors only where the server is)."""
        from api.control.fleet import readings

        return readings(self.twin.control, page, limit, points, sensors=self.spec.slice.automation)

    def camera_detail(self, camera_id: str) -> dict[str, Any]:
        from api.control.fleet import camera_detail

        return camera_detail(self.twin.control, camera_id)

    def publisher(self) -> dict[str, Any] | None:
        return None if self.twin.publisher is None else self.twin.publisher.status()

    def record(self) -> ShardRecord:
        twin, control = self.twin, self.twin.control
        events = list(self._recorder.events) if self._recorder is not None else []
        log = self._sessions
        return ShardRecord(
            name=self.name,
            journal=list(twin.journal.entries),
            events=events,
            actions=list(control.actions_run),
            undone=dict(control.actions_undone),
            errors=list(self.errors),
            trace=self._trace(),
            events_emitted=twin.world.events_emitted,
            mqtt=list(log.sessions) if log is not None else [],
            broker_outages=list(log.outages) if log is not None else [],
        )

    def _trace(self) -> list[str]:
        trace = self.twin.world.trace
        if trace is None:
            return []
        if self.spec.slice.automation:
            return list(trace)
        # a publishing slice samples sensors the automation shard samples too: their lines are its
        return [line for line in trace if f" {_TELEMETRY.value} " not in line]


def _without(kinds: Kinds, name: str) -> Kinds:
    out = Kinds()
    for kind in kinds:
        if kind.name != name:
            out.register(kind)
    return out
