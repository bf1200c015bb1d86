"""Agents in the world: schedules on the world clock, the simulated model, tools, validation."""

from __future__ import annotations

import pytest

from hardware.ports.agents import AgentResource, AgentSpec, Schedule
from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind
from hardware.ports.types import ClockMode
from twin.automation.agent_runs import call_tool
from twin.automation.chat_models import ToolCall
from twin.automation.crontab import CronExpression
from twin.automation.server import automation_of
from twin.clock import SimClock
from twin.fleet import WorldConfig
from twin.sensors import sensors_of
from twin.store import Store
from twin.wings import KINDS
from twin.world import World

HOUR = 3600


def spec(schedule: Schedule | None = None, prompt: str = "How is the room?", **kw) -> AgentSpec:
    values = {"execution_mode": "free", **kw}
    return AgentSpec("watcher", prompt, schedule or Schedule("interval", 600), **values)


def bound(device_id: str, command: str | None = None) -> tuple[AgentResource, ...]:
    res = [AgentResource("device", device_id, device_id)]
    if command:
        res.append(AgentResource("command", f"{device_id}:{command}", command))
    return tuple(res)


@pytest.fixture
def clock(world: World) -> SimClock:
    return SimClock(world, mode=ClockMode.STEP)


def test_a_ten_minute_schedule_runs_six_times_in_one_simulated_hour(world: World, clock: SimClock) -> None:
    agent = automation_of(world).agents.create_agent(spec())
    clock.advance(HOUR)
    runs = automation_of(world).agents.executions(agent.id)
    assert len(runs) == 6
    assert [r.timestamp - world.epoch for r in reversed(runs)] == [600, 1200, 1800, 2400, 3000, 3600]
    assert {r.status for r in runs} == {"completed"} and {r.trigger_type for r in runs} == {"schedule"}
    stats = automation_of(world).agents.get_agent(agent.id).stats
    assert (stats.total_executions, stats.successful_executions, stats.failed_executions) == (6, 6, 0)


def test_a_paused_agent_does_not_run_and_resumes_on_activation(world: World, clock: SimClock) -> None:
    agent = automation_of(world).agents.create_agent(spec())
    clock.advance(601)
    automation_of(world).agents.set_status(agent.id, "paused")
    clock.advance(HOUR)
    assert len(automation_of(world).agents.executions(agent.id)) == 1
    automation_of(world).agents.set_status(agent.id, "active")
    clock.advance(600)
    assert len(automation_of(world).agents.executions(agent.id)) == 2
    with pytest.raises(InvalidInput):
        automation_of(world).agents.set_status(agent.id, "Active")


def test_cron_schedule_fires_on_the_quarter_hours(world: World, clock: SimClock) -> None:
    agent = automation_of(world).agents.create_agent(spec(Schedule("cron", cron_expression="*/15 * * * *")))
    clock.advance(HOUR)
    stamps = sorted(r.timestamp for r in automation_of(world).agents.executions(agent.id))
    assert len(stamps) == 4 and all(t % 900 == 0 for t in stamps)


def test_cron_expressions_parse_and_refuse() -> None:
    noon = CronExpression.parse("0 12 * * mon-fri", "Asia/Shanghai")
    saturday_noon_utc = 1767355200.0  # 2026-01-02 12:00 UTC, a Friday: 20:00 in Shanghai
    nxt = noon.next_after(saturday_noon_utc)
    assert nxt == 1767585600.0  # Monday 2026-01-05 12:00 Shanghai = 04:00 UTC
    assert CronExpression.parse("30 */10 * * * *").next_after(0) == 30.0
    for bad in ("* * *", "61 * * * *", "* * * * * * * *", "*/0 * * * *"):
        with pytest.raises(ValueError):
            CronExpression.parse(bad)
    with pytest.raises(ValueError):
        CronExpression.parse("* * * * *", "Mars/Olympus")


def test_the_simulated_model_reads_bound_devices_and_sends_named_commands(
    world: World, clock: SimClock
) -> None:
    device = min(sensors_of(world).by_device)
    agent = automation_of(world).agents.create_agent(
        spec(prompt="Check the room and identify the sensor", resources=bound(device, "identify"))
    )
    run = automation_of(world).agents.execute(agent.id)
    assert run.status == "completed" and run.trigger_type == "manual"
    assert run.decision_process["data_collected"][0]["data"]["device_id"] == device
    actions = run.result["actions_executed"]
    assert actions == [
        {
            "action_type": "device_command",
            "device_id": device,
            "command": "identify",
            "params": {},
            "success": True,
        }
    ]
    assert any(" device.command_result " in line and "identify" in line for line in world.trace)
    assert device in run.decision_process["conclusion"]


def test_a_focused_agent_may_only_send_its_bound_commands(world: World) -> None:
    device = min(sensors_of(world).by_device)
    agent = automation_of(world).agents.create_agent(spec(resources=bound(device), execution_mode=None))
    doc = automation_of(world).agents.docs.get(agent.id)
    refused = call_tool(
        world, doc, ToolCall("send_device_command", {"device_id": device, "command": "reboot"})
    )
    assert "not bound" in refused["error"]


def test_executions_are_deterministic_for_a_seed(world_config: WorldConfig) -> None:
    def history() -> list[tuple]:
        w = World(world_config, kinds=KINDS)
        agent = automation_of(w).agents.create_agent(
            spec(resources=bound(min(sensors_of(w).by_device)), execution_mode="focused")
        )
        SimClock(w, mode=ClockMode.STEP).advance(HOUR)
        return [
            (r.id, r.duration_ms, r.decision_process["conclusion"])
            for r in automation_of(w).agents.executions(agent.id)
        ]

    first = history()
    assert len(first) == 6 and first == history()


def test_event_schedule_runs_once_per_second_with_matching_events(world: World, clock: SimClock) -> None:
    agent = automation_of(world).agents.create_agent(
        spec(Schedule("event", event_filter="camera.detections"))
    )
    clock.advance(5)
    assert automation_of(world).agents.executions(agent.id) == []
    world.emit(EventKind.CAMERA_DETECTIONS, "cam-01", count=2)
    world.emit(EventKind.CAMERA_DETECTIONS, "cam-01", count=3)
    clock.advance(2)
    runs = automation_of(world).agents.executions(agent.id)
    assert len(runs) == 1 and runs[0].trigger_type == "event"


def test_rules_trigger_active_agents_only(world: World) -> None:
    agent = automation_of(world).agents.create_agent(spec())
    run = automation_of(world).agents.trigger(agent.id, {"value": 31.5})
    assert run is not None and run.trigger_type == "rule"
    automation_of(world).agents.set_status(agent.id, "paused")
    assert automation_of(world).agents.trigger(agent.id) is None
    assert automation_of(world).agents.trigger("no-such-agent") is None


def test_schedules_survive_a_restart_on_the_same_store(world_config: WorldConfig) -> None:
    store = Store()
    first = World(world_config, store=store, kinds=KINDS)
    agent = automation_of(first).agents.create_agent(spec())
    second = World(world_config, store=store, kinds=KINDS)
    SimClock(second, mode=ClockMode.STEP).advance(600)
    assert len(automation_of(second).agents.executions(agent.id)) == 1


@pytest.mark.parametrize(
    ("changes", "resource"),
    [
        ({"schedule": Schedule("interval", 5)}, "validation"),
        ({"schedule": Schedule("interval")}, "validation"),
        ({"schedule": Schedule("cron")}, "validation"),
        ({"schedule": Schedule("cron", cron_expression="every day")}, None),
        ({"schedule": Schedule("weekly")}, None),
        ({"execution_mode": None}, None),
        ({"execution_mode": "focused"}, "validation"),
        ({"name": ""}, "validation"),
        ({"max_chain_depth": 31}, "validation"),
        ({"llm_backend_id": "missing"}, None),
    ],
)
def test_create_refuses_like_the_vendor(world: World, changes: dict, resource: str | None) -> None:
    import dataclasses

    with pytest.raises(InvalidInput) as info:
        automation_of(world).agents.create_agent(dataclasses.replace(spec(), **changes))
    assert info.value.resource == resource


def test_unknown_agents_and_executions(world: World) -> None:
    with pytest.raises(NotFound):
        automation_of(world).agents.get_agent("nope")
    agent = automation_of(world).agents.create_agent(spec())
    with pytest.raises(NotFound):
        automation_of(world).agents.get_execution(agent.id, "nope")
    automation_of(world).agents.delete_agent(agent.id)
    with pytest.raises(NotFound):
        automation_of(world).agents.executions(agent.id)


def test_a_restored_world_keeps_the_schedule_phase(world: World, clock: SimClock) -> None:
    agent = automation_of(world).agents.create_agent(spec())
    clock.advance(900)
    snap = world.snapshot()
    world.restore(snap)
    clock.rebased()
    clock.advance(300)
    stamps = [r.timestamp - world.epoch for r in automation_of(world).agents.executions(agent.id)]
    assert stamps == [1200, 600]
