"""Wire shapes of the extensions area: request bodies, the ExtensionDto, stream capabilities and
``push_output`` frames (text: JSON with base64 data; binary: kind u8 = 1, version u8 = 1,
sequence u64 BE, meta length u32 BE, meta JSON, payload)."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from hardware.ports.extensions import Extension, PushFrame, StreamCapability

BINARY_KIND = 1
BINARY_VERSION = 1
HEADER = struct.Struct(">BBQI")


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CommandBody(_Body):
    command: str
    args: dict[str, Any] = {}


class EnabledBody(_Body):
    enabled: StrictBool


class ConfigBody(_Body):
    config: dict[str, Any]


class RegisterBody(_Body):
    file_path: str
    """A manifest of the (virtual) extensions directory: its file name or full path there."""


class InstallBody(_Body):
    component_id: str | None = None
    id: str | None = None


# Wire shapes -----------------------------------------------------------------------------------
def extension_info(e: Extension) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "version": e.version,
        "description": e.description,
        "author": e.author,
        "extension_type": e.extension_type,
        "state": e.state,
        "file_path": e.file_path,
        "loaded_at": int(e.loaded_at),
        "health_status": e.health_status,
        "enabled": e.enabled,
        "commands": [
            {
                "id": c.id,
                "display_name": c.display_name,
                "description": c.description,
                "input_schema": dict(c.input_schema),
                "output_fields": [dict(f) for f in c.output_fields],
                "config": {},
                "disabled": c.id in e.disabled_commands,
            }
            for c in e.commands
        ],
        "metrics": [
            {
                "name": m.name,
                "display_name": m.display_name,
                "data_type": m.data_type,
                "unit": m.unit,
                "required": False,
            }
            for m in e.metrics
        ],
        "config_parameters": dict(e.config),
        "disabled_commands": list(e.disabled_commands),
    }


def dashboard_component(extension_id: str, c: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest component as the real DashboardComponentDto: ``bundle_url`` points at the asset
    route, and what the manifest leaves out takes the real handler's serde defaults."""
    bundle = str(c.get("bundle_path") or c.get("entry", "")).removeprefix("assets/")
    size = {"min_w": 0, "min_h": 0, "default_w": 0, "default_h": 0, "max_w": 0, "max_h": 0}
    binding: dict[str, Any] = {"extension_metric": None, "extension_command": None, "required_fields": []}
    return {
        "type": c.get("type", c.get("id")),
        "name": c.get("name", ""),
        "description": c.get("description", ""),
        "category": c.get("category", ""),
        "icon": c.get("icon"),
        "bundle_url": f"/api/extensions/{extension_id}/assets/{bundle}",
        "export_name": c.get("export_name", "default"),
        "global_name": c.get("global_name"),
        "size_constraints": {**size, "preserve_aspect": None, **(c.get("size_constraints") or {})},
        "has_data_source": bool(c.get("has_data_source", False)),
        "has_display_config": bool(c.get("has_display_config", False)),
        "has_actions": bool(c.get("has_actions", False)),
        "max_data_sources": int(c.get("max_data_sources", 0)),
        "config_schema": c.get("config_schema"),
        "data_source_schema": c.get("data_source_schema"),
        "default_config": c.get("default_config"),
        "variants": list(c.get("variants", ())),
        "data_binding": {**binding, **(c.get("data_binding") or {})},
        "has_device_binding": bool(c.get("has_device_binding", False)),
        "extension_id": extension_id,
    }


def capability_info(c: StreamCapability) -> dict[str, Any]:
    return {
        "direction": c.direction,
        "mode": c.mode,
        "supported_data_types": list(c.supported_data_types),
        "max_chunk_size": c.max_chunk_size,
        "preferred_chunk_size": c.preferred_chunk_size,
        "max_concurrent_sessions": c.max_concurrent_sessions,
        "flow_control": {
            "supports_backpressure": True,
            "window_size": 8,
            "supports_throttling": False,
            "max_rate": None,
        },
    }


def push_envelope(session_id: str, frame: PushFrame) -> dict[str, Any]:
    """The text envelope minus ``data`` and ``sequence``: also the binary frame's meta."""
    meta: dict[str, Any] = {
        "type": "push_output",
        "session_id": session_id,
        "data_type": frame.data_type,
        "timestamp": frame.timestamp,
    }
    if frame.metadata:
        meta["metadata"] = dict(frame.metadata)
    return meta


def binary_frame(session_id: str, frame: PushFrame) -> bytes:
    meta = json.dumps(push_envelope(session_id, frame), separators=(",", ":")).encode()
    return HEADER.pack(BINARY_KIND, BINARY_VERSION, frame.sequence, len(meta)) + meta + frame.data


def text_frame(session_id: str, frame: PushFrame) -> dict[str, Any]:
    return {
        **push_envelope(session_id, frame),
        "sequence": frame.sequence,
        "data": base64.b64encode(frame.data).decode(),
    }
