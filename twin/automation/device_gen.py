"""Device-type generation from examples, as the server does it without a model: flattening JSON
samples into dotted metric paths, data types, display names, units, semantic types and device
categories (the server's keyword rules), and downlink commands parsed from example messages."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from hardware.ports.devices import CommandDef, DataType, DeviceType, MetricDef, ParameterDef
from hardware.ports.errors import InvalidInput

COMMAND_KEYS = ("cmd", "command", "action", "type", "method", "op")
UNITS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("battery", "batt"), "%"), (("voltage", "volt"), "V"), (("current", "amp"), "A"), (("power",), "W"),
    (("energy",), "kWh"), (("temp",), "°C"), (("humid",), "%"), (("press",), "hPa"),
    (("lux", "light", "illuminance"), "lx"), (("speed", "velocity"), "m/s"), (("freq", "hz"), "Hz"),
    (("distance", "position"), "m"), (("weight", "mass"), "kg"), (("rssi", "signal", "snr"), "dBm"),
    (("level", "pct", "percent"), "%"),
)  # fmt: skip
SEMANTIC: tuple[tuple[tuple[str, ...], str], ...] = (
    (("temp",), "temperature"), (("hum",), "humidity"), (("press",), "pressure"),
    (("lux", "light", "illuminance"), "light"), (("motion", "occupancy", "presence"), "motion"),
    (("switch", "relay", "state"), "switch"), (("power", "energy", "watt"), "power"), (("batt",), "battery"),
    (("speed", "rpm"), "speed"), (("co2", "carbon"), "co2"), (("pm25", "pm2.5", "pm_2_5"), "pm25"),
)  # fmt: skip
SEMANTIC_UNITS = {
    "temperature": "°C", "humidity": "%", "pressure": "kPa", "light": "lux", "power": "W", "energy": "kWh",
    "co2": "ppm", "pm25": "μg/m³", "speed": "RPM", "battery": "%",
}  # fmt: skip
ZH_NAMES = {
    "temperature": "温度", "humidity": "湿度", "pressure": "气压", "light": "光照", "motion": "运动检测",
    "switch": "开关状态", "power": "功率", "battery": "电池电量", "speed": "转速", "co2": "二氧化碳",
    "pm25": "PM2.5",
}  # fmt: skip


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a JSON value by dotted path (array items by index), sorted by path."""
    out: dict[str, Any] = {}
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            path = f"{prefix}.{key}" if prefix else str(key)
            out.update(flatten(item, path) if isinstance(item, dict | list) else {path: item})
    elif prefix:
        out[prefix] = value
    return dict(sorted(out.items()))


def kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return "float" if isinstance(value, float) else "string"


def display_name(name: str) -> str:
    parts = [p[:1].upper() + p[1:] for p in re.split(r"[._-]", name) if p]
    return " ".join(parts) or name


def _first(rules: tuple[tuple[tuple[str, ...], str], ...], name: str, default: str) -> str:
    lower = name.lower()
    return next((label for words, label in rules if any(w in lower for w in words)), default)


def unit_of(name: str) -> str:
    return _first(UNITS, name, "")


def semantic_of(name: str) -> str:
    return _first(SEMANTIC, name, "unknown")


def category_of(metrics: list[tuple[str, str]]) -> str:
    """The server's category from (path, semantic type) pairs (``DeviceCategory`` display names)."""
    kinds = {s for _, s in metrics}
    paths = [p for p, _ in metrics]
    if any("image" in p or "frame" in p for p in paths) and any(
        "detection" in p or "object" in p for p in paths
    ):
        return "camera"
    if {"temperature", "humidity"} <= kinds:
        return "multi_sensor"
    for semantic, category in (("temperature", "temperature_sensor"), ("humidity", "humidity_sensor"),
                               ("motion", "motion_sensor"), ("light", "light_sensor"), ("switch", "switch"),
                               ("power", "energy_monitor")):  # fmt: skip
        if semantic in kinds:
            return category
    return "unknown"


def _slug(text: str) -> str:
    return "_".join(p for p in re.sub(r"[^0-9A-Za-z_]", "_", text.lower()).split("_") if p)


def _slot(key: str) -> str:
    """A field of a generated payload template, as the server writes it: ``"key": ${{key}}``."""
    return f'"{key}": ${{{{{key}}}}}'


def _param(name: str, value: Any) -> ParameterDef:
    default = value if isinstance(value, bool | int | float | str) else None
    return ParameterDef(name, display_name(name), DataType(kind(value)), default_value=default)


def commands_of(value: Any) -> list[CommandDef]:
    if isinstance(value, list):
        return [c for item in value for c in commands_of(item)]
    if not isinstance(value, dict):
        param = ParameterDef("value", "Value", DataType(kind(value)))
        return [CommandDef("set_value", "Set Value", "", '{"value": "${value}"}', (param,))]
    first = next(iter(value), "command")
    name = first
    if first in COMMAND_KEYS and isinstance(value.get(first), str):
        name = _slug(value[first])
    elif (
        first in COMMAND_KEYS
        and isinstance(value.get(first), int | float)
        and not isinstance(value[first], bool)
    ):
        name = str(value[first])
    fields, params = [], []
    for key, item in value.items():
        if key == "params" and isinstance(item, dict):
            params += [_param(k, v) for k, v in item.items()]
            fields.append('"params": {' + ", ".join(_slot(k) for k in item) + "}")
        else:
            fields.append(_slot(key))
            params.append(_param(key, item))
    return [CommandDef(name, display_name(name), "", "{" + ", ".join(fields) + "}", tuple(params))]


def parse_downlink(example: str) -> list[CommandDef]:
    """One JSON value, or several objects written one after another."""
    text = example.strip()
    try:
        return commands_of(json.loads(text))
    except ValueError:
        pass
    decoder, commands, index, rest = json.JSONDecoder(), [], 0, text
    while rest.strip():
        rest = rest.strip()
        start = min((i for i in (rest.find("{"), rest.find("[")) if i >= 0), default=-1)
        try:
            if start < 0:
                raise ValueError("No JSON object found")
            value, end = decoder.raw_decode(rest, start)
        except ValueError as err:
            raise InvalidInput(
                f"Failed to parse JSON object #{index + 1}: {err}. Remaining: '{rest[:50]}'",
                field="downlink_example",
            ) from err
        commands += commands_of(value)
        rest, index = rest[end:], index + 1
        if index > 100:
            raise InvalidInput("Too many JSON objects (max 100)", field="downlink_example")
    if not commands:
        raise InvalidInput("No valid commands found in downlink example", field="downlink_example")
    return commands


def _check_length(value: str, field: str, low: int, high: int) -> None:
    if not low <= len(value) <= high:
        raise InvalidInput(f"{field} must be between {low} and {high} characters", field=field)


def generate_mdl(device_name: str, description: str, uplink: str, downlink: str) -> DeviceType:
    if not device_name.strip():
        raise InvalidInput("device_name is required", field="device_name")
    _check_length(device_name, "device_name", 1, 100)
    if description:
        _check_length(description, "description", 0, 500)
    for value, field in ((uplink, "uplink_example"), (downlink, "downlink_example")):
        if value:
            _check_length(value, field, 0, 10240)
    metrics: list[MetricDef] = []
    if uplink.strip():
        try:
            sample = json.loads(uplink)
        except ValueError as err:
            raise InvalidInput(f"Invalid uplink example JSON: {err}", field="uplink_example") from err
        leaves = flatten(sample)
        if not leaves:
            metrics = [MetricDef("value", "Value", DataType(kind(sample)))]
        metrics += [MetricDef(p, display_name(p), DataType(kind(v)), unit_of(p)) for p, v in leaves.items()]
    commands = parse_downlink(downlink) if downlink.strip() else []
    return DeviceType(
        _slug(device_name), device_name, description, ("sensor",), "full", tuple(metrics), tuple(commands)
    )


def discovered(samples: list[Any], min_coverage: float = 0.0) -> list[dict[str, Any]]:
    """Metrics found in JSON samples: path, data type of the first value, coverage, semantic type."""
    seen: dict[str, list[Any]] = {}
    objects = [s for s in samples if isinstance(s, Mapping)]
    for sample in objects:
        for path, value in flatten(dict(sample)).items():
            seen.setdefault(path, []).append(value)
    out = []
    for path, values in sorted(seen.items()):
        coverage = len(values) / len(objects)
        if coverage < min_coverage:
            continue
        semantic = semantic_of(path)
        unit = SEMANTIC_UNITS.get(semantic) or unit_of(path) or None
        out.append({"name": path.replace(".", "_"), "path": path, "data_type": kind(values[0]),
                    "semantic_type": semantic, "display_name": display_name(path), "unit": unit})  # fmt: skip
    return out
