"""The declarative operations of older transforms (before JavaScript), for the kinds the twin runs.

An operation is a JSON object tagged by ``op_type``. The twin runs ``single`` and ``extract``
(a number at a path), ``array_aggregation`` and ``reduce`` (an aggregate over an array in the data),
``time_series_aggregation`` (an aggregate over the device's own telemetry in a window back from
now), ``multi_output`` and ``fork`` (their parts). Paths are the server's: ``$``, ``$.a.b``,
``$.a[0]``, ``$.a.0``, ``$.a[]`` (a one-element array's element). The other kinds are stored and
exported like the rest; running one is a failed operation (a warning of the run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from hardware.ports.automations import TransformedMetric
from twin.automation.transform_js import TransformFailure

OP_TYPES = (
    "single",
    "array_aggregation",
    "time_series_aggregation",
    "reference",
    "extension",
    "multi_output",
    "extract",
    "map",
    "reduce",
    "format",
    "compute",
    "pipeline",
    "fork",
    "if",
    "group_by",
    "decode",
    "encode",
)
AGGREGATIONS = (
    "mean",
    "max",
    "min",
    "sum",
    "count",
    "median",
    "std_dev",
    "first",
    "last",
    "trend",
    "delta",
    "rate",
)
COMPLEXITY = {
    "single": 1,
    "array_aggregation": 2,
    "time_series_aggregation": 3,
    "reference": 1,
    "extension": 3,
    "extract": 1,
    "map": 2,
    "reduce": 2,
    "format": 1,
    "compute": 2,
    "group_by": 3,
    "decode": 2,
    "encode": 2,
}

History = Callable[[str, str, float], list[float]]
"""(device id, metric, seconds back from now) -> the device's numeric samples in that window."""


def complexity(op: Mapping[str, Any]) -> int:
    kind = op.get("op_type")
    if kind in ("multi_output", "pipeline", "fork"):
        parts = op.get({"multi_output": "operations", "pipeline": "steps", "fork": "branches"}[kind]) or []
        return min(sum(complexity(p) for p in parts if isinstance(p, Mapping)), 5)
    if kind == "if":
        score = 2 + (complexity(op["then"]) if isinstance(op.get("then"), Mapping) else 0)
        score += complexity(op["else_"]) if isinstance(op.get("else_"), Mapping) else 0
        return min(score, 5)
    return COMPLEXITY.get(str(kind), 1)


def output_metrics(op: Mapping[str, Any]) -> list[str]:
    kind = op.get("op_type")
    if kind in ("multi_output", "fork"):
        parts = op.get("operations" if kind == "multi_output" else "branches") or []
        return [m for p in parts if isinstance(p, Mapping) for m in output_metrics(p)]
    if kind == "extension":
        names = op.get("output_metrics")
        return [str(m) for m in names] if isinstance(names, list) else []
    name = op.get("output_metric", op.get("output"))
    return [name] if isinstance(name, str) else []


def _fail(operation: str, message: str) -> TransformFailure:
    return TransformFailure(operation, message)


def extract(data: Any, path: str) -> Any:
    path = path.strip()
    if path in ("$", ""):
        return data
    rest = path[2:] if path.startswith("$.") else path[1:] if path.startswith("$") else path
    current = data
    for part in rest.split("."):
        if not part:
            continue
        if "[" in part:
            field, index = part[: part.index("[")], part[part.index("[") :]
            current = _field(current, field)
            if "]" not in index:
                raise _fail("PathExtract", f"Unclosed bracket in path part: {part}")
            inner = index[1 : index.index("]")]
            if not inner:
                if isinstance(current, list) and len(current) == 1:
                    current = current[0]
                continue
            if not inner.isdigit():
                raise _fail("PathExtract", f"Invalid array index: {inner}")
            if not isinstance(current, list):
                raise _fail("PathExtract", f"Field '{field}' is not an array")
            current = _item(current, int(inner))
        elif part.isdigit():
            if not isinstance(current, list):
                raise _fail("PathExtract", f"Cannot index non-array with {part}")
            current = _item(current, int(part))
        else:
            current = _field(current, part)
    return current


def _field(value: Any, name: str) -> Any:
    if not isinstance(value, dict) or name not in value:
        raise _fail("PathExtract", f"Field '{name}' not found")
    return value[name]


def _item(value: list[Any], index: int) -> Any:
    if index >= len(value):
        raise _fail("PathExtract", f"Array index {index} out of bounds (len: {len(value)})")
    return value[index]


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def aggregate(values: list[float], fn: str) -> float:
    n = len(values)
    if fn == "mean":
        return math.fsum(values) / n
    if fn in ("max", "min"):
        return max(values) if fn == "max" else min(values)
    if fn == "sum":
        return math.fsum(values)
    if fn == "count":
        return float(n)
    if fn in ("first", "last"):
        return values[0] if fn == "first" else values[-1]
    if fn == "median":
        return sorted(values)[n // 2]
    if fn == "std_dev":
        mean = math.fsum(values) / n
        return math.sqrt(math.fsum((x - mean) ** 2 for x in values) / n)
    if n < 2:
        return 0.0
    if fn == "trend":
        return float((values[-1] > values[0]) - (values[-1] < values[0]))
    if fn == "delta":
        return values[-1] - values[0]
    return (values[-1] - values[0]) / (n - 1)  # rate


def run(
    op: Mapping[str, Any], device_id: str, timestamp: int, data: Any, history: History
) -> list[TransformedMetric]:
    """The metrics of one operation; ``TransformFailure`` (or ``KeyError``, ``TypeError``,
    ``AttributeError``, ``ValueError`` for a field the operation lacks or has wrong) when it cannot
    produce them."""
    kind = op["op_type"]

    def metric(name: str, value: float) -> list[TransformedMetric]:
        return [TransformedMetric(device_id, name, value, timestamp, 1.0)]

    if kind in ("single", "extract"):
        path = op["json_path"] if kind == "single" else op["from"]
        value = extract(data, path)
        number = as_number(value)
        if number is None:
            raise _fail(kind.capitalize(), f"Value at '{path}' is not a number: {value}")
        return metric(op["output_metric"] if kind == "single" else op["output"], number)
    if kind in ("array_aggregation", "reduce"):
        path = op["json_path"] if kind == "array_aggregation" else op["over"]
        items = extract(data, path)
        if not isinstance(items, list):
            raise _fail("ArrayAggregation", f"Value at '{path}' is not an array")
        if not items:
            raise _fail("ArrayAggregation", f"Array at '{path}' is empty")
        inner = op.get("value_path") if kind == "array_aggregation" else op.get("value")
        numbers = [
            n for item in items if (n := as_number(extract(item, inner) if inner else item)) is not None
        ]
        if not numbers:
            raise _fail("ArrayAggregation", "No numeric values found in array")
        fn = op["aggregation"] if kind == "array_aggregation" else op["using"]
        return metric(
            op["output_metric"] if kind == "array_aggregation" else op["output"], aggregate(numbers, fn)
        )
    if kind == "time_series_aggregation":
        source = op["source_metric"]
        numbers = history(device_id, source, float(op["window"]["duration_secs"]))
        if not numbers:
            raise _fail("TimeSeriesAggregation", f"No data points found for '{device_id}.{source}'")
        return metric(op["output_metric"], aggregate(numbers, op["aggregation"]))
    if kind in ("multi_output", "fork"):
        parts = op["operations"] if kind == "multi_output" else op["branches"]
        return [m for part in parts for m in run(part, device_id, timestamp, data, history)]
    raise _fail(kind, "this kind of operation is not simulated by the twin")
