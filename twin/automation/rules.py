"""The rules engine: JSON rules evaluated on every sample of the metrics they watch, on the world clock.

Rules are durable documents (validated by :mod:`twin.automation.rule_spec`). The engine observes
the world's events synchronously (``world.observers``), so a ``data_change`` rule sees each sample
at the sim time it is taken: the simulated sensors' ticks (``world.sample_observers``: a block per
tick, of which only the watched devices are read) and every pushed ``DEVICE_METRIC`` (webhook,
MQTT, REST). Semantics:

- the condition is evaluated over the latest value of each of its sources;
- ``for_duration`` (ms): the condition must have held continuously that long before the rule fires;
- ``cooldown`` (ms, default 60 000): after firing, the rule stays quiet that long;
- ``schedule`` rules evaluate at each cron time (a SimPy process), ``manual`` ones only on demand.

Firing emits ``RULE_TRIGGERED``, performs the actions (``notify`` creates a message that goes out
to the channels, ``execute`` sends a device command, ``trigger_agent`` starts an agent run), then
emits ``RULE_EXECUTED``; each run is kept in the rule's history. ``RULE_EVALUATED`` is emitted when
a rule's condition changes between true and false.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.errors import DomainError, InvalidInput, NotFound
from hardware.ports.events import Event, EventKind
from hardware.ports.rules import Rule, RuleExecution, RuleImport, RuleTest
from twin.automation import rule_spec
from twin.automation.rule_actions import RuleActions
from twin.automation.rule_spec import Cron

if TYPE_CHECKING:
    from twin.automation.messages import MessageCenter
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine
    from twin.sensors import SampleObserver, Samples
    from twin.store import Collection

MAX_HISTORY = 100


def _check_id(rule_id: str) -> None:
    try:
        uuid.UUID(rule_id)
    except ValueError as err:
        raise InvalidInput("Invalid rule ID", resource="rule", field="id") from err


class RuleState:
    """What the engine remembers about one rule between samples (not durable: rebuilt on start)."""

    __slots__ = ("fired_at", "met", "since", "values")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.since: float | None = None
        self.met = False
        self.fired_at: float | None = None


class RuleEngine:
    def __init__(
        self,
        world: Engine,
        *,
        devices: DeviceRegistry,
        messages: MessageCenter,
        agents: Callable[[], object],
        sample_observers: list[SampleObserver],
    ) -> None:
        """``agents``: the agents registry as it is now (read when a rule needs it; anything without
        ``trigger``/``get_agent``, such as ``None``, means there are none); ``sample_observers``: where
        the sensor groups' ticks are handed out (this joins them)."""
        self.world = world
        self.devices = devices
        self.actions = RuleActions(world, devices=devices, messages=messages, agents=agents)
        self.docs = world.store.collection("rules")
        self._run_ids: dict[str, deque[str]] = {}
        """Per rule, the keys of its recorded runs oldest first (read from the store on first use)."""
        self.state: dict[str, RuleState] = {}
        self.watch: dict[str, dict[str, set[str]]] = {}
        """device id → metric → ids of enabled data_change rules watching it."""
        self.schedules: dict[str, Any] = {}
        self.active: dict[str, dict[str, Any]] = {}
        """Enabled rules' documents, kept in step with the store (read on every watched sample)."""
        self._reindex()
        world.observers.append(self.observe)
        sample_observers.append(self.observe_samples)

    # Index -----------------------------------------------------------------------------------
    def _reindex(self) -> None:
        self.watch.clear()
        for doc in self.docs.values():
            self._index(doc)

    def _index(self, doc: dict[str, Any]) -> None:
        rule_id = doc["id"]
        for metrics in self.watch.values():
            for ids in metrics.values():
                ids.discard(rule_id)
        process = self.schedules.pop(rule_id, None)
        if process is not None and process.is_alive:
            process.interrupt("rescheduled")
        self.state.pop(rule_id, None)
        self.active.pop(rule_id, None)
        if not doc["enabled"]:
            return
        self.active[rule_id] = doc
        kind = doc["trigger"]["trigger_type"]
        if kind == "data_change":
            for source in doc["trigger"]["sources"]:
                _, device_id, metric = rule_spec.parse_source(source)
                self.watch.setdefault(device_id, {}).setdefault(metric, set()).add(rule_id)
        elif kind == "schedule":
            self.schedules[rule_id] = self.world.env.process(self._scheduled(rule_id, doc["trigger"]["cron"]))

    # Observing samples ------------------------------------------------------------------------
    def observe(self, event: Event) -> None:
        if event.kind is not EventKind.DEVICE_METRIC or not self.watch:
            return
        metrics = self.watch.get(event.source)
        if metrics:
            metric = event.data["metric"]
            for rule_id in tuple(metrics.get(metric, ())):
                self._sample(rule_id, f"device:{event.source}:{metric}", event.data["value"])

    def observe_samples(self, samples: Samples) -> None:
        """A sensor group's tick: only the watched devices' values are read out of the block."""
        if not self.watch:
            return
        index = samples.index
        for device_id, metrics in tuple(self.watch.items()):
            i = index.get(device_id)
            if i is None or not samples.reported(i):
                continue
            for metric, column in samples.columns.items():  # the order a device reports them in
                rule_ids = metrics.get(metric)
                if rule_ids:
                    value = column[i].item()
                    for rule_id in tuple(rule_ids):
                        self._sample(rule_id, f"device:{device_id}:{metric}", value)

    def _sample(self, rule_id: str, source: str, value: Any) -> None:
        doc = self.active.get(rule_id)
        if doc is None:
            return
        state = self.state.get(rule_id)
        if state is None:
            state = self.state[rule_id] = RuleState()
            if doc.get("last_triggered") is not None:  # the cooldown outlives a restart or restore
                state.fired_at = doc["last_triggered"] - self.world.epoch
        state.values[source] = value
        met = rule_spec.evaluate(doc["condition"], state.values)
        now = self.world.env.now
        if met != state.met:
            state.met = met
            self.world.emit(
                EventKind.RULE_EVALUATED,
                rule_id,
                rule_id=rule_id,
                rule_name=doc["name"],
                condition_met=met,
                value=value,
                timestamp=int(self.world.now()),
            )
        if not met:
            state.since = None
            return
        if state.since is None:
            state.since = now
        if doc.get("for_duration") and (now - state.since) * 1000 < doc["for_duration"] - 1e-6:
            return
        if state.fired_at is not None and (now - state.fired_at) * 1000 < doc["cooldown"] - 1e-6:
            return
        state.fired_at = now
        self._fire(doc, value, "data_change")

    def _scheduled(self, rule_id: str, cron: str):
        schedule = Cron(cron)
        env = self.world.env
        try:
            while True:
                wait = schedule.next_after(self.world.now()) - self.world.now()
                yield env.timeout(max(wait, 0.0))
                doc = self.docs.get(rule_id)
                if doc is None or not doc["enabled"]:
                    return
                values = {
                    s: v
                    for s in rule_spec.sources_of(doc["condition"])
                    if (v := self._current(s)) is not None
                }
                if rule_spec.evaluate(doc["condition"], values):
                    self._fire(doc, next(iter(values.values()), None), "schedule")
        except simpy.Interrupt:
            return

    # Firing ------------------------------------------------------------------------------------
    def _fire(self, doc: dict[str, Any], value: Any, trigger_type: str) -> RuleExecution:
        now = self.world.now()
        self.world.emit(
            EventKind.RULE_TRIGGERED,
            doc["id"],
            rule_id=doc["id"],
            rule_name=doc["name"],
            trigger_value=value,
            trigger_type=trigger_type,
            actions=[a["type"] for a in doc["actions"]],
            timestamp=int(now),
        )
        done: list[str] = []
        errors: list[str] = []
        for action in doc["actions"]:
            try:
                done.append(self.actions.perform(doc, action, value))
            except DomainError as err:
                errors.append(f"{action['type']}: {err.message}")
        execution = RuleExecution(
            doc["id"], doc["name"], not errors, tuple(done), "; ".join(errors) or None, 0, now
        )
        doc = {**doc, "trigger_count": doc.get("trigger_count", 0) + 1, "last_triggered": now}
        self.docs.put(doc["id"], doc)
        if doc["id"] in self.active:
            self.active[doc["id"]] = doc
        self._record(execution)
        self.world.emit(
            EventKind.RULE_EXECUTED,
            doc["id"],
            rule_id=doc["id"],
            rule_name=doc["name"],
            success=execution.success,
            actions_executed=list(done),
            error=execution.error,
            duration_ms=0,
            timestamp=int(now),
        )
        return execution

    def _runs(self, rule_id: str) -> tuple[Collection, deque[str]]:
        """A rule's runs live in their own collection, bounded to the newest ones."""
        runs = self.world.store.collection(f"rule_history/{rule_id}")
        keys = self._run_ids.get(rule_id)
        if keys is None:
            keys = self._run_ids[rule_id] = deque(key for key, _ in runs.items())
        return runs, keys

    def _record(self, execution: RuleExecution) -> None:
        runs, keys = self._runs(execution.rule_id)
        key = self.world.streams.get("automation.rule_runs").bytes(8).hex()
        runs.put(key, dataclasses.asdict(execution))
        keys.append(key)
        while len(keys) > MAX_HISTORY:
            runs.delete(keys.popleft())

    # Values ------------------------------------------------------------------------------------
    def _current(self, source: str) -> Any:
        _, device_id, metric = rule_spec.parse_source(source)
        try:
            current = self.devices.current(device_id)
        except NotFound:
            return None
        for m in current.metrics:
            if m.name == metric:
                return m.value
        return None

    def _historical(self, source: str) -> Any:
        _, device_id, metric = rule_spec.parse_source(source)
        latest = self.world.store.latest_samples(device_id).get(metric)
        return None if latest is None else latest[1]

    # CRUD --------------------------------------------------------------------------------------
    def doc(self, rule_id: str) -> dict[str, Any]:
        _check_id(rule_id)
        doc = self.docs.get(rule_id)
        if doc is None:
            raise NotFound(f"Rule {rule_id} not found", resource="rule")
        return doc

    def list_rules(self) -> list[Rule]:
        return [rule_spec.rule_of(d) for d in self.docs.values()]

    def create_rule(self, definition: object, rule_id: str | None = None) -> Rule:
        spec = rule_spec.parse(definition)
        self.actions.check_resources(spec)
        now = self.world.now()
        if rule_id is None:
            rule_id = str(uuid.UUID(bytes=self.world.streams.get("automation.rules").bytes(16), version=4))
        doc = {
            **spec,
            "id": rule_id,
            "trigger_count": 0,
            "last_triggered": None,
            "created_at": now,
            "updated_at": now,
        }
        self.docs.put(rule_id, doc)
        self._index(doc)
        return rule_spec.rule_of(doc)

    def update_rule(self, rule_id: str, definition: object) -> Rule:
        old = self.doc(rule_id)
        spec = rule_spec.parse(definition)
        self.actions.check_resources(spec)
        doc = {**old, **spec, "updated_at": self.world.now()}
        self.docs.put(rule_id, doc)
        self._index(doc)
        return rule_spec.rule_of(doc)

    def delete_rule(self, rule_id: str) -> None:
        doc = self.doc(rule_id)
        self.docs.delete(rule_id)
        self._index({**doc, "enabled": False})
        runs, keys = self._runs(rule_id)
        for key in keys:
            runs.delete(key)
        del self._run_ids[rule_id]

    def enable_rule(self, rule_id: str, enabled: bool) -> Rule:
        doc = {**self.doc(rule_id), "enabled": enabled, "updated_at": self.world.now()}
        self.docs.put(rule_id, doc)
        self._index(doc)
        return rule_spec.rule_of(doc)

    def get_rule(self, rule_id: str) -> Rule:
        return rule_spec.rule_of(self.doc(rule_id))

    def rule_history(self, rule_id: str) -> list[RuleExecution]:
        self.doc(rule_id)
        runs, _ = self._runs(rule_id)
        return [rule_spec.execution_of(d) for d in reversed(runs.values())]

    def validate_rule(self, definition: object) -> list[str]:
        try:
            self.actions.check_resources(rule_spec.parse(definition))
        except InvalidInput as err:
            missing = err.details.get("missing")
            return [f"{err.message}: {', '.join(missing)}" if missing else err.message]
        return []

    def import_rules(self, definitions: list[Any]) -> RuleImport:
        imported, skipped, errors = 0, 0, []
        for i, definition in enumerate(definitions):
            given = definition.get("id") if isinstance(definition, Mapping) else None
            keep = None
            if isinstance(given, str):
                if self.docs.get(given) is not None:
                    skipped += 1
                    continue
                with contextlib.suppress(ValueError):
                    keep = str(uuid.UUID(given))  # an exported rule keeps its id
            try:
                self.create_rule(definition, keep)
            except InvalidInput as err:
                errors.append(f"rule {i}: {err.message}")
                continue
            imported += 1
        return RuleImport(imported, skipped, tuple(errors))

    def trigger_rule(self, rule_id: str) -> RuleExecution:
        doc = self.doc(rule_id)
        sources = rule_spec.sources_of(doc["condition"])
        return self._fire(doc, self._current(sources[0]) if sources else None, "manual")

    def test_rule(self, rule_id: str, value: Any = None, execute: bool = False) -> RuleTest:
        doc = self.doc(rule_id)
        condition = doc["condition"]
        if condition["condition_type"] == "logical":
            raise InvalidInput(
                "Logical conditions cannot be tested with a single value",
                resource="rule",
                hint="Test each comparison or range condition on its own",
            )
        if condition["condition_type"] == "none":
            met, used, origin = True, value, "input" if value is not None else "none"
        else:
            origin = "input"
            if value is None:
                value, origin = self._current(condition["source"]), "current"
            if value is None:
                value, origin = self._historical(condition["source"]), "historical"
            if value is None:
                raise InvalidInput(
                    f"No data available for {condition['source']}",
                    resource="rule",
                    hint='Pass a test value: {"value": 42}',
                )
            met, used = rule_spec.compare(condition, value), value
        ranged = condition["condition_type"] == "range"
        execution = self._fire(doc, used, "test") if execute and met else None
        return RuleTest(
            rule_id=doc["id"],
            rule_name=doc["name"],
            condition_met=met,
            value_used=used,
            value_source=origin,
            operator="between" if ranged else condition.get("operator", "none"),
            threshold=None if ranged else condition.get("threshold", condition.get("threshold_value")),
            range_min=condition.get("min") if ranged else None,
            range_max=condition.get("max") if ranged else None,
            executed=(execution is not None) if execute else None,
            execution=execution,
        )
