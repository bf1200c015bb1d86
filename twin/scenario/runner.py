"""The scenario runner: world and servers up, the timeline on the world clock, the client under test
as a subprocess, then verdicts.

The client gets the servers' addresses in environment variables (``TWIN_AUTOMATION_URL``,
``TWIN_GATEWAY_URL``, ``TWIN_GATEWAY_URLS``, ``TWIN_CONTROL_URL``, ``TWIN_MQTT_URL``; the whole set is
:data:`twin.scenario.notices.CLIENT_VARIABLES`). With a client the run keeps the file's clock:
every library file is realtime at a speed factor of its own, so a client that knows nothing of the
twin (it sleeps on its own clock) meets the timeline. ``--step`` is for a client that paces itself:
time then moves only when it pauses through the control plane (``POST /clock/sleep``) or when one
of its requests waits on the world clock (injected latency: the runner then steps to the next world
event), and it gets the same trace on every run of the same file and seed; a step-mode run whose
world stood still while timeline steps were due says so (:func:`twin.scenario.notices.stalled`).
Without a client the run is in step mode unless told otherwise, and runs the timeline to the stop
time as fast as the CPU allows; nothing is exercised then, so every expectation is inconclusive.

A scenario's real members (a camera group's ``real``, ``servers.automation.real``) are served through
the twin's layers by the composition root; they keep wall time, so ``--step`` and speeds other than
1 are refused for such a run, and a real member that refuses the credential the scenario names for
it stops the run before the client starts (:class:`RealMemberRefused`).

A run's :attr:`RunResult.outcome` is ``failed`` when an expectation failed, the client's exit status
is not the one the scenario expects (``client.expect_exit``) or a timeline step failed;
``inconclusive`` when nothing failed but an expectation the scenario requires was not exercised,
or the run has a notice (:mod:`twin.scenario.notices`);
``passed`` otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hardware.ports.types import ClockMode
from twin.camera.wing import cameras_of
from twin.scenario import notices
from twin.scenario.broker_switch import BrokerSwitch
from twin.scenario.client import finish_client, start_client
from twin.scenario.expectations import Outcome, RunRecord, Verdict, judge_all
from twin.scenario.model import Scenario, load_scenario
from twin.scenario.source import ScenarioError
from twin.scenario.timeline import attach, schedule
from twin.sensors import sensors_of
from twin.settings import LOOPBACK, Settings, in_words, wall_clock_problem

__all__ = ["RealMemberRefused", "RunOptions", "RunResult", "attach", "run", "schedule"]

log = logging.getLogger("twin")

NO_CLIENT_SLICES = 200
NO_BROKER = "mqtt://127.0.0.1:1"
"""Where a run without MQTT points the bridge, which is then never started."""
POLL_WALL_S = 0.002
STALL_WALL_S = 30.0
"""A step-mode run whose world clock has not moved for this many wall seconds ends: its client does
not pace itself (when timeline steps were due, :func:`twin.scenario.notices.stalled` says so)."""


@dataclass
class RunOptions:
    speed: float | None = None
    step: bool | None = None
    client: str | None = None
    progress: Callable[[dict[str, Any]], None] | None = None
    stop_at: float | None = None
    """Stop earlier than the file says (fast runs of the library in the test suite)."""
    launch: Callable[[str, dict[str, str], Path], Awaitable[Any]] | None = None
    """Starts the ``client`` in place of a subprocess (the pytest plugin's in-process client):
    called as :func:`start_client` is; returns what has a subprocess's ``wait``, ``returncode``,
    ``terminate`` and ``kill``."""
    stall_wall_s: float | None = None
    """Step mode: end the run once the world clock stood still this long (default :data:`STALL_WALL_S`)."""


class RealMemberRefused(OSError):
    """A real member answered the twin's start-up check but refused the credential it was given."""


@dataclass
class RunResult:
    scenario: Scenario
    source: Path
    verdicts: list[Verdict]
    """One per expectation, in the file's order."""
    record: RunRecord
    trace: list[str]
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    mode: str = "step"
    client_output: str = ""
    fault_windows: list[tuple[float, float | None, str]] = field(default_factory=list)
    watched: dict[str, tuple[list[float], list[float]]] = field(default_factory=dict)
    events_published: int = 0
    client_verdict: Verdict | None = None
    """The client's exit status against the scenario's ``client.expect_exit``; ``None``: no client."""
    client_command: str | None = None
    notices: list[str] = field(default_factory=list)
    """What went wrong with the run itself (:mod:`twin.scenario.notices`): never a pass."""
    speed: float = 1.0
    judge_s: list[float] = field(default_factory=list)
    """Wall seconds spent judging each expectation, in the file's order."""

    @property
    def outcome(self) -> Outcome:
        client_failed = self.client_verdict is not None and not self.client_verdict.passed
        if self.errors or client_failed or self.failed:
            return Outcome.FAILED
        if self.inconclusive or self.notices:
            return Outcome.INCONCLUSIVE
        return Outcome.PASSED

    @property
    def passed(self) -> bool:
        return self.outcome is Outcome.PASSED

    @property
    def failed(self) -> list[Verdict]:
        """The expectations that failed."""
        return [v for v in self.verdicts if v.outcome is Outcome.FAILED]

    @property
    def inconclusive(self) -> list[Verdict]:
        """The expectations nothing exercised that the scenario does not let the run do without."""
        return [v for v in self.verdicts if v.inconclusive and not v.optional]


def runner_settings(source: Path, opts: RunOptions, mqtt: bool = True) -> Settings:
    """Every server on a free loopback port; the scenario's clock unless overridden."""
    return Settings(
        mqtt_url=None if mqtt else NO_BROKER,
        scenario=source,
        step=bool(opts.step),
        speed=opts.speed,
        log_level="warning",
        **LOOPBACK,
    )


def client_env(running) -> dict[str, str]:
    """The servers' addresses for the client (every variable: :data:`notices.CLIENT_VARIABLES`)."""
    cams = list(cameras_of(running.twin.world))
    env = {
        "TWIN_AUTOMATION_URL": running.url("automation"),
        "TWIN_CONTROL_URL": running.url("control"),
        "TWIN_GATEWAY_URLS": " ".join(f"{c}={running.url(c + '/http')}" for c in cams),
        "TWIN_SEED": str(running.twin.world.seed),
        "TWIN_CLOCK_MODE": running.twin.clock.mode.value,
    }
    if cams:
        env["TWIN_GATEWAY_URL"] = running.url(cams[0] + "/http")
    if running.broker is not None:
        env["TWIN_MQTT_URL"] = f"mqtt://127.0.0.1:{running.broker.port}"
    return env


def pacing(scenario: Scenario, opts: RunOptions) -> RunOptions:
    """The run's clock: ``--step`` or ``--speed`` when given; else with a client the file's clock
    (realtime at its speed for every library file), and without one step mode, which runs the
    timeline as fast as the CPU allows (nothing is judged then; a file with real members keeps
    wall time, and its run ends once the members answered their start-up checks)."""
    if opts.step is not None or opts.speed is not None or opts.client is not None:
        return opts
    if scenario.real_names():
        return opts
    return replace(opts, step=True)


async def run(source: Path, opts: RunOptions | None = None) -> RunResult:
    """Run the scenario file ``source``; raises ``ScenarioError`` if it does not validate."""
    from twin.serve import build, start, stop  # the composition root, imported when a run starts

    scenario = load_scenario(source)
    opts = pacing(scenario, opts or RunOptions())
    real = in_words(scenario.real_names())
    if real and (problem := wall_clock_problem(real, bool(opts.step), opts.speed or 1.0)):
        raise ScenarioError(f"{source}: {problem}")
    twin = build(runner_settings(source, opts, scenario.servers.mqtt))
    world, clock, control, journal, bridge = twin.world, twin.clock, twin.control, twin.journal, twin.bridge
    assert journal is not None and bridge is not None  # build() makes both
    if not scenario.servers.mqtt:
        bridge.run = _no_bridge  # type: ignore[method-assign]
    if opts.speed is not None and opts.step is None:
        clock.set_mode(ClockMode.REALTIME)
    step_mode = clock.mode is ClockMode.STEP
    stop_at = scenario.stop.at if opts.stop_at is None else min(opts.stop_at, scenario.stop.at)
    if real and opts.client is None and opts.speed is None:
        stop_at = 0.0  # wall time and no client: nothing to see; the start-up checks of the members ran
    if step_mode:
        control.stop_at = stop_at
        control.released.clear()
    errors: list[str] = []
    recorder = schedule(scenario, control, errors)

    wall0 = time.monotonic()
    client_exit: int | None = None
    client_stopped = False
    log_text = ""
    with tempfile.TemporaryDirectory(prefix="twin-run-") as tmp:
        running = await start(twin, Path(tmp))
        if running.refused:
            await stop(running)
            recorder.close()
            raise RealMemberRefused("; ".join(running.refused))
        mqtt_log = running.broker.keep_sessions(journal.now) if running.broker is not None else None
        switch = control.broker = BrokerSwitch(running) if running.broker is not None else None
        control.settle = lambda: _listeners_settled(running)
        proc = None
        log_path = Path(tmp) / "client.log"
        try:
            if opts.client:
                env = {**os.environ, **client_env(running), "TWIN_SCENARIO": str(source)}
                proc = await (opts.launch or start_client)(opts.client, env, log_path)
            waiter = asyncio.ensure_future(proc.wait()) if proc is not None else None
            slice_s = stop_at / NO_CLIENT_SLICES
            still = (world.env.now, time.monotonic())
            while True:
                if waiter is not None and waiter.done() and scenario.stop.on_client_exit:
                    break
                if world.env.now >= stop_at or control.stopped.is_set():
                    break
                if time.monotonic() - wall0 > scenario.stop.wall_timeout:
                    errors.append(f"abandoned after {scenario.stop.wall_timeout:g} wall seconds")
                    break
                if step_mode and (proc is None or (waiter is not None and waiter.done())):
                    clock.run_to(min(stop_at, world.env.now + slice_s))
                    await asyncio.sleep(0)
                elif step_mode:
                    if clock.waiting and world.env.peek() <= stop_at:
                        clock.run_to(world.env.peek())
                    if world.env.now != still[0]:
                        still = (world.env.now, time.monotonic())
                    elif time.monotonic() - still[1] > (opts.stall_wall_s or STALL_WALL_S):
                        break  # the client does not pace itself (a notice says so if steps were due)
                    await asyncio.sleep(POLL_WALL_S)
                else:
                    await asyncio.sleep(0.02)
                if opts.progress is not None:
                    opts.progress(_progress(twin, stop_at, control))
        finally:
            if proc is not None:
                client_stopped = proc.returncode is None
                client_exit = await finish_client(proc)
            control.released.set()  # a sleep held at the stop answers now, not cancelled at shutdown
            if switch is not None:
                await switch.settle()
            await stop(running)
            recorder.close()
        if log_path.exists():
            log_text = log_path.read_text(errors="replace")
    record = RunRecord(
        journal=list(journal.entries),
        events=recorder.events,
        end=world.env.now,
        client_exit=client_exit,
        actions=[(t, name, params) for t, _, name, params in control.actions_run],
        mqtt=list(mqtt_log.sessions) if mqtt_log is not None else [],
        broker_outages=list(mqtt_log.outages) if mqtt_log is not None else [],
        client_stopped=client_stopped,
    )
    verdicts, judge_s, client_verdict, said = judge(scenario, record, opts, step_mode, stop_at)
    return RunResult(
        scenario=scenario,
        source=source,
        verdicts=verdicts,
        record=record,
        trace=trace_of(record, control.actions_run),
        errors=errors,
        wall_s=time.monotonic() - wall0,
        mode=clock.mode.value,
        client_output=log_text,
        fault_windows=[(t, control.actions_undone.get(i), name) for t, i, name, _ in control.actions_run],
        watched=watched_series(scenario, world, record.end),
        events_published=world.events_emitted,
        client_verdict=client_verdict,
        client_command=opts.client,
        notices=said,
        speed=clock.speed,
        judge_s=judge_s,
    )


def judge(
    scenario: Scenario, record: RunRecord, opts: RunOptions, step_mode: bool, stop_at: float
) -> tuple[list[Verdict], list[float], Verdict | None, list[str]]:
    """A run's verdicts (and the wall seconds each took), its client's, and its notices."""
    paced = step_mode and opts.client is not None
    client_verdict = scenario.client.judge(record)
    said = [
        notices.stalled(scenario, record.end, stop_at, bool(opts.step)) if paced else None,
        notices.unreached(scenario, record, client_verdict.passed if client_verdict else None),
    ]
    verdicts, judge_s = _judged(scenario, record)
    return verdicts, judge_s, client_verdict, [n for n in said if n]


def _judged(scenario: Scenario, record: RunRecord) -> tuple[list[Verdict], list[float]]:
    """Every expectation's verdict and the wall seconds its judging took."""
    if not record.client_ran:
        return judge_all(scenario.expectations, record), [0.0] * len(scenario.expectations)
    verdicts, times = [], []
    for exp in scenario.expectations:
        t0 = time.perf_counter()
        verdicts.append(exp.judge(record))
        times.append(time.perf_counter() - t0)
    return verdicts, times


SETTLE_WALL_S = 10.0


async def _listeners_settled(running) -> None:
    """Wait (at most ``SETTLE_WALL_S`` of wall time) until every camera's gateway listeners match
    its power: closed while it is down, serving once it is up."""

    def settled() -> bool:
        for camera_id, camera in cameras_of(running.twin.world).items():
            for name in (f"{camera_id}/http", f"{camera_id}/https"):
                listener = running.listeners.get(name)
                if listener is None:
                    continue
                task = listener.task
                serving = task is not None and not task.done() and listener.server.started
                if serving != camera.powered:
                    return False
        return True

    deadline = time.monotonic() + SETTLE_WALL_S
    while not settled() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def _no_bridge() -> None:
    await asyncio.Event().wait()


def _progress(twin, stop_at: float, control) -> dict[str, Any]:
    return {
        "sim": twin.world.env.now,
        "stop": stop_at,
        "events": twin.world.events_emitted,
        "requests": len(twin.journal),
        "faults": len(control.active_actions()),
    }


def trace_of(record: RunRecord, actions_run: list) -> list[str]:
    """The run's canonical trace: world events (telemetry excepted: it is a pure function of the
    seed), actions, then the journal. Same file, seed and client ⇒ the same lines."""
    lines = [ev.trace_line() for ev in record.events]
    lines += [f"{t:.6f} action #{i} {name} {params!r}" for t, i, name, params in actions_run]
    lines += [e.trace_line() for e in record.journal]
    return lines


def watched_series(scenario: Scenario, world, end: float) -> dict[str, tuple[list[float], list[float]]]:
    """The scenario's watched metrics (``watch``) sampled from their signals at 200 times from 0 to
    ``end``, for the report's plots: ``device.metric`` -> (times, values)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    points = 200
    for w in scenario.watch:
        fleet = sensors_of(world).by_device.get(w.device)
        if fleet is None or end <= 0:
            continue
        times = [end * i / (points - 1) for i in range(points)]
        values = []
        for t in times:
            values.append(float(fleet.values_of(w.device, t).get(w.metric, float("nan"))))
        out[f"{w.device}.{w.metric}"] = (times, values)
    return out


def progress_printer(stream=sys.stderr) -> Callable[[dict[str, Any]], None]:
    """A one-line live progress bar: sim time, events, requests, active faults."""
    last = [0.0]

    def show(p: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] < 0.1:
            return
        last[0] = now
        done = min(1.0, p["sim"] / p["stop"]) if p["stop"] else 1.0
        bar = "#" * int(done * 30)
        stream.write(
            f"\r[{bar:<30}] sim {p['sim']:.0f}/{p['stop']:.0f} s  events {p['events']}  "
            f"requests {p['requests']}  faults {p['faults']} "
        )
        stream.flush()

    return show
