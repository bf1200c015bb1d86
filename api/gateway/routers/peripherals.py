"""``/api/v1/device/*`` peripherals: status and capabilities, light, IR LED, IR-cut, PTZ, GPIO, fan,
heater, radar, alarm outputs, Wiegand and RS485."""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import Body, status
from hardware.ports.camera_hw import GpioRead, PtzCommand, Switched
from hardware.ports.errors import InvalidInput

router = APIRouter(prefix="/api/v1/device", tags=["peripherals"], dependencies=[Depends(require_session)])
MAX_PINS = 64


def _switched(s: Switched, **extra: Any) -> dict[str, Any]:
    return {"success": s.success, "enabled": s.enabled, "message": s.message, **extra}


def _gpio(read: GpioRead) -> dict[str, Any]:
    """Proto-JSON: every field ``omitempty`` (a low pin has no ``value``)."""
    results = []
    for r in read.results:
        item: dict[str, Any] = {"pin": r.pin} if r.pin else {}
        if r.value:
            item["value"] = True
        item.update({k: v for k, v in (("status", r.status), ("direction", r.direction)) if v})
        results.append(item)
    return {
        "available_pins": list(read.available_pins),
        "input_pins": list(read.input_pins),
        "output_pins": list(read.output_pins),
        "results": results,
    }


def _pin(raw: str) -> int:
    try:
        return int(raw)
    except ValueError as err:
        raise InvalidInput("Invalid pin number") from err


def _channel(raw: str) -> int:
    try:
        return int(raw)
    except ValueError as err:
        raise InvalidInput("Invalid channel") from err


@router.get("/status")
async def device_status(backend: Backend) -> JSONResponse:
    return schemas.ok(dataclasses.asdict(backend.peripherals.device_status()))


@router.get("/capabilities")
async def capabilities(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.peripherals.capabilities())


@router.post("/light")
async def light(request: Request, backend: Backend) -> JSONResponse:
    backend.peripherals.set_light(Body(await request.body()).int("level", required=True))
    return schemas.ok(status("Light level set"))


@router.post("/ir-led")
async def ir_led(request: Request, backend: Backend) -> JSONResponse:
    backend.peripherals.set_ir_led(Body(await request.body()).int("level", required=True))
    return schemas.ok(status("IR LED level set"))


@router.post("/ir-cut")
async def ir_cut(request: Request, backend: Backend) -> JSONResponse:
    backend.peripherals.set_ir_cut(Body(await request.body()).str("mode", required=True))
    return schemas.ok(status("IR-CUT mode set"))


@router.post("/ptz")
async def ptz(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    command = PtzCommand(
        action=body.str("action", required=True),
        direction=body.str("direction"),
        speed=body.int("speed"),
        preset_id=body.int("preset_id"),
        zoom_speed=body.int("zoom_speed"),
        focus_speed=body.int("focus_speed"),
    )
    backend.peripherals.ptz(command)
    return schemas.ok(status("PTZ command executed"))


@router.get("/gpio")
async def gpio_read(request: Request, backend: Backend) -> JSONResponse:
    raw = request.query_params.get("pins", "")
    pins = [_pin(p) for p in raw.split(",") if p.strip()] if raw else None
    if pins is not None and len(pins) > MAX_PINS:
        raise InvalidInput(f"At most {MAX_PINS} pins")
    return schemas.ok(_gpio(backend.peripherals.gpio_read(pins)))


@router.get("/gpio/{pin}")
async def gpio_pin(pin: str, backend: Backend) -> JSONResponse:
    r = backend.peripherals.gpio_pin(_pin(pin))
    return schemas.ok({"pin": r.pin, "value": r.value, "direction": r.direction})


@router.post("/gpio")
async def gpio_write(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    if not body.has("value"):
        raise InvalidInput("Invalid request format: value is required")
    backend.peripherals.gpio_write(body.int("pin", required=True), body.bool("value"))
    return schemas.ok(status("GPIO written"))


async def _set(request: Request, backend: Backend, what: str) -> JSONResponse:
    body = Body(await request.body())
    if not body.has("enable") and not body.has("enabled"):
        raise InvalidInput("Invalid request format: enable is required")
    enabled = body.bool("enable") if body.has("enable") else body.bool("enabled")
    return schemas.ok(_switched(backend.peripherals.switch(what, enabled, body.int("channel"))))


@router.post("/fan")
async def set_fan(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "fan")


@router.get("/fan")
async def get_fan(backend: Backend) -> JSONResponse:
    return schemas.ok(_switched(backend.peripherals.switched("fan")))


@router.post("/heat")
async def set_heat(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "heat")


@router.get("/heat")
async def get_heat(backend: Backend) -> JSONResponse:
    return schemas.ok(_switched(backend.peripherals.switched("heat")))


@router.post("/radar")
async def set_radar(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "radar")


@router.get("/radar")
async def get_radar(backend: Backend) -> JSONResponse:
    p = backend.peripherals
    return schemas.ok(_switched(p.switched("radar"), targets=p.radar_targets()))


@router.post("/alarm-out")
async def set_alarm_out(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "alarm-out")


@router.get("/alarm-out/{channel}")
async def get_alarm_out(channel: str, backend: Backend) -> JSONResponse:
    return schemas.ok(_switched(backend.peripherals.switched("alarm-out", _channel(channel))))


@router.post("/wiegand")
async def set_wiegand(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "wiegand")


@router.get("/wiegand/{channel}")
async def get_wiegand(channel: str, backend: Backend) -> JSONResponse:
    return schemas.ok(_switched(backend.peripherals.switched("wiegand", _channel(channel))))


@router.get("/alarm-outputs")
async def alarm_outputs(backend: Backend) -> JSONResponse:
    return schemas.ok({"success": True, "message": "ok", **backend.peripherals.alarm_outputs()})


@router.post("/rs485/init")
async def rs485_init(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    backend.peripherals.rs485_init(body.int("baudrate", required=True), body.str("config", default="8N1"))
    return schemas.ok({"success": True, "message": "RS485 initialised"})


@router.post("/rs485/deinit")
async def rs485_deinit(backend: Backend) -> JSONResponse:
    backend.peripherals.rs485_deinit()
    return schemas.ok({"success": True, "message": "RS485 released"})


@router.post("/rs485/tx")
async def rs485_tx(request: Request, backend: Backend) -> JSONResponse:
    raw = Body(await request.body()).str("data", required=True)
    try:
        data = base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as err:
        raise InvalidInput("data must be base64") from err
    backend.peripherals.rs485_tx(data)
    return schemas.ok({"success": True, "message": f"{len(data)} bytes sent"})
