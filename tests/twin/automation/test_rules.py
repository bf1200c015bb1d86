"""The rules engine over the world: every sample evaluated on the world clock, cooldown, for_duration,
schedules, actions; and the outbox's sim-time retry schedule. No HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind
from hardware.ports.rules import DeliveryResult
from twin.automation.delivery import RetryPolicy
from twin.automation.rule_spec import Cron, parse
from twin.automation.server import automation_of
from twin.serve import Twin
from twin.store import Store
from twin.wings import KINDS
from twin.world import World

SENSOR = "env_sensor-0001"
# humidity of SENSOR in the test scenario: 37.19 at t=0, falling by ~0.01 per 10 s sample; < 37.1 from t=80.
DRY = {
    "condition_type": "comparison",
    "source": f"device:{SENSOR}:humidity",
    "operator": "less_than",
    "threshold": 37.1,
}


def rule(**overrides) -> dict:
    return {
        "name": "dry",
        "condition": DRY,
        "actions": [{"type": "notify", "message": "humidity ${value}"}],
        **overrides,
    }


def kinds(twin: Twin, kind: EventKind) -> list[tuple[str, str]]:
    return [(line.split()[0], line) for line in twin.world.trace if f" {kind.value} " in line]


def test_rule_fires_on_the_first_sample_past_the_threshold(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(rule(cooldown=0))
    assert created.condition["operator"] == "<" and created.trigger["sources"] == [
        f"device:{SENSOR}:humidity"
    ]
    twin.clock.advance(70)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 0
    twin.clock.advance(10)
    fired = automation_of(twin.world).rules.get_rule(created.id)
    assert fired.trigger_count == 1 and fired.last_triggered == twin.world.now()
    page = automation_of(twin.world).messages.list_messages()
    assert page.total == 1
    msg = page.messages[0]
    assert (msg.category, msg.severity, msg.title, msg.source_type) == ("alert", "info", "dry", "rule")
    assert msg.message == "humidity 37.09" and msg.metadata["rule_id"] == created.id
    twin.clock.advance(30)  # cooldown 0: every further sample under the threshold fires again
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 4
    history = automation_of(twin.world).rules.rule_history(created.id)
    assert len(history) == 4 and history[0].triggered_at > history[-1].triggered_at
    assert history[0].actions_executed[0].startswith("notify:") and history[0].success


def test_cooldown_and_for_duration_are_milliseconds_of_world_time(twin: Twin) -> None:
    cooled = automation_of(twin.world).rules.create_rule(rule(name="cooled", cooldown=25_000))
    held = automation_of(twin.world).rules.create_rule(rule(name="held", cooldown=0, for_duration=20_000))
    twin.clock.advance(80)  # first true sample
    assert automation_of(twin.world).rules.get_rule(cooled.id).trigger_count == 1
    assert automation_of(twin.world).rules.get_rule(held.id).trigger_count == 0
    twin.clock.advance(20)  # t=100: held for 20 s; cooled is still in its 25 s cooldown
    assert automation_of(twin.world).rules.get_rule(held.id).trigger_count == 1
    assert automation_of(twin.world).rules.get_rule(cooled.id).trigger_count == 1
    twin.clock.advance(10)  # t=110: 30 s since the last firing
    assert automation_of(twin.world).rules.get_rule(cooled.id).trigger_count == 2


def test_rule_events_and_execute_action(twin: Twin) -> None:
    twin.world.trace = []
    created = automation_of(twin.world).rules.create_rule(
        rule(actions=[{"type": "execute", "target": SENSOR, "command": "reboot", "params": {"delay": 1}}])
    )
    twin.clock.advance(80)
    assert [line for _, line in kinds(twin, EventKind.RULE_TRIGGERED)]
    executed = [line for _, line in kinds(twin, EventKind.RULE_EXECUTED)]
    assert len(executed) == 1 and "success=True" in executed[0]
    commands = [line for _, line in kinds(twin, EventKind.DEVICE_COMMAND_RESULT)]
    assert len(commands) == 1 and "command='reboot'" in commands[0]
    evaluated = [line for _, line in kinds(twin, EventKind.RULE_EVALUATED)]
    assert len(evaluated) == 1 and "condition_met=True" in evaluated[0]
    assert automation_of(twin.world).rules.rule_history(created.id)[0].actions_executed == (
        f"execute:{SENSOR}:reboot",
    )


def test_pushed_metrics_are_evaluated_too(twin: Twin) -> None:
    automation_of(twin.world).devices.create("env_sensor", "Lab", "webhook", {}, "lab-1", None)
    source = {"condition_type": "range", "source": "device:lab-1:temperature", "min": 30, "max": 40}
    created = automation_of(twin.world).rules.create_rule(rule(condition=source, cooldown=0))
    automation_of(twin.world).ingest.push_metric("lab-1", "temperature", 25, None)
    automation_of(twin.world).ingest.webhook("lab-1", {"temperature": 35}, None, None, None)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1


def test_logical_conditions_use_the_latest_value_of_each_source(twin: Twin) -> None:
    cond = {
        "condition_type": "logical",
        "operator": "AND",
        "conditions": [
            DRY,
            {
                "condition_type": "comparison",
                "source": f"device:{SENSOR}:temperature",
                "operator": "gt",
                "threshold": 18.2,
            },
        ],
    }
    created = automation_of(twin.world).rules.create_rule(rule(condition=cond, cooldown=0))
    assert created.condition["operator"] == "and"
    twin.clock.advance(110)  # dry from t=80; temperature > 18.2 at t=80 (18.23) only
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1


def test_disabled_and_deleted_rules_are_silent(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(rule(cooldown=0, enabled=False))
    twin.clock.advance(90)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 0
    automation_of(twin.world).rules.enable_rule(created.id, True)
    twin.clock.advance(10)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1
    automation_of(twin.world).rules.delete_rule(created.id)
    twin.clock.advance(20)
    with pytest.raises(NotFound):
        automation_of(twin.world).rules.get_rule(created.id)
    assert automation_of(twin.world).messages.list_messages().total == 1


def test_schedule_rule_runs_at_each_cron_time(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(
        {
            "name": "every minute",
            "trigger": {"trigger_type": "schedule", "cron": "0 * * * * *"},
            "actions": [{"type": "notify", "message": "tick"}],
            "cooldown": 0,
        }
    )
    twin.clock.advance(300)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 5


def test_dry_run_performs_nothing(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(rule())
    result = automation_of(twin.world).rules.test_rule(created.id, 10)
    assert result.condition_met and result.value_source == "input" and result.operator == "<"
    assert result.executed is None and automation_of(twin.world).messages.list_messages().total == 0
    twin.clock.advance(10)
    current = automation_of(twin.world).rules.test_rule(created.id)
    assert current.value_source == "current" and current.value_used == 37.18 and not current.condition_met
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 0


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ({}, "name"),
        (
            {
                "name": "x",
                "condition": {
                    "condition_type": "comparison",
                    "source": "dev:1",
                    "operator": ">",
                    "threshold": 1,
                },
            },
            "source",
        ),
        ({"name": "x", "condition": {**DRY, "operator": "approximately"}}, "operator"),
        ({"name": "x", "condition": {**DRY, "threshold": "high"}}, "threshold"),
        ({"name": "x", "trigger": {"trigger_type": "webhook"}}, "trigger_type"),
        ({"name": "x", "trigger": {"trigger_type": "schedule", "cron": "61 * * * *"}}, "cron"),
        ({"name": "x", "actions": [{"type": "notify"}]}, "message"),
        ({"name": "x", "actions": [{"type": "email"}]}, "action type"),
        ({"name": "x", "cooldown": -1}, "cooldown"),
    ],
)
def test_bad_definitions(definition: dict, fragment: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse(definition)
    assert fragment in err.value.message and err.value.details["hint"]


def test_unknown_resources_are_refused(twin: Twin) -> None:
    with pytest.raises(InvalidInput, match="unavailable resources"):
        automation_of(twin.world).rules.create_rule(
            rule(condition={**DRY, "source": "device:ghost:humidity"})
        )


def test_cron_next_times() -> None:
    assert Cron("*/15 * * * *").next_after(0) == 900
    assert Cron("0 0 * * 0").next_after(0) == 3 * 86_400  # 1970-01-01 was a Thursday
    assert Cron("30 0 9 * * *").next_after(0) == 9 * 3600 + 30


def test_outbox_retries_with_backoff_on_the_world_clock(twin: Twin) -> None:
    outbox = automation_of(twin.world).outbox
    seen: list[tuple[int, bool]] = []
    outbox.register("probe", lambda job, result, final: seen.append((result.attempts, final)))
    outbox.enqueue("probe", "p1", "http", {"url": "http://127.0.0.1:9/"}, {"a": 1}, RetryPolicy(2, 5, 300))
    failure = DeliveryResult(False, "refused", 1)
    (job,) = outbox.take()
    outbox.report(job, failure)
    assert outbox.take() == [] and outbox.pending() == 1
    twin.clock.advance(4.9)
    assert outbox.take() == []
    twin.clock.advance(0.1)
    (job,) = outbox.take()
    outbox.report(job, failure)
    twin.clock.advance(9.9)
    assert outbox.take() == []
    twin.clock.advance(0.1)
    (job,) = outbox.take()
    assert job["payload"] == {"a": 1}
    outbox.report(job, failure)
    assert seen == [(1, False), (2, False), (3, True)] and outbox.pending() == 0


def test_rules_and_pending_deliveries_survive_snapshot_and_restore(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(rule(cooldown=0))
    automation_of(twin.world).messages.create_channel("ops", "webhook", {"url": "http://127.0.0.1:9/"})
    snap = twin.world.snapshot()
    twin.world.reset()
    assert automation_of(twin.world).rules.list_rules() == []
    twin.world.restore(snap)
    twin.clock.advance(80)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1
    assert automation_of(twin.world).outbox.pending("channel") == 1
    snap = twin.world.snapshot()
    twin.world.restore(snap)
    assert (
        len(automation_of(twin.world).outbox.take()) == 1
    )  # the queued delivery is due again after the restore


class FakeAgents:
    def __init__(self) -> None:
        self.runs: list[tuple[str, str, dict]] = []

    def get_agent(self, agent_id: str) -> str:
        if agent_id != "a1":
            raise NotFound(f"Agent not found: {agent_id}", resource="agent")
        return agent_id

    def trigger(self, agent_id: str, data: object = None, trigger_type: str = "rule") -> None:
        self.runs.append((agent_id, trigger_type, data))


def test_trigger_agent_starts_a_run(twin: Twin, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = FakeAgents()
    monkeypatch.setattr(automation_of(twin.world), "agents", agents, raising=False)
    action = {"type": "trigger_agent", "agent_id": "a1", "input": "check the air"}
    created = automation_of(twin.world).rules.create_rule(rule(actions=[action]))
    with pytest.raises(InvalidInput, match="unavailable resources"):
        automation_of(twin.world).rules.create_rule(rule(actions=[{**action, "agent_id": "ghost"}]))
    twin.clock.advance(80)
    assert agents.runs == [("a1", "rule", {"rule_id": created.id, "value": 37.09, "input": "check the air"})]
    assert automation_of(twin.world).rules.rule_history(created.id)[0].actions_executed == (
        "trigger_agent:a1",
    )


def test_trigger_agent_without_agents_is_recorded_as_an_event(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(automation_of(twin.world), "agents", None, raising=False)
    twin.world.trace = []
    automation_of(twin.world).rules.create_rule(rule(actions=[{"type": "trigger_agent", "agent_id": "a9"}]))
    twin.clock.advance(80)
    (line,) = [line for _, line in kinds(twin, EventKind.RULE_AGENT_REQUESTED)]
    assert "agent_id='a9'" in line


def test_cooldown_outlives_a_restore(twin: Twin) -> None:
    created = automation_of(twin.world).rules.create_rule(rule(cooldown=25_000))
    twin.clock.advance(80)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1
    twin.world.restore(twin.world.snapshot())
    twin.clock.advance(20)  # t=100: still within the 25 s cooldown of the firing at t=80
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1
    twin.clock.advance(10)
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 2


def test_notify_can_name_its_channels(twin: Twin) -> None:
    for name in ("ops", "oncall"):
        automation_of(twin.world).messages.create_channel(
            name, "webhook", {"url": f"http://127.0.0.1:9/{name}"}
        )
    automation_of(twin.world).rules.create_rule(
        rule(actions=[{"type": "notify", "message": "m", "channels": ["oncall"]}])
    )
    automation_of(twin.world).rules.create_rule(
        rule(name="all", actions=[{"type": "notify", "message": "m"}])
    )
    twin.clock.advance(80)
    jobs = automation_of(twin.world).outbox.take()
    assert sorted(j["owner_id"] for j in jobs) == ["oncall", "oncall", "ops"]


def test_pending_deliveries_survive_a_restart_with_a_state_dir(tmp_path: Path) -> None:
    store = Store(tmp_path / "twin.sqlite3")
    world = World(store=store, kinds=KINDS)
    automation_of(world).outbox.enqueue(
        "channel", "ops", "http", {"url": "http://127.0.0.1:9/"}, {"a": 1}, RetryPolicy(), delay=30
    )
    store.close()
    again = World(store=Store(tmp_path / "twin.sqlite3"), kinds=KINDS)
    assert automation_of(again).outbox.pending() == 1 and automation_of(again).outbox.take() == []
    again.env.run(until=30.001)
    (job,) = automation_of(again).outbox.take()
    assert job["payload"] == {"a": 1}
