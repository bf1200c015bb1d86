"""Wire shapes of the automations and transforms routes (the same in both releases).

A transform is shown two ways: the list DTO (``type`` always ``transform``, ``complexity`` the
score) and the stored definition (the server's ``TransformAutomation``: flattened metadata, then
``scope``, ``intent?``, ``js_code?``, ``output_prefix``, ``complexity``, ``operations?``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hardware.ports.automations import (
    Execution,
    Intent,
    Transform,
    TransformedMetric,
    TransformOutput,
    TransformResult,
)


class Body(BaseModel):
    """serde's reading of a body: strict types, unknown fields ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)


class CreateAutomation(Body):
    name: str
    description: str = ""
    type: Literal["transform"] | None = None
    enabled: bool = True
    definition: Any
    """Required, any JSON (``null`` too): the handler reads it as a transform."""


class UpdateAutomation(Body):
    name: str | None = None
    description: str | None = None
    definition: Any = None
    enabled: bool | None = None


class SetStatus(Body):
    enabled: bool


class AnalyzeIntent(Body):
    description: str


class ProcessData(Body):
    device_id: str
    device_type: str | None = None
    data: Any
    timestamp: int | None = None
    """Read and not used: outputs carry the time of the run."""


class TestCode(Body):
    code: str
    input_data: Any
    output_prefix: str = "transform"


def automation_dto(t: Transform) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "type": "transform",
        "enabled": t.enabled,
        "execution_count": t.execution_count,
        "last_executed": t.last_executed,
        "complexity": t.complexity_score,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    }


def definition(t: Transform) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "enabled": t.enabled,
        "execution_count": t.execution_count,
        "last_executed": t.last_executed,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "scope": t.scope,
    }
    if t.intent is not None:
        out["intent"] = t.intent
    if t.js_code is not None:
        out["js_code"] = t.js_code
    out["output_prefix"] = t.output_prefix
    out["complexity"] = t.complexity
    if t.operations is not None:
        out["operations"] = list(t.operations)
    return out


def page(rows: list[Transform], limit: int | None, offset: int | None) -> dict[str, Any]:
    """``GET /automations``: newest change first; ``total`` and ``pagination`` only when asked to page."""
    rows = sorted(rows, key=lambda t: t.updated_at, reverse=True)
    size, skip = min(1000 if limit is None else limit, 1000), offset or 0
    chosen = rows[skip : skip + size]
    out: dict[str, Any] = {"automations": [automation_dto(t) for t in chosen], "count": len(chosen)}
    if limit is not None or offset is not None:
        out["total"] = len(rows)
        out["pagination"] = {"limit": size, "offset": skip, "has_more": skip + size < len(rows)}
    return out


def rfc3339(unix: float) -> str:
    """chrono's ``to_rfc3339``: ``+00:00``, the fraction in 0, 3, 6 or 9 digits as needed."""
    whole = int(unix // 1)
    nanos = round((unix - whole) * 1e9)
    text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    for digits in (0, 3, 6, 9):
        if nanos % 10 ** (9 - digits) == 0:
            break
    fraction = f".{nanos // 10 ** (9 - digits):0{digits}d}" if digits else ""
    return f"{text}{fraction}+00:00"


def execution(e: Execution) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": e.id,
        "automation_id": e.automation_id,
        "automation_type": "transform",
        "started_at": e.started_at,
        "ended_at": e.ended_at,
        "status": e.status,
        "error": e.error,
    }
    if e.output is not None:
        out["output"] = dict(e.output)
    return out


def intent(i: Intent) -> dict[str, Any]:
    return {
        "recommended_type": i.recommended_type,
        "confidence": i.confidence,
        "reasoning": i.reasoning,
        "suggested_automation": None,
        "warnings": [],
    }


def metric(m: TransformedMetric) -> dict[str, Any]:
    return {
        "device_id": m.device_id,
        "transform_id": m.transform_id,
        "metric": m.metric,
        "value": m.value,
        "timestamp": m.timestamp,
        "quality": m.quality,
    }


def result(r: TransformResult) -> dict[str, Any]:
    return {"metrics": [metric(m) for m in r.metrics], "count": len(r.metrics), "warnings": list(r.warnings)}


def code_output(metrics: tuple[TransformedMetric, ...], prefix: str) -> dict[str, Any]:
    """The test run's metrics keyed by name without ``<prefix>.``."""
    return {m.metric.removeprefix(f"{prefix}."): m.value for m in metrics}


def output_info(o: TransformOutput) -> dict[str, Any]:
    return {
        "transform_id": o.transform_id,
        "transform_name": o.transform_name,
        "metric_name": o.metric_name,
        "data_source_id": o.data_source_id,
        "display_name": o.display_name,
        "data_type": o.data_type,
        "unit": o.unit,
        "description": o.description,
        "last_update": o.last_update,
        "registered_at": o.registered_at,
        "enabled": o.enabled,
    }


def data_source(o: TransformOutput) -> dict[str, Any]:
    """An output in the extensions' data-source shape."""
    return {
        "id": o.data_source_id,
        "transform_id": o.transform_id,
        "transform_name": o.transform_name,
        "metric_name": o.metric_name,
        "display_name": o.display_name,
        "data_type": o.data_type,
        "unit": o.unit,
        "description": o.description,
        "last_update": o.last_update,
    }
