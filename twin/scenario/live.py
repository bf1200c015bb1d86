"""Scenarios run on a live twin, for its console: load one of the library or an uploaded file, run it
on the world the servers already serve, and judge its expectations on what has happened so far.

Unlike :func:`twin.scenario.runner.run`, which builds a world and servers of its own and launches the
client under test, a live run rebuilds the running world from the scenario and lets whatever uses
the servers meanwhile (a client pointed at this twin, a person with curl) be what is judged. It
uses the runner's own pieces: the timeline on the world clock (:func:`~twin.scenario.runner.schedule`),
the result and trace, and the HTML report. ``twin run`` sets one on the control object.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import Conflict, InvalidInput, NotFound
from hardware.ports.types import ClockMode
from twin.scenario.expectations import RunRecord, judge_all
from twin.scenario.files import FileRoots
from twin.scenario.model import Scenario, ScenarioError, parse_scenario
from twin.scenario.report import html_report
from twin.scenario.runner import RunResult, schedule, trace_of, watched_series
from twin.settings import DEFAULT_SCENARIO, in_words

if TYPE_CHECKING:
    from twin.control import TwinControl

log = logging.getLogger("twin")

RUN_SLICES = 200
"""A run in step mode moves the clock in this many slices of its length..."""
RUN_PACE_S = 0.02
"""...each followed by this much wall time, so that it can be watched (about 4 s in all)."""
RUN_POLL_S = 0.05
MAX_SCENARIO_CHARS = 1_000_000
SCENARIO_NAME = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


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
    result: RunResult | None = None
    task: asyncio.Task | None = None


class LiveScenarios:
    """Scenarios run on this live world (from the console). A run rebuilds the world from the
    scenario (seed, fleet, epoch; its cameras must be the ones served here), clears faults, puts the
    timeline on the world clock, and judges the expectations on what has happened so far (whatever
    used the servers meanwhile, e.g. a client under test pointed at this twin) each time it is read.
    In step mode the run moves the clock in :data:`RUN_SLICES` paced slices unless told not to
    drive it; in realtime the clock does. A paused clock holds it; at its stop time it ends (a
    realtime clock is paused there) and its verdicts are final."""

    def __init__(
        self, control: TwinControl, directory: Path = DEFAULT_SCENARIO.parent, allowed: tuple[Path, ...] = ()
    ) -> None:
        self.control = control
        self.directory = directory
        self.files = FileRoots.of(directory, *allowed)
        """A loaded scenario's fixtures and videos: in the library's directory or an allowed one."""
        self.loaded: Scenario | None = None
        self.source = ""
        self.run: LiveRun | None = None

    def library(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for path in sorted(self.directory.glob("*.yaml")):
            try:
                s = parse_scenario(path.read_text(), path.name, files=self.files)
            except (ScenarioError, OSError) as err:
                out.append({"name": path.stem, "error": str(err)})
                continue
            out.append(
                {
                    "name": path.stem,
                    "title": s.name,
                    "description": s.description.strip(),
                    "stop_at": s.stop.at,
                    "cameras": len(s.world_config().camera_specs()),
                    "sensors": sum(g.count for g in s.fleet.sensors),
                }
            )
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
            scenario = parse_scenario(text, filename, files=self.files)
        except ScenarioError as err:
            raise InvalidInput(str(err), field="yaml") from err
        if self.run is not None and self.run.state == "running":
            raise Conflict("a scenario is running: stop it first", resource="scenario")
        self.loaded, self.source = scenario, filename
        return scenario

    def start(self, mode: str | None = None, speed: float | None = None, drive: bool = True) -> None:
        c = self.control
        if self.loaded is None:
            raise Conflict("no scenario loaded", resource="scenario")
        if self.run is not None and self.run.state == "running":
            raise Conflict("a scenario is running already", resource="scenario")
        scenario = self.loaded
        real = in_words(scenario.real_names())
        if real:  # which members are real was settled when this twin started
            raise Conflict(
                f"{scenario.name} has real members ({real}): run it with twin scenario run",
                resource="scenario",
            )
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
        run.recorder = schedule(scenario, c, run.errors)
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
        run.result = self._result(run, watched=True)
        run.state = state
        run.recorder.close()
        if run.task is not None and run.task is not asyncio.current_task():
            run.task.cancel()

    def _result(self, run: LiveRun, watched: bool = False) -> RunResult:
        """The run so far as the runner's result (verdicts judged on it); ``watched``: with the
        scenario's watched metrics sampled for the report's plots."""
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
        return RunResult(
            scenario=run.scenario,
            source=Path(run.source),
            verdicts=judge_all(run.scenario.expectations, record),
            record=record,
            trace=trace_of(record, actions),
            errors=list(run.errors),
            wall_s=time.monotonic() - run.wall0,
            mode=run.mode,
            fault_windows=[(t, c.actions_undone.get(i), name) for t, i, name, _ in actions],
            watched=watched_series(run.scenario, c.world, end) if watched and c.world.env is run.env else {},
            events_published=c.world.events_emitted,
        )

    def current(self, watched: bool = False) -> RunResult:
        """The run's result: final once it ended, else judged on what has happened so far."""
        if self.run is None:
            raise NotFound("no scenario has run", resource="run")
        if self.run.result is not None:
            return self.run.result
        return self._result(self.run, watched)

    def report(self) -> str:
        """The HTML report ``twin scenario run --report`` writes, of the run so far."""
        return html_report(self.current(watched=True))
