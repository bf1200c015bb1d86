"""Automations: the server's transforms, durable, run on the world clock on the data of the devices
their scope names.

As the server's transform event service does, the registry watches every device sample (the sensor
groups' ticks and every pushed ``DEVICE_METRIC``; virtual metrics excepted, so outputs never feed
back) and keeps, per device, the data seen so far: ``{device_id, timestamp, values: {metric:
value}, <metric>: value}``. 100 ms of world time after a device's last sample, every enabled
transform whose scope names it runs on that data. Each output metric is stored like telemetry under
``transform:<transform id>`` (what the data explorer and ``GET /telemetry?source=transform:<id>``
read) and under the device itself (so its current values show it), and published as a virtual
``DEVICE_METRIC`` in both namespaces. A transform that produced output counts as executed
(``execution_count``, ``last_executed``), written at most once a minute of world time, as on the
server. Every run is kept in the transform's execution records (the newest 100).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.automations import (
    AutomationChanges,
    CodeTest,
    Execution,
    Imported,
    Intent,
    Transform,
    TransformOutput,
    TransformResult,
)
from hardware.ports.devices import TelemetryQuery
from hardware.ports.errors import DomainError, InvalidInput, NotFound
from hardware.ports.events import Event, EventKind
from twin.automation import transform_ops, transforms
from twin.automation.registry import VIRTUAL_PREFIXES
from twin.automation.transform_js import TransformFailure
from twin.automation.transforms import SpecError, TransformEngine, transform_of

if TYPE_CHECKING:
    from twin.automation.extensions import ExtensionRegistry
    from twin.automation.registry import DeviceRegistry
    from twin.automation.telemetry import Telemetry
    from twin.engine import Engine
    from twin.sensors import SampleObserver, Samples
    from twin.store import Collection

DEBOUNCE_S = 0.1
FLUSH_INTERVAL_S = 60.0
MAX_TRACKED_DEVICES = 1024
MAX_EXECUTIONS = 100
TRANSFORM_WORDS = (
    "calculate", "compute", "aggregate", "average", "sum", "count", "extract", "parse", "transform",
    "convert", "process", "statistics", "metric", "virtual", "derived", "array", "group by", "filter", "map",
)  # fmt: skip


def not_found(what: str = "Automation") -> NotFound:
    # The server's message: its handler says "<what> not found" and the error adds " not found".
    return NotFound(f"{what} not found not found", resource="automation")


def _stored(value: Any) -> Any:
    """How the telemetry store keeps an output: JSON values as their text."""
    return json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else value


class AutomationRegistry:
    def __init__(
        self,
        world: Engine,
        *,
        devices: DeviceRegistry,
        telemetry: Telemetry,
        extensions: ExtensionRegistry,
        sample_observers: list[SampleObserver],
    ) -> None:
        self.world = world
        self.devices = devices
        self.telemetry = telemetry
        self.extensions = extensions
        self.docs = world.store.collection("automations")
        self.template_docs = world.store.collection("automation_templates")
        """Templates as the server stores them: none unless a client's state brought some."""
        self.engine = TransformEngine(
            record=self._record,
            history=self._history,
            invoke=self._invoke,
            clock=world.now,
            seed=lambda: int(world.streams.get("automation.transform_js").integers(2**32)),
        )
        self.enabled: dict[str, dict[str, Any]] = {d["id"]: d for d in self._docs() if d["enabled"]}
        """Enabled transforms, kept in step with the store (read on every watched sample)."""
        self.raw: dict[str, dict[str, Any]] = {}
        """Per device, the data seen so far (what its transforms run on)."""
        self.due: dict[str, float] = {}
        """Devices waiting for their debounce to end -> sim time it ends."""
        self._wakeups: set[float] = set()
        self._flushed: dict[str, float] = {}
        self._run_ids: dict[str, deque[str]] = {}
        world.observers.append(self.observe)
        sample_observers.append(self.observe_samples)

    # Stored documents -------------------------------------------------------------------------
    def _docs(self) -> list[dict[str, Any]]:
        return self.docs.values_as(transforms.parse)

    def doc(self, automation_id: str) -> dict[str, Any]:
        doc = self.docs.get_as(automation_id, transforms.parse)
        if doc is None:
            raise not_found()
        return doc

    def _save(self, doc: dict[str, Any]) -> None:
        self.docs.put(doc["id"], doc)
        if doc["enabled"]:
            self.enabled[doc["id"]] = doc
        else:
            self.enabled.pop(doc["id"], None)

    # CRUD -------------------------------------------------------------------------------------
    def list_automations(self) -> list[Transform]:
        return [transform_of(d) for d in self._docs()]

    def get_automation(self, automation_id: str) -> Transform:
        return transform_of(self.doc(automation_id))

    def create_automation(self, name: str, description: str, enabled: bool, definition: Any) -> Transform:
        key = self.world.streams.get("automation.automations").bytes(16)
        now = int(self.world.now())
        if isinstance(definition, dict):
            definition = {
                **definition,
                "id": str(uuid.UUID(bytes=key, version=4)),
                "name": name,
                "description": description,
                "enabled": enabled,
                "created_at": now,
                "updated_at": now,
            }
        try:
            doc = transforms.parse(definition)
        except SpecError as err:
            raise InvalidInput(f"Invalid transform definition: {err}", resource="automation") from err
        self._save(doc)
        return transform_of(doc)

    def update_automation(self, automation_id: str, changes: AutomationChanges) -> Transform:
        doc = dict(self.doc(automation_id))
        for key in ("name", "description", "enabled"):
            if getattr(changes, key) is not None:
                doc[key] = getattr(changes, key)
        given = changes.definition
        if isinstance(given, dict):
            self._merge(doc, given)
        doc["updated_at"] = int(self.world.now())
        self._save(doc)
        return transform_of(doc)

    @staticmethod
    def _merge(doc: dict[str, Any], given: Mapping[str, Any]) -> None:
        """The server's merge: keys it cannot read are skipped, except that a ``js_code`` or
        ``intent`` that is not text clears it."""
        if "scope" in given:
            with contextlib.suppress(SpecError):
                doc["scope"] = transforms.parse_scope(given["scope"])
        for key in ("js_code", "intent"):
            if key in given:
                if isinstance(given[key], str):
                    doc[key] = given[key]
                else:
                    doc.pop(key, None)
        if isinstance(given.get("output_prefix"), str):
            doc["output_prefix"] = given["output_prefix"]
        if isinstance(given.get("operations"), list):
            with contextlib.suppress(SpecError):
                doc["operations"] = [transforms.parse_operation(op) for op in given["operations"]]

    def delete_automation(self, automation_id: str) -> None:
        if not self.docs.delete(automation_id):
            raise not_found()
        self.enabled.pop(automation_id, None)
        runs, keys = self._runs(automation_id)
        for key in keys:
            runs.delete(key)
        del self._run_ids[automation_id]

    def set_enabled(self, automation_id: str, enabled: bool) -> Transform:
        doc = {**self.doc(automation_id), "enabled": enabled}
        self._save(doc)
        return transform_of(doc)

    def templates(self) -> list[Mapping[str, Any]]:
        return list(self.template_docs.values())

    def import_automations(self, automations: Any) -> Imported:
        if not isinstance(automations, list):
            raise InvalidInput(
                f"Invalid automations data: {transforms.invalid_type(automations, 'a sequence')}",
                resource="automation",
            )
        try:
            docs = [transforms.parse(a) for a in automations]
        except SpecError as err:
            raise InvalidInput(f"Invalid automations data: {err}", resource="automation") from err
        imported = failed = 0
        for doc in docs:
            try:
                self._save(doc)
            except InvalidInput:  # text the store cannot keep
                failed += 1
                continue
            imported += 1
        return Imported(imported, failed)

    def analyze_intent(self, description: str) -> Intent:
        text = description.lower()
        score = 5 * sum(word in text for word in TRANSFORM_WORDS)
        score += 5 if "data" in text or "value" in text else 0
        return Intent("transform", min(50 + score, 100), "Recommended as a data transform automation")

    # Executions -------------------------------------------------------------------------------
    def _runs(self, automation_id: str) -> tuple[Collection, deque[str]]:
        runs = self.world.store.collection(f"automation_executions/{automation_id}")
        keys = self._run_ids.get(automation_id)
        if keys is None:
            keys = self._run_ids[automation_id] = deque(key for key, _ in runs.items())
        return runs, keys

    def _record(self, automation_id: str, result: TransformResult) -> None:
        runs, keys = self._runs(automation_id)
        at = int(self.world.now() * 1000)
        key = str(uuid.UUID(bytes=self.world.streams.get("automation.executions").bytes(16), version=4))
        output = None
        if result.metrics:
            output = {"metric_count": len(result.metrics), "warning_count": len(result.warnings)}
        record = {
            "id": key,
            "automation_id": automation_id,
            "automation_type": "transform",
            "started_at": at,
            "ended_at": at,
            "status": "completed",
            "error": None,
            "output": output,
        }
        runs.put(key, record)
        keys.append(key)
        while len(keys) > MAX_EXECUTIONS:
            runs.delete(keys.popleft())

    def executions(self, automation_id: str, limit: int) -> list[Execution]:
        if automation_id not in self.docs:  # deleting one deletes its records
            return []
        runs, _ = self._runs(automation_id)
        rows = runs.values_as(lambda d: Execution(**{k: d[k] for k in Execution.__slots__}))
        rows.reverse()
        rows.sort(key=lambda e: e.started_at, reverse=True)
        return rows[:limit]

    # Running on request -----------------------------------------------------------------------
    def process(self, device_id: str, device_type: str | None, data: Any) -> TransformResult:
        return self.engine.process(self._docs(), device_id, device_type, data)

    def test_transform(
        self, automation_id: str, device_id: str, device_type: str | None, data: Any
    ) -> TransformResult:
        doc = self.docs.get_as(automation_id, transforms.parse)
        if doc is None:
            raise not_found("Transform")
        return self.engine.process([doc], device_id, device_type, data)

    def test_code(self, code: str, input_data: Any, output_prefix: str) -> CodeTest:
        try:
            metrics = self.engine.test_code(code, input_data, output_prefix)
        except TransformFailure as err:
            return CodeTest(False, error=str(err))
        return CodeTest(True, tuple(metrics))

    def virtual_metrics(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for doc in self._docs():
            label = f"{doc['id']}:{doc['name']}"
            if doc.get("js_code") is not None and doc["output_prefix"]:
                out.setdefault(doc["output_prefix"], []).append(label)
            for op in doc.get("operations") or ():
                for metric in transform_ops.output_metrics(op):
                    out.setdefault(metric, []).append(label)
        return out

    def data_sources(self, transform_id: str | None = None) -> list[TransformOutput]:
        outputs = self.engine.outputs.values()
        if transform_id is None:
            return [o for o in outputs if o.enabled]
        return [o for o in outputs if o.transform_id == transform_id]

    def data_source(self, data_source_id: str) -> TransformOutput:
        found = self.engine.outputs.get(data_source_id)
        if found is None:
            raise not_found("Transform data source")
        return found

    # Collaborators of the engine --------------------------------------------------------------
    def _history(self, device_id: str, metric: str, seconds: float) -> list[float]:
        now = self.world.now()
        try:
            page = self.telemetry.query(
                device_id, TelemetryQuery(metric=metric, start=now - seconds, end=now, limit=5000)
            )
        except DomainError:
            return []
        values = page.series[0].values if page.series else []
        return [float(v) for v in reversed(values) if isinstance(v, int | float) and not isinstance(v, bool)]

    def _invoke(self, extension_id: str, command: str, params: Any) -> Any:
        args = params if isinstance(params, dict) else {}
        return dict(self.extensions.command(extension_id, command, args).output)

    # Watching the world -----------------------------------------------------------------------
    def _wanted(self, device_id: str, device_type: str | None) -> bool:
        return any(transforms.applies(d, device_id, device_type) for d in self.enabled.values())

    def observe(self, event: Event) -> None:
        if event.kind is not EventKind.DEVICE_METRIC or not self.enabled:
            return
        data, device_id = event.data, event.source
        metric = data.get("metric")
        if data.get("is_virtual") or not isinstance(metric, str) or metric.startswith(VIRTUAL_PREFIXES):
            return
        doc = self.devices.find_doc(device_id)
        device_type = doc.get("device_type") if doc else None
        if self._wanted(device_id, device_type):
            self._seen(device_id, int(data.get("timestamp") or self.world.now()), {metric: data.get("value")})

    def observe_samples(self, samples: Samples) -> None:
        if not self.enabled:
            return
        device_type = samples.fleet.group.device_type
        at = int(self.world.epoch + samples.at)
        for device_id, values in samples.rows():
            if self._wanted(device_id, device_type):
                self._seen(device_id, at, values)

    def _seen(self, device_id: str, at: int, values: Mapping[str, Any]) -> None:
        entry = self.raw.get(device_id)
        if entry is None:
            if len(self.raw) >= MAX_TRACKED_DEVICES:
                oldest = sorted(self.raw, key=lambda d: self.raw[d]["timestamp"])[: MAX_TRACKED_DEVICES // 2]
                for d in oldest:
                    del self.raw[d]
                    self.due.pop(d, None)
            entry = self.raw[device_id] = {"device_id": device_id, "timestamp": at, "values": {}}
        entry["timestamp"] = at
        entry["values"].update(values)
        entry.update(values)
        due = self.world.env.now + DEBOUNCE_S
        self.due[device_id] = due
        if due not in self._wakeups:
            self._wakeups.add(due)
            self.world.env.process(self._wake(due))

    def _wake(self, due: float):
        yield self.world.env.timeout(DEBOUNCE_S)
        self._wakeups.discard(due)
        ready = [d for d, t in self.due.items() if t <= self.world.env.now]
        if not ready:
            return
        with self.world.store.atomic():
            for device_id in ready:
                del self.due[device_id]
                self._run_live(device_id)

    def _run_live(self, device_id: str) -> None:
        entry = self.raw.get(device_id)
        if entry is None:
            return
        doc = self.devices.find_doc(device_id)
        device_type = doc.get("device_type") if doc else None
        result = self.engine.process(list(self.enabled.values()), device_id, device_type, entry)
        now = self.world.env.now
        for tid in dict.fromkeys(m.transform_id for m in result.metrics if m.transform_id):
            last = self._flushed.get(tid)
            if last is not None and now - last < FLUSH_INTERVAL_S:
                continue
            stored = self.docs.get_as(tid, transforms.parse)
            if stored is not None:
                self._flushed[tid] = now
                count = stored["execution_count"] + 1
                self._save({**stored, "execution_count": count, "last_executed": int(self.world.now())})
        by_source: dict[str, list[tuple[str, float, Any, float | None]]] = {}
        for m in result.metrics:
            row = (m.metric, float(m.timestamp), _stored(m.value), m.quality)
            for source in (f"transform:{m.transform_id}", device_id):
                by_source.setdefault(source, []).append(row)
        for source, rows in by_source.items():
            self.world.store.put_samples(source, rows)
        for m in result.metrics:
            for source in (f"transform:{m.transform_id}", device_id):
                self.world.emit(
                    EventKind.DEVICE_METRIC,
                    source,
                    metric=m.metric,
                    value=m.value,
                    timestamp=m.timestamp,
                    quality=m.quality,
                    is_virtual=True,
                )
