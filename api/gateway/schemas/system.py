"""Wire shapes of the gateway's system area: health, info, time, stats, password, restart, upgrade status.

Request bodies are read like Gin's ``ShouldBindJSON``: a JSON object whose fields must have the
Go types (a string is never a number, an int is never a float or a bool), ``null`` means unset,
and a ``binding:"required"`` field must be present and non-zero.
"""

from __future__ import annotations

import builtins
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from fastapi.responses import JSONResponse

from api import json_input
from api.gateway.schemas.files import json_object
from hardware.ports.errors import InvalidInput
from hardware.ports.types import (
    ClientTimeSync,
    DeviceTime,
    GatewayInfo,
    OtaStatus,
    TimeConfig,
    TimezoneInfo,
)

BAD_FORMAT = "Invalid request format"


def ok_msg(message: str) -> JSONResponse:
    """The device's ``OKMsg(msg, nil)``: code 0, a custom message, no ``data``."""
    return JSONResponse({"code": 0, "message": message})


class _Body:
    def __init__(self, raw: bytes, detail: str = BAD_FORMAT) -> None:
        self.detail = detail
        try:
            body = json_input.loads(raw, json_input.GO)
        except ValueError as err:
            raise InvalidInput(detail) from err
        if not isinstance(body, dict):
            raise InvalidInput(detail)
        self.body = body

    def _get(self, name: str, kind: type, default: Any, required: bool) -> Any:
        value = self.body.get(name)
        if value is None:
            value = default
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InvalidInput(self.detail)
        if required and not value:
            raise InvalidInput(self.detail)
        return value

    def str(self, name: builtins.str, *, required: builtins.bool = False) -> builtins.str:
        return self._get(name, str, "", required)

    def int(self, name: builtins.str, *, required: builtins.bool = False) -> builtins.int:
        return self._get(name, int, 0, required)

    def bool(self, name: builtins.str) -> builtins.bool | None:
        return self._get(name, bool, None, False)


# Requests --------------------------------------------------------------------------------------
def parse_set_time(raw: bytes) -> str:
    return _Body(raw).str("datetime", required=True)


def parse_client_sync(raw: bytes) -> int:
    return _Body(raw).int("client_timestamp", required=True)


def parse_timezone(raw: bytes) -> str:
    return _Body(raw).str("timezone", required=True)


def parse_ntp(raw: bytes) -> tuple[bool | None, str, int]:
    body = _Body(raw)
    return body.bool("enabled"), body.str("server"), body.int("interval")


def parse_time_config(raw: bytes) -> tuple[str, str, str, str, int, str]:
    body = _Body(raw)
    return (
        body.str("timezone", required=True),
        body.str("time_format"),
        body.str("sync_mode"),
        body.str("ntp_server"),
        body.int("ntp_interval"),
        body.str("manual_datetime"),
    )


def parse_password(raw: bytes) -> tuple[str, str, int]:
    """``{old_password?, new_password, timestamp?}``."""
    body = _Body(raw, "Invalid request body")
    if "new_password" not in body.body or body.body["new_password"] in (None, ""):
        raise InvalidInput(
            "Invalid request body: Key: 'NewPassword' Error:Field validation for 'NewPassword' "
            "failed on the 'required' tag"
        )
    return body.str("old_password"), body.str("new_password"), body.int("timestamp")


GO_KINDS = {str: "string", bool: "bool", list: "array", dict: "object"}
"""encoding/json's name for a JSON value's kind (``number`` otherwise)."""
LOG_RECORD = {
    **dict.fromkeys(("event_type", "level", "category", "source", "user", "message"), "string"),
    "data": "map[string]interface {}",
}
"""``handlers.LogRecord``'s JSON fields and Go types."""
LOG_RECORD_REQUIRED = {"event_type": "EventType", "source": "Source", "message": "Message"}


def unmarshal_error(value: Any, struct_field: str, go_type: str) -> InvalidInput:
    """encoding/json's ``UnmarshalTypeError``: a number meant for an int is named with its literal."""
    kind = GO_KINDS.get(type(value)) or (f"number {value}" if go_type == "int" else "number")
    field = f"Go struct field {struct_field} of type {go_type}"
    return InvalidInput(f"json: cannot unmarshal {kind} into {field}")


def validation_error(struct: str, field: str, tag: str) -> str:
    """One line of gin's validator error."""
    return f"Key: '{struct}.{field}' Error:Field validation for '{field}' failed on the '{tag}' tag"


def parse_log_record(raw: bytes) -> dict[str, Any]:
    """``EventLogHandler.Create`` binds ``LogRecord``: ``event_type``, ``source`` and ``message``
    required; the strings and ``data`` (an object, ``{}`` when absent) that were sent."""
    body = json_object(raw)
    for key, go_type in LOG_RECORD.items():
        value = body.get(key)
        if value is not None and not isinstance(value, dict if key == "data" else str):
            raise unmarshal_error(value, f"LogRecord.{key}", go_type)
    missing = [
        validation_error("LogRecord", go, "required")
        for key, go in LOG_RECORD_REQUIRED.items()
        if not body.get(key)
    ]
    if missing:
        raise InvalidInput("\n".join(missing))
    return {k: v for k, v in body.items() if isinstance(v, str)} | {"data": body.get("data") or {}}


def parse_cleanup_days(raw: bytes) -> int:
    """``CleanupRequest{days}``: required, 1-365 (gin's validator texts)."""
    days = json_object(raw, "EOF").get("days")
    if days is not None and (not isinstance(days, int) or isinstance(days, bool)):
        raise unmarshal_error(days, "CleanupRequest.days", "int")
    if not days:
        raise InvalidInput(validation_error("CleanupRequest", "Days", "required"))
    tag = "gte" if days < 1 else "lte" if days > 365 else ""
    if tag:
        raise InvalidInput(validation_error("CleanupRequest", "Days", tag))
    return days


# Responses -------------------------------------------------------------------------------------
def health(now: float) -> dict[str, Any]:
    return {"status": "healthy", "time": int(now), "service": "platform-api"}


def system_info(info: GatewayInfo) -> dict[str, Any]:
    return {"version": info.version, "services": dict(info.services)}


def _rfc3339(unix: float, offset_s: int) -> str:
    local = datetime.fromtimestamp(int(unix), UTC).astimezone(timezone(timedelta(seconds=offset_s)))
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if offset_s == 0:
        return text + "Z"
    sign = "+" if offset_s > 0 else "-"
    return f"{text}{sign}{abs(offset_s) // 3600:02d}:{abs(offset_s) % 3600 // 60:02d}"


def _uptime_text(seconds: int) -> str:
    days, hours, minutes = seconds // 86400, seconds % 86400 // 3600, seconds % 3600 // 60
    if days:
        return f"{days} days {hours} hours"
    if hours:
        return f"{hours} hours {minutes} minutes"
    return f"{minutes} minutes"


def system_time(t: DeviceTime) -> dict[str, Any]:
    return {
        "current_time": _rfc3339(t.unix, t.offset_s),
        "unix_timestamp": int(t.unix),
        "timezone": t.timezone,
        "uptime": t.uptime_s,
        "uptime_formatted": _uptime_text(t.uptime_s),
    }


def client_sync(result: ClientTimeSync) -> dict[str, Any]:
    message = (
        f"Time synced from browser (diff: {result.diff_s}s)"
        if result.synced
        else "Time is within acceptable range"
    )
    return {"synced": result.synced, "diff_seconds": result.diff_s, "message": message}


def time_config(c: TimeConfig) -> dict[str, Any]:
    ntp: dict[str, Any] = {
        "enabled": c.ntp_enabled,
        "server": c.ntp_server,
        "interval": c.ntp_interval,
        "synced": c.ntp_synced,
    }
    if c.last_sync:
        ntp["last_sync"] = c.last_sync
    ntp["fallback_servers"] = list(c.fallback_servers)
    return {
        "timezone": c.timezone,
        "time_format": c.time_format,
        "sync_mode": c.sync_mode,
        "ntp": ntp,
        "auto_sync": c.ntp_enabled,
    }


def _offset_text(offset_s: int) -> str:
    sign = "+" if offset_s >= 0 else "-"
    return f"UTC{sign}{abs(offset_s) // 3600:02d}:{abs(offset_s) % 3600 // 60:02d}"


def timezones(zones: tuple[TimezoneInfo, ...]) -> list[dict[str, Any]]:
    return [
        {"name": z.name, "country": z.country, "offset": _offset_text(z.offset_s), "offset_sec": z.offset_s}
        for z in zones
    ]


def password_changed() -> dict[str, Any]:
    return {"message": "Password updated successfully. Service is restarting."}


def reboot_started() -> dict[str, Any]:
    return {"message": "System reboot initiated"}


def ota_status(s: OtaStatus) -> dict[str, Any]:
    body: dict[str, Any] = {
        "status": s.status,
        "progress": s.progress,
        "message": s.message,
        "current_step": s.current_step,
        "version": s.version,
        "start_time": s.start_time,
        "error": s.error,
        "reboot_needed": s.reboot_needed,
    }
    optional = {
        "job_id": s.job_id,
        "finished_at": s.finished_at,
        "reboot_confirmed": s.reboot_confirmed,
        "boot_id": s.boot_id,
        "current_boot_id": s.current_boot_id,
        "log_path": s.log_path,
        "log_tail": s.log_tail,
    }
    body.update((k, v) for k, v in optional.items() if v)
    return body


def os_upgrade_status(job: dict[str, Any] | None) -> dict[str, Any]:
    return {"status": "idle"} if job is None else dict(job)
