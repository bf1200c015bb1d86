"""Device type templates (the vendor's MDL): built-in ones generated from the simulated sensor
groups, and those clients register, kept in durable state."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import CommandDef, DataType, DeviceType, MetricDef, ParameterDef, Validation
from hardware.ports.errors import Conflict, InvalidInput, NotFound

if TYPE_CHECKING:
    from twin.engine import Engine
    from twin.fleet import SensorGroup
    from twin.sensors import SensorFleet

DATA_TYPES = ("integer", "float", "string", "boolean", "binary", "array", "enum")

# Every simulated sensor understands these (the sampler does not change: commands are acknowledged).
SENSOR_COMMANDS = (
    CommandDef(
        name="set_interval",
        display_name="Set reporting interval",
        description="Change how often the device reports",
        payload_template='{"cmd":"set_interval","interval":${interval}}',
        parameters=(
            ParameterDef(
                "interval", "Interval", DataType("integer"), default_value=10, min=1, max=86400, unit="s"
            ),
        ),
    ),
    CommandDef(name="reboot", display_name="Reboot", payload_template='{"cmd":"reboot"}'),
    CommandDef(name="identify", display_name="Identify", payload_template='{"cmd":"identify"}'),
)


_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def render_payload(command: CommandDef, params: Mapping[str, Any], request_id: str) -> str:
    """The downlink payload of ``command`` (reference §4): its ``payload_template`` with every
    ``${name}`` replaced from the parameters' defaults, then the caller's ``params``, then the
    command's ``fixed_values``, and ``${request_id}`` filled in. Strings go in as they are (a
    template quotes them itself: ``"${mode}"``), anything else as JSON (``${interval}`` → ``30``).
    Without a template the payload is ``{"command", "params", "request_id"}``. A placeholder with
    no value is left as written, as the device would see it."""
    values: dict[str, Any] = {
        p.name: p.default_value for p in command.parameters if p.default_value is not None
    }
    values.update(params)
    values.update(command.fixed_values)
    values["request_id"] = request_id
    if not command.payload_template:
        body = {"command": command.name, "params": dict(params), "request_id": request_id}
        return json.dumps(body, separators=(",", ":"))

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            return match.group(0)
        value = values[name]
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))

    return _PLACEHOLDER.sub(fill, command.payload_template)


def sensor_type(group: SensorGroup) -> DeviceType:
    return DeviceType(
        device_type=group.device_type,
        name=group.device_type.replace("_", " ").title(),
        description=f"Simulated {group.device_type} reporting every {group.period:g} s",
        categories=("sensor",),
        metrics=tuple(
            MetricDef(m.name, m.name.replace("_", " ").title(), DataType("float"), unit=m.unit)
            for m in group.metrics
        ),
        commands=SENSOR_COMMANDS,
        built_in=True,
    )


# Documents ----------------------------------------------------------------------------------
def _data_type(doc: dict[str, Any]) -> DataType:
    return DataType(doc["kind"], tuple(doc.get("options") or ()), doc.get("element_type"))


def _param(doc: dict[str, Any]) -> ParameterDef:
    return ParameterDef(
        **{**doc, "data_type": _data_type(doc["data_type"]), "allowed_values": tuple(doc["allowed_values"])}
    )


def _command(doc: dict[str, Any]) -> CommandDef:
    return CommandDef(**{**doc, "parameters": tuple(_param(p) for p in doc["parameters"])})


def to_doc(t: DeviceType) -> dict[str, Any]:
    return dataclasses.asdict(t)


def from_doc(doc: dict[str, Any]) -> DeviceType:
    return DeviceType(
        **{
            **doc,
            "categories": tuple(doc["categories"]),
            "metrics": tuple(
                MetricDef(**{**m, "data_type": _data_type(m["data_type"])}) for m in doc["metrics"]
            ),
            "commands": tuple(_command(c) for c in doc["commands"]),
            "uplink_samples": tuple(doc["uplink_samples"]),
        }
    )


def validate(t: DeviceType) -> Validation:
    errors: list[str] = []
    warnings: list[str] = []
    if not t.device_type.strip():
        errors.append("device_type 不能为空")
    if not t.name.strip():
        errors.append("name 不能为空")
    if t.mode not in ("simple", "full"):
        errors.append(f"未知的 mode: {t.mode}")
    seen: set[str] = set()
    for m in t.metrics:
        if not m.name:
            errors.append("指标名称不能为空")
        if m.name in seen:
            errors.append(f"重复的指标: {m.name}")
        seen.add(m.name)
        if m.data_type.kind not in DATA_TYPES:
            errors.append(f"指标 {m.name} 的数据类型无效: {m.data_type.kind}")
        if m.min is not None and m.max is not None and m.min > m.max:
            errors.append(f"指标 {m.name} 的 min 大于 max")
    names = [c.name for c in t.commands]
    if len(set(names)) != len(names):
        errors.append("重复的命令")
    for c in t.commands:
        if not c.name:
            errors.append("命令名称不能为空")
        for p in c.parameters:
            if p.data_type.kind not in DATA_TYPES:
                errors.append(f"命令 {c.name} 的参数 {p.name} 的数据类型无效: {p.data_type.kind}")
    timeout = t.default_offline_timeout_secs
    if timeout is not None and not 30 <= timeout <= 86_400:
        errors.append("default_offline_timeout_secs 必须在 30 到 86400 之间")
    if not t.metrics:
        warnings.append("未定义任何指标")
    message = "设备类型定义有效" if not errors else f"设备类型定义无效: {len(errors)} 个错误"
    return Validation(not errors, tuple(errors), tuple(warnings), message)


class DeviceTypeRegistry:
    """Built-in types (one per simulated sensor group) under client-registered ones of the same id."""

    def __init__(self, world: Engine, *, sensors: Mapping[str, SensorFleet]) -> None:
        """``sensors``: the simulated sensor groups by device type."""
        self.world = world
        self.docs = world.store.collection("device_types")
        self.built_in = {t: sensor_type(fleet.group) for t, fleet in sensors.items()}

    def find(self, device_type: str) -> DeviceType | None:
        doc = self.docs.get(device_type)
        return from_doc(doc) if doc is not None else self.built_in.get(device_type)

    def get(self, device_type: str) -> DeviceType:
        found = self.find(device_type)
        if found is None:
            raise NotFound("DeviceType not found", resource="device_type")
        return found

    def list(self) -> tuple[DeviceType, ...]:
        stored = {k: from_doc(doc) for k, doc in self.docs.items()}
        built_in = [t for k, t in self.built_in.items() if k not in stored]
        return (*built_in, *stored.values())

    def validate(self, template: DeviceType) -> Validation:
        return validate(template)

    def create(self, template: DeviceType) -> DeviceType:
        result = validate(template)
        if not result.valid:
            raise InvalidInput(f"Invalid device type: {'; '.join(result.errors)}", field="device_type")
        template = dataclasses.replace(template, built_in=False)
        self.docs.put(template.device_type, to_doc(template))
        return template

    def delete(self, device_type: str) -> None:
        if self.docs.delete(device_type):
            return
        if device_type in self.built_in:
            raise Conflict("A built-in device type cannot be deleted", resource="device_type")
        raise NotFound("DeviceType not found", resource="device_type")
