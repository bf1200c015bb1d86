"""Wire shapes of devices, device types (request bodies), drafts, commands (release 0.9.24); the
answers about device types are in :mod:`api.automation.schemas.device_types`, the webhook in
:mod:`api.automation.schemas.webhook`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from api.automation.schemas.device_types import param_def, type_defs, with_optional
from hardware.ports.devices import (
    Approval,
    CommandDef,
    CommandRecord,
    CurrentValues,
    DataType,
    Device,
    DeviceDetail,
    DevicePage,
    DeviceType,
    Draft,
    MetricDef,
    ParameterDef,
)
from hardware.ports.errors import InvalidInput

PLUGIN_ID = "internal-mqtt"
PLUGIN_NAME = "Internal MQTT"


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


# Requests -----------------------------------------------------------------------------------
class CreateDeviceRequest(_Body):
    device_type: str
    device_id: str | None = None
    name: str
    adapter_type: str
    connection_config: dict[str, Any]
    offline_timeout_secs: int | None = None


class UpdateDeviceRequest(_Body):
    name: str | None = None
    adapter_type: str | None = None
    connection_config: dict[str, Any] | None = None
    adapter_id: str | None = None
    offline_timeout_secs: int | None = None


class CommandRequest(_Body):
    params: dict[str, Any] = Field(default_factory=dict)


class CurrentBatchRequest(_Body):
    device_ids: list[str]


class MetricWriteRequest(_Body):
    metric: str
    value: Any
    timestamp: float | None = None
    """Milliseconds (the vendor divides by 1000 before storing)."""


def _data_type(raw: str | dict[str, Any]) -> DataType:
    if isinstance(raw, str):
        return DataType(raw.lower())
    if len(raw) == 1:
        (kind, body), *_ = raw.items()
        body = body or {}
        if kind.lower() == "enum":
            return DataType("enum", options=tuple(str(o) for o in body.get("options", ())))
        if kind.lower() == "array":
            element = body.get("element_type")
            return DataType("array", element_type=None if element is None else _data_type(element).kind)
    raise InvalidInput(f"Invalid data_type: {json.dumps(raw)}", field="data_type")


class MetricBody(_Body):
    name: str
    display_name: str | None = None
    data_type: str | dict[str, Any] = "float"
    unit: str = ""
    min: float | None = None
    max: float | None = None
    required: bool = False

    def to_port(self) -> MetricDef:
        return MetricDef(
            self.name,
            self.display_name or self.name,
            _data_type(self.data_type),
            self.unit,
            self.min,
            self.max,
            self.required,
        )


class ParameterBody(_Body):
    name: str
    display_name: str | None = None
    data_type: str | dict[str, Any] = "string"
    default_value: Any = None
    min: float | None = None
    max: float | None = None
    unit: str = ""
    allowed_values: list[Any] = Field(default_factory=list)
    required: bool = False
    help_text: str = ""

    def to_port(self) -> ParameterDef:
        return ParameterDef(
            self.name,
            self.display_name or self.name,
            _data_type(self.data_type),
            self.default_value,
            self.min,
            self.max,
            self.unit,
            tuple(self.allowed_values),
            self.required,
            self.help_text,
        )


class CommandBody(_Body):
    name: str
    display_name: str | None = None
    description: str = ""
    payload_template: str = ""
    parameters: list[ParameterBody] = Field(default_factory=list)
    fixed_values: dict[str, Any] = Field(default_factory=dict)

    def to_port(self) -> CommandDef:
        return CommandDef(
            self.name,
            self.display_name or self.name,
            self.description,
            self.payload_template,
            tuple(p.to_port() for p in self.parameters),
            dict(self.fixed_values),
        )


class DeviceTypeBody(_Body):
    device_type: str
    name: str
    description: str = ""
    categories: list[str] = Field(default_factory=list)
    mode: str = "simple"
    metrics: list[MetricBody] = Field(default_factory=list)
    uplink_samples: list[Any] = Field(default_factory=list)
    commands: list[CommandBody] = Field(default_factory=list)
    default_offline_timeout_secs: int | None = None
    store_raw: bool | None = None

    def to_port(self) -> DeviceType:
        return DeviceType(
            device_type=self.device_type,
            name=self.name,
            description=self.description,
            categories=tuple(self.categories),
            mode=self.mode,
            metrics=tuple(m.to_port() for m in self.metrics),
            commands=tuple(c.to_port() for c in self.commands),
            uplink_samples=tuple(self.uplink_samples),
            default_offline_timeout_secs=self.default_offline_timeout_secs,
            store_raw=self.store_raw,
        )


class NewTypeBody(_Body):
    device_type: str
    name: str
    description: str = ""

    def to_port(self) -> DeviceType:
        return DeviceType(device_type=self.device_type, name=self.name, description=self.description)


class RejectRequest(_Body):
    reason: str


class ApproveRequest(_Body):
    existing_type: str | None = None
    new_type: NewTypeBody | None = None
    device_name: str | None = None


# Devices ------------------------------------------------------------------------------------
def rfc3339(unix: float | None) -> str | None:
    """``2026-01-01T00:00:10+00:00`` (chrono's ``to_rfc3339``), or ``None``."""
    if unix is None:
        return None
    return datetime.fromtimestamp(unix, UTC).isoformat()


def _device_core(d: Device) -> dict[str, Any]:
    """The fields every device shape shares (list item, detail and ``/current``)."""
    return {
        "id": d.device_id,
        "device_id": d.device_id,
        "name": d.name,
        "device_type": d.device_type,
        "adapter_type": d.adapter_type,
        "status": d.status,
        "last_seen": rfc3339(d.last_seen),
        "online": d.online,
        "transport_connected": d.online,
        "plugin_id": d.adapter_id or PLUGIN_ID,
        "plugin_name": d.adapter_id or PLUGIN_NAME,
        "effective_offline_timeout_secs": d.effective_offline_timeout_secs,
    }


def device_dto(d: Device) -> dict[str, Any]:
    body: dict[str, Any] = {
        **_device_core(d),
        "metric_count": d.metric_count,
        "command_count": d.command_count,
        "config": {k: v if isinstance(v, str) else json.dumps(v) for k, v in d.connection_config.items()},
    }
    if d.adapter_id is not None:
        body["adapter_id"] = d.adapter_id
    if d.offline_timeout_secs is not None:
        body["offline_timeout_secs"] = d.offline_timeout_secs
    return body


def device_page(p: DevicePage) -> dict[str, Any]:
    pages = -(-p.total // p.limit)
    return {
        "devices": [device_dto(d) for d in p.devices],
        "count": len(p.devices),
        "pagination": {
            "page": p.page,
            "limit": p.limit,
            "total": p.total,
            "total_pages": pages,
            "has_next": p.page < pages,
            "has_prev": p.page > 1,
        },
    }


def device_detail(detail: DeviceDetail) -> dict[str, Any]:
    metrics, commands = type_defs(detail.metrics, detail.commands)
    return {
        **device_dto(detail.device),
        "connection_config": dict(detail.device.connection_config),
        "current_values": dict(detail.current_values),
        "metrics": metrics,
        "commands": commands,
    }


_RENDERED: dict[str, tuple[DeviceDetail, orjson.Fragment]] = {}
MAX_RENDERED = 10_000


def device_detail_json(detail: DeviceDetail) -> orjson.Fragment:
    """:func:`device_detail` rendered, as a fragment of a larger JSON body. The backend hands out
    the same (immutable) detail while the device is unchanged, so the same detail object is
    rendered once."""
    device_id = detail.device.device_id
    kept = _RENDERED.get(device_id)
    if kept is not None and kept[0] is detail:
        return kept[1]
    fragment = orjson.Fragment(orjson.dumps(device_detail(detail)))
    if len(_RENDERED) >= MAX_RENDERED:
        _RENDERED.clear()
    _RENDERED[device_id] = (detail, fragment)
    return fragment


def current_values(c: CurrentValues) -> dict[str, Any]:
    d = c.device
    device = {
        **_device_core(d),
        "transport_changed_at": None,
        "offline_timeout_secs": d.offline_timeout_secs,
        "adapter_id": d.adapter_id,
    }
    metrics = {
        m.name: {
            "name": m.name,
            "display_name": m.display_name,
            "unit": m.unit,
            "data_type": m.data_type,
            "value": m.value,
            "is_virtual": m.is_virtual,
        }
        for m in c.metrics
    }
    commands = [
        {
            "name": cmd.name,
            "display_name": cmd.display_name,
            "parameters": [param_def(p) for p in cmd.parameters],
        }
        for cmd in c.commands
    ]
    return {"device": device, "metrics": metrics, "commands": commands}


def current_batch(found: list[CurrentValues]) -> dict[str, Any]:
    """``POST /devices/current-batch`` (appendix): each found device's ``/current`` values by id."""
    devices = {
        c.device.device_id: {
            "device_id": c.device.device_id,
            "current_values": {m.name: m.value for m in c.metrics},
        }
        for c in found
    }
    return {"devices": devices, "count": len(devices)}


def webhook_url(device_id: str, network: dict[str, Any]) -> dict[str, Any]:
    """``GET /devices/:id/webhook-url`` (reference §4), from the server's network info."""
    server = network["server_url"]
    body: dict[str, Any] = {
        "device_id": device_id,
        "webhook_url": f"{server}/api/devices/{device_id}/webhook",
        "alternative_url": f"{server}/api/devices/webhook",
        "method": "POST",
        "content_type": "application/json",
        "payload_example": {"timestamp": 1767225600, "quality": 1.0, "data": {"temperature": 21.5}},
        "url_source": network["server_url_source"],
    }
    if network["server_url_source"] == "fallback":
        body["hint"] = "Set NEOMIND_SERVER_URL when devices reach this server through another address"
    return body


def command_history(device_id: str, records: tuple[CommandRecord, ...]) -> dict[str, Any]:
    """``GET /devices/:id/commands`` (appendix), newest first."""
    commands = [
        {
            "command_id": r.command_id,
            "command_name": r.command_name,
            "parameters": dict(r.parameters),
            "status": r.status,
            "result": r.result,
            "error": r.error,
            "created_at": int(r.created_at),
            "completed_at": None if r.completed_at is None else int(r.completed_at),
        }
        for r in records
    ]
    return {"device_id": device_id, "commands": commands, "count": len(commands)}


# Drafts -------------------------------------------------------------------------------------
def draft_dto(d: Draft) -> dict[str, Any]:
    body = {
        "id": d.id,
        "device_id": d.device_id,
        "source": d.source,
        "status": d.status,
        "sample_count": d.sample_count,
        "max_samples": d.max_samples,
        "discovered_at": int(d.discovered_at),
        "updated_at": int(d.updated_at),
    }
    return with_optional(
        body, original_topic=d.original_topic, generated_type=d.generated_type, error_message=d.error_message
    )


def draft_list(drafts: tuple[Draft, ...]) -> dict[str, Any]:
    return {"items": [draft_dto(d) for d in drafts], "count": len(drafts)}


def approval(a: Approval) -> dict[str, Any]:
    return {
        "original_device_id": a.original_device_id,
        "system_device_id": a.system_device_id,
        "device_type": a.device_type,
        "recommended_topic": a.recommended_topic,
        "registered": True,
        "message": a.message,
    }
