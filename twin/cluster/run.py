"""A scenario run on a sharded world (``twin scenario run --shards N``): one verdict.

The shards hold the world; each puts on its clock the timeline steps that act on what it holds, so
timed faults need no message between shards. The coordinator serves the control plane, moves the
clock (a barrier per slice in step mode, one anchor in realtime), starts the client with every
shard's addresses, and at the end merges the shards' journals, events and actions
(:mod:`twin.cluster.merge`) and judges the scenario's expectations on them, as a one-process run
judges its own. A shard whose process dies ends the run, which fails naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from hardware.ports.types import ClockMode
from twin import listeners as http
from twin.cluster.control import ClusterClock, ClusterControl, control_app
from twin.cluster.coordinator import Coordinator, ShardLost
from twin.cluster.merge import merged_events, merged_journal
from twin.cluster.plan import AUTOMATION_SHARD, ShardSpec, split
from twin.cluster.shard import ShardRecord, event_owner, step_owner
from twin.scenario.client import finish_client, start_client
from twin.scenario.expectations import RunRecord
from twin.scenario.model import Scenario, load_scenario
from twin.scenario.runner import (
    NO_CLIENT_SLICES,
    POLL_WALL_S,
    RunOptions,
    RunResult,
    judge,
    pacing,
    runner_settings,
    trace_of,
)
from twin.scenario.source import ScenarioError
from twin.settings import AUTOMATION, Settings

CHECK_WALL_S = 0.25
"""How often (wall seconds) a realtime run looks for a shard that is gone."""


def owners_of(specs: tuple[ShardSpec, ...]) -> dict[str, str]:
    """The shard holding each member: the automation server's, and each camera's."""
    return {AUTOMATION: AUTOMATION_SHARD} | {c: spec.name for spec in specs for c in spec.slice.cameras}


def plan(source: Path, settings: Settings, scenario: Scenario, shards: int) -> tuple[ShardSpec, ...]:
    """Split the scenario's world; :class:`ScenarioError` for what a split world cannot run."""
    from twin.serve import world_config

    if scenario.real_names():
        raise ScenarioError(f"{source}: a scenario with real members runs in one process (drop --shards)")
    config, _, _ = world_config(settings, scenario)
    specs = split(config, shards, publishing=settings.publish_fleet is not None)
    owners = owners_of(specs)
    for n, step in enumerate(scenario.timeline, 1):
        if step.after is not None and step_owner(step, owners) is None:
            raise ScenarioError(
                f"{source}: timeline step {n} ({step.do}) changes the clock after an event: on shards "
                "a clock step needs 'at' (or run in one process)"
            )
    return specs


async def run(source: Path, opts: RunOptions, shards: int, cluster: str | None = None) -> RunResult:
    scenario = load_scenario(source)
    opts = pacing(scenario, opts)
    settings = runner_settings(source.resolve(), opts, scenario.servers.mqtt)
    specs = plan(source, settings, scenario, shards)
    step_mode = bool(opts.step) or (opts.speed is None and scenario.clock.mode == "step")
    speed = opts.speed or scenario.clock.speed
    coordinator = Coordinator(settings, specs, owners_of(specs), address=cluster)
    coordinator.start()  # Ray wants its first call on the main thread
    clock = ClusterClock(coordinator, ClockMode.STEP, speed, coordinator.info[AUTOMATION_SHARD]["epoch"])
    control = ClusterControl(coordinator, clock, scenario.seed)
    stop_at = scenario.stop.at if opts.stop_at is None else min(opts.stop_at, scenario.stop.at)
    control.stop_at = stop_at if step_mode else None
    errors: list[str] = []
    wall0 = time.monotonic()
    client_exit, client_stopped, log_text, records = None, False, "", []
    with tempfile.TemporaryDirectory(prefix="twin-run-") as tmp:
        listener = await _serve_control(control, coordinator, settings)
        proc = None
        steps = CoordinatorSteps(scenario, control, errors)
        try:
            if not step_mode:
                control.set_mode(ClockMode.REALTIME)
            if opts.client:
                env = {**os.environ, **client_env(coordinator, listener.url, scenario)}
                env["TWIN_SCENARIO"] = str(source)
                proc = await (opts.launch or start_client)(opts.client, env, Path(tmp) / "client.log")
            waiter = asyncio.ensure_future(proc.wait()) if proc is not None else None
            await _drive(coordinator, control, clock, scenario, waiter, step_mode, stop_at, errors, wall0,
                         steps)  # fmt: skip
            if not step_mode:  # the world stops where the run ended, on every shard
                control.pause()
        except ShardLost as lost:
            errors.append(str(lost))
        finally:
            end = clock.sim_now()
            if proc is not None:
                client_stopped = proc.returncode is None
                client_exit = await finish_client(proc)
            control.released.set()
            await http.close_all([listener])
            with contextlib.suppress(ShardLost):
                records = await asyncio.to_thread(coordinator.records)
            watched = _watched(coordinator, end) if records else {}
            await asyncio.to_thread(coordinator.shutdown)
        if (log := Path(tmp) / "client.log").exists():
            log_text = log.read_text(errors="replace")
    return _result(scenario, source, opts, records, errors, clock, end, client_exit, client_stopped,
                   log_text, wall0, watched, step_mode)  # fmt: skip


async def _drive(coordinator, control, clock, scenario, waiter, step_mode, stop_at, errors, wall0, steps):
    slice_s = stop_at / NO_CLIENT_SLICES
    last_check = 0.0
    while True:
        if waiter is not None and waiter.done() and scenario.stop.on_client_exit:
            return
        if clock.sim_now() >= stop_at or control.stopped.is_set():
            return
        if time.monotonic() - wall0 > scenario.stop.wall_timeout:
            errors.append(f"abandoned after {scenario.stop.wall_timeout:g} wall seconds")
            return
        if step_mode and (waiter is None or waiter.done()):
            await asyncio.to_thread(clock.run_to, min(stop_at, clock.sim_time + slice_s))
            continue
        if step_mode:
            times = coordinator.times()
            if any(t.waiting for t in times):
                nxt = min(t.next_event for t in times)
                if nxt <= stop_at:
                    await asyncio.to_thread(clock.run_to, max(nxt, clock.sim_time))
        steps.tick()
        if time.monotonic() - last_check > CHECK_WALL_S:
            coordinator.check()
            last_check = time.monotonic()
        await asyncio.sleep(POLL_WALL_S if step_mode else 0.02)


async def _serve_control(
    control: ClusterControl, coordinator: Coordinator, settings: Settings
) -> http.Listener:
    from twin import http_limits as limits

    app, _ = control_app(control, coordinator, settings)  # on loopback: no token
    server = http.server(app, settings.control_host, settings.control_port, None, limits.CONTROL)
    listener = http.Listener("control", server)
    await http.open_all([listener])
    return listener


def client_env(coordinator: Coordinator, control_url: str, scenario: Scenario) -> dict[str, str]:
    """The servers' addresses for the client, wherever their shard runs."""
    urls = {name: url for info in coordinator.info.values() for name, url in info["urls"].items()}
    cams = sorted(name.split("/")[0] for name in urls if name.endswith("/http"))
    env = {
        "TWIN_AUTOMATION_URL": urls[AUTOMATION],
        "TWIN_CONTROL_URL": control_url,
        "TWIN_GATEWAY_URLS": " ".join(f"{c}={urls[c + '/http']}" for c in cams),
        "TWIN_SEED": str(scenario.seed),
        "TWIN_CLOCK_MODE": "step" if coordinator.anchor is None else "realtime",
    }
    if cams:
        env["TWIN_GATEWAY_URL"] = urls[cams[0] + "/http"]
    if mqtt := coordinator.info[AUTOMATION_SHARD].get("mqtt"):
        env["TWIN_MQTT_URL"] = mqtt
    return env


class CoordinatorSteps:
    """What of a scenario's timeline the coordinator does: its clock steps (``at``), and handing
    the events that start another shard's ``after`` steps over, after each barrier and, in
    realtime, at each :meth:`tick`."""

    def __init__(self, scenario: Scenario, control: ClusterControl, errors: list[str]) -> None:
        self.scenario, self.control, self.errors = scenario, control, errors
        timed = [s for s in scenario.timeline if s.at is not None and step_owner(s, {}) is None]
        self.clock_steps = sorted(timed, key=lambda s: s.at or 0.0)
        self.relaying = relays(scenario, control.coordinator.owners)
        if self.relaying:
            control.clock.after_barrier = self.relay

    def relay(self) -> None:
        relay(self.control.coordinator, self.scenario)

    def tick(self) -> None:
        clock = self.control.clock
        while self.clock_steps and (self.clock_steps[0].at or 0.0) <= clock.sim_now():
            step = self.clock_steps.pop(0)
            try:
                self.control.run_action(step.do, step.params, step.for_)
            except Exception as err:  # a step that fails is reported, the timeline goes on
                self.errors.append(f"t={clock.sim_now():g} {step.do}: {getattr(err, 'message', err)}")
        if self.relaying and clock.mode is ClockMode.REALTIME:  # no barrier: hand them over now
            self.relay()


def relays(scenario: Scenario, owners: dict[str, str]) -> bool:
    """Whether an ``after`` step may be started by an event on another shard than its own."""
    return any(
        s.after is not None and event_owner(s.after.source, owners) != step_owner(s, owners)
        for s in scenario.timeline
    )


def relay(coordinator: Coordinator, scenario: Scenario) -> None:
    """Hand each shard's events that start another shard's ``after`` steps to that shard, in
    (sim time, shard) order: they arrive at the barrier after the event, and a step whose delay
    has not passed by then runs on time."""
    seen = coordinator.broadcast("outbox")
    for at, _, index in sorted((at, shard, i) for shard, box in seen.items() for at, i in box):
        coordinator.call(step_owner(scenario.timeline[index], coordinator.owners) or AUTOMATION_SHARD,
                         "deliver", index, at)  # fmt: skip


def _watched(coordinator: Coordinator, end: float) -> dict[str, Any]:
    with contextlib.suppress(ShardLost):
        return coordinator.call(AUTOMATION_SHARD, "watched", end)
    return {}


def merged_record(
    records: list[ShardRecord], end: float, client_exit: int | None, stopped: bool
) -> RunRecord:
    shard0 = next((r for r in records if r.name == AUTOMATION_SHARD), None)
    actions = [(t, name, params) for r in records for t, _, name, params in r.actions]
    actions.sort(key=lambda a: (a[0], a[1], repr(a[2])))
    return RunRecord(
        journal=merged_journal(r.journal for r in records),
        events=merged_events(r.events for r in records),
        end=end,
        client_exit=client_exit,
        actions=actions,
        mqtt=shard0.mqtt if shard0 else [],
        broker_outages=shard0.broker_outages if shard0 else [],
        client_stopped=stopped,
    )


def _result(scenario, source, opts, records, errors, clock, end, client_exit, client_stopped, log_text,
            wall0, watched, step_mode) -> RunResult:  # fmt: skip
    record = merged_record(records, end, client_exit, client_stopped)
    runs = sorted(
        (t, r.name, i, name, params, r.undone.get(i)) for r in records for t, i, name, params in r.actions
    )
    numbered = [(t, n, name, params) for n, (t, _, _, name, params, _) in enumerate(runs, 1)]
    verdicts, judge_s, client_verdict, said = judge(scenario, record, opts, step_mode, scenario.stop.at)
    return RunResult(
        scenario=scenario,
        source=source,
        verdicts=verdicts,
        record=record,
        trace=trace_of(record, numbered),
        errors=errors + [e for r in records for e in r.errors],
        wall_s=time.monotonic() - wall0,
        mode="step" if step_mode else "realtime",
        client_output=log_text,
        fault_windows=[(t, undone, name) for t, _, _, name, _, undone in runs],
        watched=watched,
        events_published=sum(r.events_emitted for r in records),
        client_verdict=client_verdict,
        client_command=opts.client,
        notices=said,
        speed=clock.speed,
        judge_s=judge_s,
    )
