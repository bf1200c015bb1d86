"""The twin's implementation of the control-plane port: clock, reset, snapshot, restore, seed, the
scenario actions (faults, storms, device and camera events) with their timed undo, what the console
reads of the fleet, and scenarios run on this live world (:class:`LiveScenarios`)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from hardware.ports.errors import Conflict, InvalidInput, NotFound
from hardware.ports.types import ClockMode, ClockState, SnapshotInfo
from twin.clock import SimClock
from twin.journal import RequestJournal
from twin.scenario.actions import BrokerSwitch, Undo, check
from twin.scenario.expectations import RunRecord, judge_all
from twin.scenario.model import Scenario, ScenarioError, parse_scenario
from twin.settings import DEFAULT_SCENARIO
from twin.world import World, WorldSnapshot

if TYPE_CHECKING:
    from api.automation.ratelimit import RateLimiter
    from api.faults import FaultSet
    from hardware.ports.devices import Device
    from hardware.ports.gateway import GatewayBackend
    from twin.camera.camera import Camera
    from twin.sensors import SensorFleet

log = logging.getLogger("twin")

MAX_SNAPSHOTS = 32
ACTION_LOG = 200
"""Actions the console's log shows at the most (the newest)."""
MAX_POINTS = 240
RUN_SLICES = 200
"""A console run in step mode moves the clock in this many slices of its length..."""
RUN_PACE_S = 0.02
"""...each followed by this much wall time, so the run can be watched (about 4 s in all)."""
RUN_POLL_S = 0.05
MAX_SCENARIO_CHARS = 1_000_000
SCENARIO_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


class TwinControl:
    def __init__(
        self,
        world: World,
        clock: SimClock,
        *,
        faults: dict[str, FaultSet] | None = None,
        limiters: dict[str, RateLimiter] | None = None,
        journal: RequestJournal | None = None,
        gateways: dict[str, GatewayBackend] | None = None,
        scenario_dir: Path = DEFAULT_SCENARIO.parent,
    ) -> None:
        self.world = world
        self.clock = clock
        self.faults = faults or {}
        self.limiters = limiters or {}
        self.journal = journal if journal is not None else RequestJournal(world)
        self.gateways = gateways or {}
        """Each camera's gateway backend, the one its server serves (the console reads cameras
        through it and watches their streams on it)."""
        for name, fault_set in self.faults.items():
            fault_set.seed = world.streams.key(f"faults.{name}")
        self._snapshots: OrderedDict[str, WorldSnapshot] = OrderedDict()
        self._ids = itertools.count(1)
        self._undo: dict[int, Undo] = {}
        self._undo_at: dict[int, float] = {}
        self._action_ids = itertools.count(1)
        self.actions_run: list[tuple[float, int, str, dict[str, Any]]] = []
        """(sim time, id, name, params) of every action run."""
        self.actions_undone: dict[int, float] = {}
        """Sim time each undone action ended (its fault window closed)."""
        self.stop_at: float | None = None
        """Set by a step-mode scenario run: a client's world sleep never goes past it."""
        self.stopped = asyncio.Event()
        self.settle: Callable[[], Awaitable[None]] | None = None
        """Awaited after a client's world sleep: lets sockets catch up with the world (a camera
        that went down closes its listeners, one that booted opens them) before the client goes on."""
        self.broker: BrokerSwitch | None = None
        """Takes the embedded MQTT broker down and up (set by whoever runs the broker)."""
        self.scenarios = LiveScenarios(self, scenario_dir)

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

    def set_mode(self, mode: ClockMode) -> ClockState:
        self.clock.set_mode(mode)
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
        self.scenarios.interrupt("the world was reset during the run")
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

    def snapshots(self) -> list[SnapshotInfo]:
        """The snapshots kept (the newest :data:`MAX_SNAPSHOTS`), oldest first."""
        return [SnapshotInfo(i, s.sim_time, s.config.seed) for i, s in self._snapshots.items()]

    def restore(self, snapshot_id: str) -> ClockState:
        snap = self._snapshots.get(snapshot_id)
        if snap is None:
            raise NotFound(f"no snapshot {snapshot_id!r}", resource="snapshot")
        self.scenarios.interrupt("a snapshot was restored during the run")
        self.world.restore(snap)
        self.clock.rebased()
        return self.clock.state()

    def seed(self) -> int:
        return self.world.seed

    # Lookups for actions ---------------------------------------------------------------------
    def fault_set(self, server: str) -> FaultSet:
        found = self.faults.get(server)
        if found is None:
            raise NotFound(f"no server named {server!r}", resource="server")
        return found

    def limiter(self, server: str) -> RateLimiter:
        found = self.limiters.get(server)
        if found is None:
            raise NotFound(f"no rate-limited server named {server!r}", resource="server")
        return found

    def camera(self, camera_id: str) -> Camera:
        found = self.world.cameras.get(camera_id)
        if found is None:
            raise NotFound(f"no camera {camera_id!r}", resource="camera")
        return found

    # Actions ---------------------------------------------------------------------------------
    def run_action(
        self, name: str, params: dict[str, Any], for_seconds: float | None = None
    ) -> dict[str, Any]:
        """Run an action now; with ``for_seconds`` its undo runs that many world seconds later.
        Returns the action's id (for :meth:`undo_action`) and when it will be undone."""
        action = check(name)
        try:
            parsed = action.params.model_validate(params)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(f"{name}: {where}: {first['msg']}", field=where or "params") from err
        if for_seconds is not None and for_seconds <= 0:
            raise InvalidInput("'for' must be a positive number of seconds", field="for")
        undo = action.run(self, parsed)
        action_id = next(self._action_ids)
        self.actions_run.append((self.world.env.now, action_id, name, parsed.model_dump()))
        if self.world.trace is not None:
            line = f"{self.world.env.now:.6f} scenario.action {name} {parsed.model_dump()!r}"
            self.world.trace.append(line)
        undo_at = None
        if undo is not None:
            self._undo[action_id] = undo
            if for_seconds is not None:
                undo_at = self._undo_at[action_id] = self.world.env.now + for_seconds
                self.world.env.process(self._undo_later(action_id, for_seconds))
        return {"id": action_id, "action": name, "params": parsed.model_dump(), "undo_at": undo_at}

    def _undo_later(self, action_id: int, seconds: float):
        yield self.world.env.timeout(seconds)
        self.undo_action(action_id)

    def undo_action(self, action_id: int) -> bool:
        """Undo a running action; ``False`` if it had no undo or was undone already."""
        undo = self._undo.pop(action_id, None)
        if undo is None:
            return False
        undo()
        self.actions_undone[action_id] = self.world.env.now
        return True

    def active_actions(self) -> list[int]:
        return sorted(self._undo)

    def action_log(self, since_id: int = 0) -> list[dict[str, Any]]:
        """The newest actions run (after ``since_id``), oldest first: when each started, when it is
        due to be undone, when it ended, and whether it is still active (undoable)."""
        rows = [a for a in self.actions_run[-ACTION_LOG:] if a[1] > since_id]
        return [
            {"id": i, "action": name, "params": params, "at": at, "undo_at": self._undo_at.get(i),
             "ended_at": self.actions_undone.get(i), "active": i in self._undo}
            for at, i, name, params in rows
        ]  # fmt: skip

    def clear_faults(self) -> None:
        """Undo every active action, then clear what is left on the servers (faults, storms)."""
        for action_id in self.active_actions():
            self.undo_action(action_id)
        for fault_set in self.faults.values():
            fault_set.clear()
        for limiter in self.limiters.values():
            limiter.calm()

    # Client sleep on the world clock ---------------------------------------------------------
    async def sleep_world(self, seconds: float) -> ClockState:
        """A scripted client's pause on the world clock. In step mode it moves time itself (up to
        :attr:`stop_at`, where a scenario run holds the client until it ends); in realtime mode it
        waits on the clock."""
        if seconds < 0:
            raise InvalidInput("cannot sleep a negative duration", field="seconds")
        if self.clock.mode is ClockMode.STEP:
            target = self.world.env.now + seconds
            if self.stop_at is not None and target >= self.stop_at:
                if self.stop_at > self.world.env.now:
                    self.clock.run_to(self.stop_at)
                self.stopped.set()
                await asyncio.Event().wait()  # held until the run ends and the client is stopped
            self.clock.run_to(target)
            if self.settle is not None:
                await self.settle()
        else:
            await self.clock.sleep(seconds)
        return self.clock.state()

    # What the console reads of the fleet -----------------------------------------------------
    def gateway(self, camera_id: str) -> GatewayBackend:
        found = self.gateways.get(camera_id)
        if found is None:
            raise NotFound(f"no camera {camera_id!r}", resource="camera")
        return found

    def camera_ids(self) -> list[str]:
        return list(self.world.cameras)

    def camera_state(self, camera_id: str) -> dict[str, Any]:
        """Power and services of a camera, as the world has them."""
        camera = self.camera(camera_id)
        services = {"camera": camera.ai.camera_service_running, "event_bus": camera.events.running}
        return {"id": camera_id, "powered": camera.powered, "down_until": camera.power.down_until,
                "uptime": camera.uptime() if camera.powered else None, "boot_count": camera.boot_count,
                "services": services}  # fmt: skip

    def sensors(self, page: int, limit: int, points: int) -> tuple[list[Device], int, dict[str, Any]]:
        """A page of the automation server's devices, their total, and for each its metrics' last
        ``points`` values (a simulated sensor's from its signal at its last ticks, gaps as ``None``
        and spikes added; another device's latest values)."""
        listing = self.world.devices.list(page, limit, None, None)
        series: dict[str, Any] = {}
        by_fleet: dict[int, tuple[SensorFleet, list[str]]] = {}
        for device in listing.devices:
            fleet = self.world.sensor_of.get(device.device_id) if device.simulated else None
            if fleet is not None:
                by_fleet.setdefault(id(fleet), (fleet, []))[1].append(device.device_id)
            else:
                current = self.world.devices.current(device.device_id)
                values = {m.name: [m.value] for m in current.metrics if m.value is not None}
                series[device.device_id] = {"times": [self.world.env.now], "metrics": values}
        for fleet, ids in by_fleet.values():
            times, values = fleet.recent(ids, self.world.env.now, min(max(points, 1), MAX_POINTS))
            series.update({d: {"times": times, "metrics": values[d]} for d in ids})
        return list(listing.devices), listing.total, series


class RunnerParts(NamedTuple):
    """What a live run takes from the scenario runner and its report: ``schedule`` (the timeline on
    the world clock; returns the recorder of world events), ``result`` (``RunResult``), ``trace``
    (``trace_of``) and ``html`` (``html_report``). twin.control cannot import them (the runner
    imports the composition root, which imports this module): ``twin run`` hands them in."""

    schedule: Callable[..., Any]
    result: Callable[..., Any]
    trace: Callable[..., list[str]]
    html: Callable[[Any], str]


@dataclasses.dataclass
class LiveRun:
    scenario: Scenario
    source: str
    env: object
    """The world's environment when the run started: a reset or restore ends the run."""
    seen: float
    """The latest sim time the run saw in its world."""
    journal_seq: int
    first_action: int
    stop_at: float
    mode: str
    drive: bool
    wall0: float
    recorder: Any = None
    state: str = "running"
    errors: list[str] = dataclasses.field(default_factory=list)
    result: Any = None
    task: asyncio.Task | None = None


class LiveScenarios:
    """Scenarios run on this live world (from the console). A run rebuilds the world from the
    scenario (seed, fleet, epoch; its cameras must be the ones served here), clears faults, puts the
    timeline on the world clock, and judges the expectations on what has happened so far (whatever
    used the servers meanwhile, e.g. a client under test pointed at this twin) each time it is read.
    In step mode the run moves the clock in :data:`RUN_SLICES` paced slices unless told not to
    drive it; in realtime the clock does. A paused clock holds it; at its stop time it ends (a
    realtime clock is paused there) and its verdicts are final."""

    def __init__(self, control: TwinControl, directory: Path) -> None:
        self.control = control
        self.directory = directory
        self.parts: RunnerParts | None = None
        self.loaded: Scenario | None = None
        self.source = ""
        self.run: LiveRun | None = None

    def library(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.directory.glob("*.yaml")):
            try:
                s = parse_scenario(path.read_text(), path.name)
            except (ScenarioError, OSError) as err:
                out.append({"name": path.stem, "error": str(err)})
                continue
            out.append({"name": path.stem, "title": s.name, "description": s.description.strip(),
                        "stop_at": s.stop.at, "cameras": len(s.world_config().camera_specs()),
                        "sensors": sum(g.count for g in s.fleet.sensors)})  # fmt: skip
        return out

    def load(self, name: str | None = None, text: str | None = None, filename: str = "upload") -> Scenario:
        """Load the library's ``name`` or an uploaded ``text``; ``InvalidInput`` names file, line and
        key of what does not validate."""
        if (name is None) == (text is None):
            raise InvalidInput("give exactly one of 'name' (a library scenario) and 'yaml'", field="name")
        if name is not None:
            path = self.directory / f"{name}.yaml"
            if not SCENARIO_NAME.match(name) or not path.is_file():
                raise NotFound(f"no scenario {name!r} in the library", resource="scenario")
            text, filename = path.read_text(), path.name
        assert text is not None
        if len(text) > MAX_SCENARIO_CHARS:
            raise InvalidInput(f"a scenario is at most {MAX_SCENARIO_CHARS} characters", field="yaml")
        try:
            scenario = parse_scenario(text, filename)
        except ScenarioError as err:
            raise InvalidInput(str(err), field="yaml") from err
        if self.run is not None and self.run.state == "running":
            raise Conflict("a scenario is running: stop it first", resource="scenario")
        self.loaded, self.source = scenario, filename
        return scenario

    def start(self, mode: str | None = None, speed: float | None = None, drive: bool = True) -> None:
        c = self.control
        if self.parts is None:
            raise Conflict("this twin runs no scenarios from its control plane", resource="scenario")
        if self.loaded is None:
            raise Conflict("no scenario loaded", resource="scenario")
        if self.run is not None and self.run.state == "running":
            raise Conflict("a scenario is running already", resource="scenario")
        scenario = self.loaded
        config = scenario.world_config(wall_now=time.time())
        wanted, served = [cid for cid, _ in config.camera_specs()], c.camera_ids()
        if wanted != served:
            message = f"{scenario.name} needs cameras {wanted}, this twin serves {served}"
            raise Conflict(message, resource="scenario")
        c.clear_faults()
        c.world.reset(config)
        c.clock.rebased()
        c.clock.set_mode(ClockMode(mode or scenario.clock.mode))
        c.clock.set_speed(speed or scenario.clock.speed)
        c.clock.resume()
        run = LiveRun(
            scenario=scenario,
            source=self.source,
            env=c.world.env,
            seen=0.0,
            journal_seq=c.journal.last_seq,
            first_action=c.actions_run[-1][1] if c.actions_run else 0,
            stop_at=scenario.stop.at,
            mode=c.clock.mode.value,
            drive=drive,
            wall0=time.monotonic(),
        )
        run.recorder = self.parts.schedule(scenario, c, run.errors)
        self.run = run
        run.task = asyncio.get_running_loop().create_task(self._drive(run), name="console-scenario")

    def stop(self) -> None:
        if self.run is None or self.run.state != "running":
            raise Conflict("no scenario is running", resource="scenario")
        self._end(self.run, "stopped")

    def interrupt(self, reason: str) -> None:
        """End a run whose world is about to be rebuilt (a reset or restore), judged until now."""
        if self.run is not None and self.run.state == "running":
            self.run.errors.append(reason)
            self._end(self.run, "aborted")

    async def _drive(self, run: LiveRun) -> None:
        clock, world = self.control.clock, self.control.world
        try:
            while run.state == "running":
                if world.env is not run.env:  # rebuilt without telling the run
                    self.interrupt("the world was rebuilt during the run")
                    return
                now = run.seen = world.env.now
                if now >= run.stop_at:
                    self._end(run, "finished")
                    return
                if clock.mode is ClockMode.STEP:
                    if run.drive and not clock.paused:
                        clock.run_to(min(run.stop_at, now + run.stop_at / RUN_SLICES))
                    await asyncio.sleep(RUN_PACE_S)
                elif not clock.paused and now + clock.speed * RUN_POLL_S >= run.stop_at:
                    clock.pause()
                    clock.run_to(run.stop_at)
                else:
                    await asyncio.sleep(RUN_POLL_S)
        except Exception as err:  # never leave a run hanging as "running"
            log.exception("twin: console scenario run failed")
            run.errors.append(f"the run failed: {err}")
            self._end(run, "aborted")

    def _end(self, run: LiveRun, state: str) -> None:
        run.result = self._result(run)
        run.state = state
        run.recorder.close()
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()

    def _result(self, run: LiveRun) -> Any:
        """The run so far as the runner's ``RunResult`` (verdicts judged on it)."""
        c = self.control
        if c.world.env is run.env:
            run.seen = c.world.env.now
        end = min(run.seen, run.stop_at)
        actions = [a for a in c.actions_run if a[1] > run.first_action]
        journal = c.journal.select(since=run.journal_seq, limit=len(c.journal) or 1)
        record = RunRecord(
            journal=[e for e in journal if e.at <= end],
            events=list(run.recorder.events),
            end=end,
            actions=[(t, name, params) for t, _, name, params in actions],
        )
        assert self.parts is not None
        return self.parts.result(
            scenario=run.scenario,
            source=Path(run.source),
            verdicts=judge_all(run.scenario.expectations, record),
            record=record,
            trace=self.parts.trace(record, actions),
            errors=list(run.errors),
            wall_s=time.monotonic() - run.wall0,
            mode=run.mode,
            fault_windows=[(t, c.actions_undone.get(i), name) for t, i, name, _ in actions],
            events_published=c.world.events_emitted,
        )

    def current(self) -> Any:
        """The run's result: final once it ended, else judged on what has happened so far."""
        if self.run is None:
            raise NotFound("no scenario has run", resource="run")
        return self.run.result if self.run.state != "running" else self._result(self.run)

    def report(self) -> str:
        result = self.current()
        assert self.parts is not None  # a run took place
        return self.parts.html(result)
