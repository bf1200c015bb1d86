"""``/api/v1/device/*`` peripherals (``handlers/device.go``): status and capabilities, light, IR LED,
IR-cut, PTZ, GPIO, fan, heater, radar, alarm outputs, Wiegand and RS485.

Light, IR, PTZ, zoom, focus and GPIO writes answer the device-control service's ``Status`` whatever it
says: a refusal is a 200 with ``data.message`` (and no ``success``), as on the device. The handlers' own
checks (a level above 100, an unknown action or IR-cut mode) are 1001 with their texts."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import device as shapes
from hardware.ports.errors import InternalError

router = APIRouter(prefix="/api/v1/device", tags=["peripherals"], dependencies=[Depends(require_session)])


def passed_through(call: Callable[[], object]) -> JSONResponse:
    """``Resp(c).OK(resp)`` of a device-control ``Status`` the handler does not check."""
    try:
        call()
    except InternalError as err:
        if err.resource != "device":
            raise
        return schemas.ok(shapes.status(False, err.message))
    return schemas.ok(shapes.status())


@router.get("/status")
async def device_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.device_status(backend.peripherals.device_status()))


@router.get("/capabilities")
async def capabilities(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.peripherals.capabilities())


@router.post("/light")
async def light(request: Request, backend: Backend) -> JSONResponse:
    level = shapes.parse_level(await request.body(), "Level must be between 0 and 100")
    return passed_through(lambda: backend.peripherals.set_light(level))


@router.post("/ir-led")
async def ir_led(request: Request, backend: Backend) -> JSONResponse:
    level = shapes.parse_level(await request.body(), "Level must be 0-100")
    return passed_through(lambda: backend.peripherals.set_ir_led(level))


@router.post("/ir-cut")
async def ir_cut(request: Request, backend: Backend) -> JSONResponse:
    mode = shapes.parse_ir_cut(await request.body())
    return passed_through(lambda: backend.peripherals.set_ir_cut(mode))


@router.post("/ptz")
async def ptz(request: Request, backend: Backend) -> JSONResponse:
    command = shapes.parse_ptz(await request.body())
    return passed_through(lambda: backend.peripherals.ptz(command))


@router.get("/gpio")
async def gpio_read(request: Request, backend: Backend) -> JSONResponse:
    pins = shapes.parse_pins(request.query_params.get("pins", ""))
    return schemas.ok(shapes.gpio_read(backend.peripherals.gpio_read(pins or None)))


@router.get("/gpio/{pin}")
async def gpio_pin(pin: str, backend: Backend) -> JSONResponse:
    read = backend.peripherals.gpio_pin(shapes.parse_pin(pin))
    return schemas.ok(shapes.gpio_pin(read, with_direction=False))


@router.post("/gpio")
async def gpio_write(request: Request, backend: Backend) -> JSONResponse:
    pin, value = shapes.parse_gpio_write(await request.body())
    return passed_through(lambda: backend.peripherals.gpio_write(pin, value))


async def _set(request: Request, backend: Backend, what: str) -> JSONResponse:
    enable = shapes.parse_enable(await request.body())
    return schemas.ok(shapes.switched(backend.peripherals.switch(what, enable)))


async def _set_channel(request: Request, backend: Backend, what: str) -> JSONResponse:
    channel, enable = shapes.parse_channel_enable(await request.body())
    return schemas.ok(shapes.switched(backend.peripherals.switch(what, enable, channel)))


@router.post("/fan")
async def set_fan(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "fan")


@router.get("/fan")
async def get_fan(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.switched(backend.peripherals.switched("fan")))


@router.post("/heat")
async def set_heat(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "heat")


@router.get("/heat")
async def get_heat(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.switched(backend.peripherals.switched("heat")))


@router.post("/radar")
async def set_radar(request: Request, backend: Backend) -> JSONResponse:
    return await _set(request, backend, "radar")


@router.get("/radar")
async def get_radar(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.switched(backend.peripherals.switched("radar")))


@router.post("/alarm-out")
async def set_alarm_out(request: Request, backend: Backend) -> JSONResponse:
    return await _set_channel(request, backend, "alarm-out")


@router.get("/alarm-out/{channel}")
async def get_alarm_out(channel: str, backend: Backend) -> JSONResponse:
    read = backend.peripherals.switched("alarm-out", shapes.parse_channel(channel))
    return schemas.ok(shapes.switched(read))


@router.post("/wiegand")
async def set_wiegand(request: Request, backend: Backend) -> JSONResponse:
    return await _set_channel(request, backend, "wiegand")


@router.get("/wiegand/{channel}")
async def get_wiegand(channel: str, backend: Backend) -> JSONResponse:
    read = backend.peripherals.switched("wiegand", shapes.parse_channel(channel))
    return schemas.ok(shapes.switched(read))


@router.get("/alarm-outputs")
async def alarm_outputs(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.alarm_outputs(backend.peripherals.alarm_outputs()))


@router.post("/rs485/init")
async def rs485_init(request: Request, backend: Backend) -> JSONResponse:
    baudrate, config = shapes.parse_rs485_init(await request.body())
    return schemas.ok(shapes.hw_status(backend.rs485.rs485_init(baudrate, config)))


@router.post("/rs485/deinit")
async def rs485_deinit(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.hw_status(backend.rs485.rs485_deinit()))


@router.post("/rs485/tx")
async def rs485_tx(request: Request, backend: Backend) -> JSONResponse:
    data = shapes.parse_rs485_tx(await request.body())
    return schemas.ok(shapes.hw_status(backend.rs485.rs485_tx(data)))
