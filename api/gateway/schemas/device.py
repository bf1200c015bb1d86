"""Wire shapes of ``/api/v1/device/*`` (``handlers/device.go``): the anonymous request structs its
handlers bind, their own checks with their texts (1001), and the answers: a device-control proto
``Status`` passed through as Go serialises it (``success`` and ``message`` omitted when zero) or the
``gin.H`` a handler builds (every key present)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
from typing import Any

from api.gateway.schemas.binding import bind, check
from hardware.ports.camera_hw import (
    AfJob,
    AfStatus,
    AlarmOutputs,
    DeviceStatus,
    GpioPin,
    GpioRead,
    HwStatus,
    LensStatus,
    MotorLimit,
    PtzCommand,
    Switched,
)
from hardware.ports.errors import InvalidInput

PTZ_ACTIONS = ("pan", "tilt", "stop", "preset", "zoom", "focus")
MAX_PINS = 64
_BASE64 = re.compile(rb"[A-Za-z0-9+/]")


# Requests --------------------------------------------------------------------------------------
def parse_level(raw: bytes, too_high: str) -> int:
    """``SetLight``/``SetIrLed``: ``{level uint32}``, above 100 refused with the handler's text."""
    level = bind(raw, "", {"level": "uint32"}).get("level", 0)
    if level > 100:
        raise InvalidInput(too_high)
    return level


def parse_ir_cut(raw: bytes) -> str:
    mode = bind(raw, "", {"mode": "string"}).get("mode", "").lower()
    if mode not in ("auto", "day", "night"):
        raise InvalidInput("Mode must be 'auto', 'day', or 'night'")
    return mode


PTZ_REQ = {
    "action": "string",
    "direction": "string",
    "speed": "uint32",
    "preset_id": "uint32",
    "zoom_speed": "int32",
    "focus_speed": "int32",
}


def parse_ptz(raw: bytes) -> PtzCommand:
    body = bind(raw, "", PTZ_REQ)
    command = PtzCommand(**{"action": "", **body})
    if command.action not in PTZ_ACTIONS:
        raise InvalidInput("Invalid action. Must be 'pan', 'tilt', 'stop', 'preset', 'zoom', or 'focus'")
    if command.action == "preset" and not 1 <= command.preset_id <= 255:
        raise InvalidInput("Preset ID must be between 1 and 255")
    return command


def parse_speed(raw: bytes) -> int:
    """``ControlZoom``/``ControlFocus``/``ControlIris``: ``{speed int32}`` (absent: 0, a stop)."""
    return bind(raw, "", {"speed": "int32"}).get("speed", 0)


def parse_enable(raw: bytes) -> bool:
    """``SetAutofocus``, ``SetFan``, ``SetHeat``, ``SetRadar``: ``{enable bool}`` (absent: false)."""
    return bind(raw, "", {"enable": "bool"}).get("enable", False)


def parse_channel_enable(raw: bytes) -> tuple[int, bool]:
    body = bind(raw, "", {"channel": "uint32", "enable": "bool"})
    return body.get("channel", 0), body.get("enable", False)


def parse_gpio_write(raw: bytes) -> tuple[int, bool]:
    body = bind(raw, "", {"pin": "uint32", "value": "bool"})
    return body.get("pin", 0), body.get("value", False)


def _uint32(text: str) -> int | None:
    """``strconv.ParseUint(text, 10, 32)``."""
    if not text.isascii() or not text.isdigit() or int(text) > 2**32 - 1:
        return None
    return int(text)


def parse_pin(raw: str) -> int:
    pin = _uint32(raw)
    if pin is None:
        raise InvalidInput("Invalid pin number")
    return pin


def parse_channel(raw: str) -> int:
    channel = _uint32(raw)
    if channel is None:
        raise InvalidInput("Invalid channel number")
    return channel


def parse_pins(query: str) -> list[int]:
    """``GPIOBatchRead``'s ``?pins=12,21`` (empty: every pin)."""
    pins = []
    for part in query.strip().split(",") if query.strip() else []:
        part = part.strip()
        if not part:
            continue
        pin = _uint32(part)
        if pin is None:
            raise InvalidInput(f"Invalid pin number: {part}")
        pins.append(pin)
    if len(pins) > MAX_PINS:
        raise InvalidInput(f"Too many pins (max {MAX_PINS})")
    return pins


def parse_rs485_init(raw: bytes) -> tuple[int, str]:
    body = bind(raw, "", {"baudrate": "uint32", "config": "string"})
    return body.get("baudrate", 0), body.get("config", "")


def parse_rs485_tx(raw: bytes) -> bytes:
    """``{data}``: standard base64, Go's ``illegal base64 data at input byte N`` otherwise."""
    text = bind(raw, "", {"data": "string"}).get("data", "")
    data = text.encode()
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as err:
        body = data.rstrip(b"=")
        bad = next((i for i, c in enumerate(body) if not _BASE64.fullmatch(bytes([c]))), None)
        at = bad if bad is not None else len(data) - len(data) % 4 if len(data) % 4 else len(body)
        raise InvalidInput(f"Invalid base64 data: illegal base64 data at input byte {at}") from err


def parse_ratio(raw: bytes) -> float:
    """``StartZoomFollow``: ``{ratio float32}`` required and above zero (one text for every failure)."""
    try:
        ratio = bind(raw, "", {"ratio": "float32"}).get("ratio", 0.0)
    except InvalidInput:
        ratio = 0.0
    if not ratio > 0:
        raise InvalidInput("ratio must be greater than zero")
    return ratio


def parse_level_float(raw: bytes) -> float:
    return bind(raw, "", {"level": "float32"}).get("level", 0.0)


def parse_reset(raw: bytes) -> tuple[bool, bool]:
    body = bind(raw, "", {"zoom": "bool", "focus": "bool"})
    return body.get("zoom", False), body.get("focus", False)


def parse_iris_target(raw: bytes) -> int:
    return bind(raw, "", {"target": "uint32"}).get("target", 0)


def parse_cancel(raw: bytes) -> int:
    """``CancelAutofocus`` ignores a body it cannot bind: job 0 (whichever runs)."""
    try:
        return bind(raw, "", {"job_id": "uint64"}).get("job_id", 0)
    except InvalidInput:
        return 0


def parse_limits(raw: bytes) -> tuple[MotorLimit | None, MotorLimit | None]:
    """``{zoom_limit?, focus_limit?}``, each a ``devicepb.LensLimit{min_pos, max_pos}`` (int32s, 0 when
    absent)."""
    limit = "*devicepb.LensLimit"
    body = bind(raw, "", {"zoom_limit": limit, "focus_limit": limit})
    out: list[MotorLimit | None] = []
    for name in ("zoom_limit", "focus_limit"):
        value = body.get(name)
        if value is not None:
            for key in ("min_pos", "max_pos"):
                if value.get(key) is not None:
                    check(value[key], "int32", "LensLimit", f"{name}.{key}")
            value = MotorLimit(value.get("min_pos") or 0, value.get("max_pos") or 0)
        out.append(value)
    return out[0], out[1]


def parse_goto(raw: bytes) -> tuple[float, float]:
    body = bind(raw, "", {"zoom_ratio": "float32", "focus_distance_m": "float32"})
    return body.get("zoom_ratio", 0.0), body.get("focus_distance_m", 0.0)


# Answers ---------------------------------------------------------------------------------------
def status(success: bool = True, message: str = "") -> dict[str, Any]:
    """A device-control proto ``Status`` through encoding/json: zero fields omitted."""
    out: dict[str, Any] = {}
    if success:
        out["success"] = True
    if message:
        out["message"] = message
    return out


def device_status(s: DeviceStatus) -> dict[str, Any]:
    """``GetDeviceStatus``'s ``gin.H``: every key present."""
    return dataclasses.asdict(s)


def _hal(rc: int) -> str:
    """The daemon's ``Status.message`` for a HAL return code."""
    return f"HAL error: {rc}" if rc else "OK"


def switched(s: Switched) -> dict[str, Any]:
    return {"success": s.rc == 0, "enabled": s.enabled, "message": _hal(s.rc)}


def hw_status(s: HwStatus) -> dict[str, Any]:
    """The RS485 answers: ``gin.H{"success", "message"}``, both always present."""
    return {"success": s.success, "message": _hal(s.rc)}


def alarm_outputs(o: AlarmOutputs) -> dict[str, Any]:
    """``GetAlarmOutputs``: ``alarm_out<n>`` and ``wiegand<n>`` per channel."""
    out: dict[str, Any] = {"success": True, "message": "OK"}
    out.update({f"alarm_out{i}": on for i, on in enumerate(o.alarm_out)})
    out.update({f"wiegand{i}": on for i, on in enumerate(o.wiegand)})
    return out


def gpio_pin(p: GpioPin, *, with_direction: bool = True) -> dict[str, Any]:
    """A ``GPIOReadResponse`` through encoding/json: ``pin``, ``value``, ``direction`` omitted when zero,
    ``status`` a ``Status``."""
    out: dict[str, Any] = {}
    if p.pin:
        out["pin"] = p.pin
    if p.value:
        out["value"] = True
    out["status"] = status(not p.error, p.error)
    if with_direction and p.direction:
        out["direction"] = p.direction
    return out


def gpio_read(read: GpioRead) -> dict[str, Any]:
    """``GPIOBatchReadResponse``: every field omitted when empty."""
    out: dict[str, Any] = {}
    for name in ("available_pins", "input_pins", "output_pins"):
        if getattr(read, name):
            out[name] = list(getattr(read, name))
    if read.results:
        out["results"] = [gpio_pin(r) for r in read.results]
    return out


def lens_status(s: LensStatus) -> dict[str, Any]:
    """``GetLensStatus``'s ``gin.H``: every key present."""
    out = dataclasses.asdict(s)
    for name in ("zoom_limit", "focus_limit"):
        limit: MotorLimit = getattr(s, name)
        out[name] = {"min_pos": limit.min_pos, "max_pos": limit.max_pos}
    return out


AF_STATUS_KEYS = (
    "job_id", "operation", "state", "progress", "busy", "anchor_valid", "requested_ratio",
    "effective_ratio", "zoom_pos", "focus_pos", "best_focus", "metric", "confidence", "reproducibility",
    "estimated_distance_m", "elapsed_ms", "error_code", "message",
)  # fmt: skip


def af_status(s: AfStatus) -> dict[str, Any]:
    """``GetAutofocusStatus``'s ``gin.H``, in its order."""
    return {key: getattr(s, key) for key in AF_STATUS_KEYS}


def af_job(job: AfJob) -> dict[str, Any]:
    return {"accepted": True, "job_id": job.job_id, "message": job.message}
