"""Transforms: their stored definition read as the server's serde reads it, and the engine that runs
them on a device's data.

A stored transform is the server's ``TransformAutomation`` as JSON: ``id, name, description,
enabled, execution_count, last_executed, created_at, updated_at`` (flattened metadata), ``scope``
(``"global"``, ``{"device_type": t}``, ``{"device": id}``), ``intent?``, ``js_code?``,
``output_prefix`` (default ``transform``), ``complexity`` (u8, default 2), ``operations?``.
:func:`parse` refuses what serde refuses, with serde's words.

A run (:meth:`TransformEngine.execute`) prefixes the outputs by scope (``<prefix>`` for global and
device scope, ``<prefix>.<device_type>`` for a device-type scope), runs the JavaScript if there is
any, else the operations; a failing script or operation is a warning of the run, which still
completes. Every run is recorded; outputs of runs that produced metrics are registered as data
sources ``transform:<id>:<metric>`` (in memory, as on the server: a restart forgets them until the
transform runs again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hardware.ports.automations import Transform, TransformedMetric, TransformOutput, TransformResult
from twin.automation import transform_js, transform_ops
from twin.automation.transform_js import Invoke, TransformFailure

VARIANTS = ("global", "device_type", "device")
DEFAULT_PREFIX = "transform"
Recorder = Callable[[str, TransformResult], None]
"""(transform id, the run's result) -> None: keeps the run's record."""


class SpecError(ValueError):
    """A definition serde would not read; the message is serde's."""


def _what(v: Any) -> str:
    if isinstance(v, bool):
        return f"boolean `{str(v).lower()}`"
    if isinstance(v, int):
        return f"integer `{v}`"
    if isinstance(v, float):
        return f"floating point `{v}`"
    if isinstance(v, str):
        return f'string "{v}"'
    kinds: dict[type, str] = {list: "sequence", dict: "map"}
    return kinds.get(type(v), "null")


def invalid_type(v: Any, expected: str) -> SpecError:
    return SpecError(f"invalid type: {_what(v)}, expected {expected}")


def _string(doc: Mapping[str, Any], key: str, default: str | None = None, optional: bool = False) -> Any:
    if key not in doc or (optional and doc[key] is None):
        if default is None and not optional:
            raise SpecError(f"missing field `{key}`")
        return default
    if not isinstance(doc[key], str):
        raise invalid_type(doc[key], "a string")
    return doc[key]


def _integer(doc: Mapping[str, Any], key: str, kind: str, default: int | None = None, optional=False) -> Any:
    bounds = {"i64": (-(2**63), 2**63 - 1), "u64": (0, 2**64 - 1), "u8": (0, 255)}[kind]
    if key not in doc or (optional and doc[key] is None):
        if default is None and not optional:
            raise SpecError(f"missing field `{key}`")
        return default
    v = doc[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise invalid_type(v, kind)
    if not bounds[0] <= v <= bounds[1]:
        raise SpecError(f"invalid value: integer `{v}`, expected {kind}")
    return v


def parse_scope(v: Any) -> str | dict[str, str]:
    if isinstance(v, str):
        if v == "global":
            return v
        if v in VARIANTS:
            raise SpecError("invalid type: unit variant, expected newtype variant")
        raise SpecError(f"unknown variant `{v}`, expected one of `global`, `device_type`, `device`")
    if not isinstance(v, dict):
        raise invalid_type(v, "enum TransformScope")
    if len(v) != 1:
        raise SpecError("invalid value: map, expected map with a single key")
    ((key, inner),) = v.items()
    if key not in VARIANTS:
        raise SpecError(f"unknown variant `{key}`, expected one of `global`, `device_type`, `device`")
    if key == "global":
        if inner is not None:
            raise invalid_type(inner, "unit")
        return "global"
    if not isinstance(inner, str):
        raise invalid_type(inner, "a string")
    return {key: inner}


REQUIRED_FIELDS = {
    "single": ("json_path", "output_metric"),
    "extract": ("from", "output"),
    "array_aggregation": ("json_path", "aggregation", "output_metric"),
    "reduce": ("over", "using", "output"),
    "time_series_aggregation": ("source_metric", "window", "aggregation", "output_metric"),
    "multi_output": ("operations",),
    "fork": ("branches",),
}


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def parse_operation(op: Any) -> dict[str, Any]:
    if not isinstance(op, dict):
        raise invalid_type(op, "internally tagged enum TransformOperation")
    kind = op.get("op_type")
    if kind is None:
        raise SpecError("missing field `op_type`")
    if kind not in transform_ops.OP_TYPES:
        raise SpecError(f"unknown variant `{kind}`, expected one of {_listed(transform_ops.OP_TYPES)}")
    for name in REQUIRED_FIELDS.get(kind, ()):
        if name not in op:
            raise SpecError(f"missing field `{name}`")
    for name in ("aggregation", "using"):
        if name in op and op[name] not in transform_ops.AGGREGATIONS:
            raise SpecError(
                f"unknown variant `{op[name]}`, expected one of {_listed(transform_ops.AGGREGATIONS)}"
            )
    for name in ("operations", "branches"):
        if name in op:
            if not isinstance(op[name], list):
                raise invalid_type(op[name], "a sequence")
            op = {**op, name: [parse_operation(p) for p in op[name]]}
    return dict(op)


def parse(value: Any) -> dict[str, Any]:
    """The stored form of a ``TransformAutomation`` given as JSON; ``SpecError`` as serde refuses it."""
    if not isinstance(value, dict):
        raise invalid_type(value, "struct TransformAutomation")
    doc: dict[str, Any] = {
        "id": _string(value, "id"),
        "name": _string(value, "name"),
        "description": _string(value, "description", ""),
        "enabled": value.get("enabled", True),
        "execution_count": _integer(value, "execution_count", "u64", 0),
        "last_executed": _integer(value, "last_executed", "i64", optional=True),
        "created_at": _integer(value, "created_at", "i64"),
        "updated_at": _integer(value, "updated_at", "i64"),
    }
    if not isinstance(doc["enabled"], bool):
        raise invalid_type(doc["enabled"], "a boolean")
    if "scope" not in value:
        raise SpecError("missing field `scope`")
    doc["scope"] = parse_scope(value["scope"])
    for key in ("intent", "js_code"):
        if (text := _string(value, key, optional=True)) is not None:
            doc[key] = text
    doc["output_prefix"] = _string(value, "output_prefix", DEFAULT_PREFIX)
    doc["complexity"] = _integer(value, "complexity", "u8", 2)
    operations = value.get("operations")
    if operations is not None:
        if not isinstance(operations, list):
            raise invalid_type(operations, "a sequence")
        doc["operations"] = [parse_operation(op) for op in operations]
    return doc


# Reading a stored transform ---------------------------------------------------------------------
def complexity_score(doc: Mapping[str, Any]) -> int:
    if doc.get("js_code") is not None or doc.get("operations") is None:
        return min(doc["complexity"], 5)
    ops = doc["operations"]
    return min(max((transform_ops.complexity(op) for op in ops), default=1), 5)


def output_metrics(doc: Mapping[str, Any]) -> list[str]:
    if doc.get("js_code") is not None or doc.get("operations") is None:
        return [doc["output_prefix"]]
    return [m for op in doc["operations"] for m in transform_ops.output_metrics(op)]


def applies(doc: Mapping[str, Any], device_id: str, device_type: str | None) -> bool:
    if not doc["enabled"]:
        return False
    scope = doc["scope"]
    if scope == "global":
        return True
    if "device_type" in scope:
        return device_type is not None and scope["device_type"] == device_type
    return scope["device"] == device_id


def transform_of(doc: Mapping[str, Any]) -> Transform:
    ops = doc.get("operations")
    return Transform(
        id=doc["id"],
        name=doc["name"],
        description=doc["description"],
        enabled=doc["enabled"],
        execution_count=doc["execution_count"],
        last_executed=doc["last_executed"],
        created_at=doc["created_at"],
        updated_at=doc["updated_at"],
        scope=doc["scope"],
        output_prefix=doc["output_prefix"],
        complexity=doc["complexity"],
        complexity_score=complexity_score(doc),
        intent=doc.get("intent"),
        js_code=doc.get("js_code"),
        operations=None if ops is None else tuple(ops),
        output_metrics=tuple(output_metrics(doc)),
    )


def _data_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, float):
        return "float"
    if isinstance(value, int):
        return "integer"
    return "string" if isinstance(value, str) else "unknown"


class TransformEngine:
    """Runs transforms; keeps the registry of their outputs. ``record`` keeps each run's record,
    ``history`` reads a device's telemetry for time-series operations, ``invoke`` calls extension
    commands for scripts, ``clock`` is the world clock (Unix seconds), ``seed`` a fresh seed for a
    script's ``Math.random``."""

    def __init__(
        self,
        *,
        record: Recorder,
        history: transform_ops.History,
        invoke: Invoke,
        clock: Callable[[], float],
        seed: Callable[[], int],
    ) -> None:
        self.record = record
        self.history = history
        self.invoke = invoke
        self.clock = clock
        self.seed = seed
        self.outputs: dict[str, TransformOutput] = {}

    def process(
        self, docs: list[dict[str, Any]], device_id: str, device_type: str | None, data: Any
    ) -> TransformResult:
        metrics: list[TransformedMetric] = []
        warnings: list[str] = []
        for doc in docs:
            if not applies(doc, device_id, device_type):
                continue
            result = self.execute(doc, device_id, data)
            if result.metrics:
                self.register(doc, result.metrics)
            metrics.extend(result.metrics)
            warnings.extend(result.warnings)
        return TransformResult(tuple(metrics), tuple(warnings))

    def execute(self, doc: Mapping[str, Any], device_id: str, data: Any) -> TransformResult:
        """One run, recorded. A failing script or operation is a warning: the run completes."""
        result = self._execute(doc, device_id, data)
        self.record(doc["id"], result)
        return result

    def _execute(self, doc: Mapping[str, Any], device_id: str, data: Any) -> TransformResult:
        now, seed = self.clock(), self.seed()
        timestamp = int(now)
        prefix = doc["output_prefix"] or DEFAULT_PREFIX
        scope = doc["scope"]
        if isinstance(scope, Mapping) and "device_type" in scope:
            prefix = f"{prefix}.{scope['device_type']}"
        metrics: list[TransformedMetric] = []
        warnings: list[str] = []
        code = doc.get("js_code")
        if code:
            try:
                found = transform_js.run(
                    code,
                    data,
                    prefix,
                    device_id,
                    timestamp,
                    now_ms=int(now * 1000),
                    seed=seed,
                    invoke=self.invoke,
                )
            except TransformFailure as err:
                warnings.append(f"JS execution failed: {err}")
                found = []
            metrics = [_of(m, doc["id"]) for m in found]
            return TransformResult(tuple(metrics), tuple(warnings))
        for op in doc.get("operations") or ():
            try:
                found = transform_ops.run(op, device_id, timestamp, data, self.history)
            except (
                TransformFailure,
                KeyError,
                TypeError,
                AttributeError,
                ValueError,
            ) as err:  # a field amiss
                warnings.append(f"Operation failed: {err}")
                continue
            metrics.extend(_of(m, doc["id"]) for m in found)
        return TransformResult(tuple(metrics), tuple(warnings))

    def test_code(self, code: str, data: Any, prefix: str) -> list[TransformedMetric]:
        """A script run on its own (``TransformFailure`` when it fails): no extension is called,
        ``extensions.invoke`` answers a mock result."""
        now, seed = self.clock(), self.seed()
        return transform_js.run(
            code,
            data,
            prefix,
            "test_device",
            int(now),
            now_ms=int(now * 1000),
            seed=seed,
            mock_extensions=True,
        )

    # Output registry --------------------------------------------------------------------------
    def register(self, doc: Mapping[str, Any], metrics: tuple[TransformedMetric, ...]) -> None:
        tid, name = doc["id"], doc["name"]
        fresh = {m.metric for m in metrics}
        for key in [
            k for k, o in self.outputs.items() if o.transform_id == tid and o.metric_name not in fresh
        ]:
            del self.outputs[key]
        registered = int(self.clock())
        for m in metrics:
            source = f"transform:{tid}:{m.metric}"
            self.outputs[source] = TransformOutput(
                transform_id=tid,
                transform_name=name,
                metric_name=m.metric,
                data_source_id=source,
                display_name=f"{name}: {m.metric}",
                data_type=_data_type(m.value),
                unit=None,
                description=f"Output from Transform: {name}",
                last_update=m.timestamp,
                registered_at=registered,
                enabled=doc["enabled"],
            )


def _of(m: TransformedMetric, transform_id: str) -> TransformedMetric:
    return TransformedMetric(m.device_id, m.metric, m.value, m.timestamp, m.quality, transform_id)
