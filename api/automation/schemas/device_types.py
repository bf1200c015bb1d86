"""Wire shapes of the answers about device types: the serde (lowercase) and Debug (list) forms of
their metrics, parameters and commands, and validation (release 0.9.24). The device-type request
bodies stay in :mod:`api.automation.schemas.devices`, which names them in the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

from hardware.ports.devices import CommandDef, DataType, DeviceType, MetricDef, ParameterDef, Validation


def data_type(t: DataType) -> Any:
    if t.kind == "enum":
        return {"enum": {"options": list(t.options)}}
    if t.kind == "array" and t.element_type:
        return {"array": {"element_type": t.element_type}}
    return t.kind


def data_type_debug(t: DataType) -> str:
    if t.kind == "enum":
        return "Enum { options: [" + ", ".join(json.dumps(o) for o in t.options) + "] }"
    if t.kind == "array" and t.element_type:
        return f"Array {{ element_type: {t.element_type.capitalize()} }}"
    return t.kind.capitalize()


def with_optional(body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """``body`` with those of ``extra`` that are set (serde's ``skip_serializing_if = "Option::is_none"``)."""
    body.update({k: v for k, v in extra.items() if v is not None})
    return body


def metric_def(m: MetricDef) -> dict[str, Any]:
    body = {"name": m.name, "display_name": m.display_name, "data_type": data_type(m.data_type)}
    return with_optional({**body, "unit": m.unit}, min=m.min, max=m.max) | {"required": m.required}


_RENDERED: dict[tuple[int, int], tuple[Any, Any, list[dict[str, Any]], list[dict[str, Any]]]] = {}
_RENDERED_MAX = 64


def type_defs(
    metrics: tuple[MetricDef, ...], commands: tuple[CommandDef, ...]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The wire forms of a device type's metrics and commands, rendered once per pair of tuples (a
    type's definitions are frozen: a type that changes is a new object, so it is rendered afresh).
    The lists are shared between answers: hand them to the serialiser, never change them."""
    key = (id(metrics), id(commands))
    found = _RENDERED.get(key)
    if found is not None and found[0] is metrics and found[1] is commands:
        return found[2], found[3]
    rendered = [metric_def(m) for m in metrics], [command_def(c) for c in commands]
    if len(_RENDERED) >= _RENDERED_MAX:
        _RENDERED.clear()
    _RENDERED[key] = (metrics, commands, *rendered)
    return rendered


def param_def(p: ParameterDef) -> dict[str, Any]:
    body = {
        "name": p.name,
        "display_name": p.display_name,
        "data_type": data_type(p.data_type),
        "unit": p.unit,
        "allowed_values": list(p.allowed_values),
        "required": p.required,
        "help_text": p.help_text,
        "validation": [],
    }
    return with_optional(body, default_value=p.default_value, min=p.min, max=p.max)


def command_def(c: CommandDef) -> dict[str, Any]:
    return {
        "name": c.name,
        "display_name": c.display_name,
        "description": c.description,
        "payload_template": c.payload_template,
        "parameters": [param_def(p) for p in c.parameters],
        "fixed_values": dict(c.fixed_values),
        "samples": [],
        "parameter_groups": [],
    }


def device_type_full(t: DeviceType) -> dict[str, Any]:
    body = {
        "device_type": t.device_type,
        "name": t.name,
        "description": t.description,
        "categories": list(t.categories),
        "mode": t.mode,
        "metrics": [metric_def(m) for m in t.metrics],
        "uplink_samples": list(t.uplink_samples),
        "commands": [command_def(c) for c in t.commands],
        "metric_count": len(t.metrics),
        "command_count": len(t.commands),
    }
    return with_optional(
        body, default_offline_timeout_secs=t.default_offline_timeout_secs, store_raw=t.store_raw
    )


def device_type_item(t: DeviceType) -> dict[str, Any]:
    metrics = [
        with_optional(
            {"name": m.name, "display_name": m.display_name, "data_type": data_type_debug(m.data_type)},
            unit=m.unit or None,
            min=m.min,
            max=m.max,
        )
        for m in t.metrics
    ]
    commands = [
        {
            "name": c.name,
            "display_name": c.display_name,
            "parameters": [
                {"name": p.name, "display_name": p.display_name, "data_type": data_type_debug(p.data_type)}
                for p in c.parameters
            ],
        }
        for c in t.commands
    ]
    return {
        "device_type": t.device_type,
        "name": t.name,
        "description": t.description,
        "categories": list(t.categories),
        "mode": t.mode,
        "metrics": metrics,
        "commands": commands,
        "metric_count": len(t.metrics),
        "command_count": len(t.commands),
    }


def device_type_list(types: tuple[DeviceType, ...]) -> dict[str, Any]:
    return {"device_types": [device_type_item(t) for t in types], "count": len(types)}


def validation(v: Validation) -> dict[str, Any]:
    body: dict[str, Any] = {"valid": v.valid, "warnings": list(v.warnings), "message": v.message}
    if v.errors:
        body["errors"] = list(v.errors)
    return body
