"""``/api/v1/device/{zoom,focus,autofocus}`` and ``/api/v1/device/lens/*`` (``handlers/device.go``):
motors and autofocus.

Motor commands answer at once with the device-control service's ``Status`` (the motors then move on the
world clock); ``lens/status`` and ``lens/af/status`` report where they are. ``zoom`` and ``focus`` pass a
refusal on as a 200 with ``data.message``; the ``lens/*`` handlers and ``autofocus`` check it: 7000 with
the service's message. An AF job that is not accepted is 7000 too."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers.peripherals import passed_through
from api.gateway.schemas import device as shapes
from hardware.ports.camera_hw import AfJob
from hardware.ports.errors import InternalError

router = APIRouter(prefix="/api/v1/device", tags=["lens"], dependencies=[Depends(require_session)])
DONE = shapes.status()
"""``Status{success: true}``: what every lens command answers when it worked."""


def _accepted(job: AfJob) -> JSONResponse:
    if not job.accepted:
        raise InternalError(job.message, resource="device")
    return schemas.ok(shapes.af_job(job))


@router.post("/zoom")
async def zoom(request: Request, backend: Backend) -> JSONResponse:
    speed = shapes.parse_speed(await request.body())
    return passed_through(lambda: backend.lens.zoom(speed))


@router.post("/focus")
async def focus(request: Request, backend: Backend) -> JSONResponse:
    speed = shapes.parse_speed(await request.body())
    return passed_through(lambda: backend.lens.focus(speed))


@router.post("/autofocus")
async def autofocus(request: Request, backend: Backend) -> JSONResponse:
    message = backend.lens.set_autofocus(shapes.parse_enable(await request.body()))
    return schemas.ok(shapes.status(True, message))


@router.post("/lens/oneshot-af")
@router.post("/lens/af/oneshot")
async def oneshot_af(backend: Backend) -> JSONResponse:
    return _accepted(backend.autofocus.oneshot_af())


@router.get("/lens/af/status")
async def af_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.af_status(backend.autofocus.af_status()))


@router.post("/lens/af/cancel")
async def af_cancel(request: Request, backend: Backend) -> JSONResponse:
    message = backend.autofocus.cancel_af(shapes.parse_cancel(await request.body()))
    return schemas.ok(shapes.status(True, message))


@router.post("/lens/zoom-follow")
async def zoom_follow(request: Request, backend: Backend) -> JSONResponse:
    return _accepted(backend.autofocus.zoom_follow(shapes.parse_ratio(await request.body())))


@router.get("/lens/status")
async def lens_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.lens_status(backend.lens.status()))


@router.put("/lens/zoom-level")
async def zoom_level(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.set_zoom_level(shapes.parse_level_float(await request.body()))
    return schemas.ok(DONE)


@router.put("/lens/focus-level")
async def focus_level(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.set_focus_level(shapes.parse_level_float(await request.body()))
    return schemas.ok(DONE)


@router.post("/lens/reset-zero")
async def reset_zero(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.reset_zero(*shapes.parse_reset(await request.body()))
    return schemas.ok(DONE)


@router.post("/lens/iris")
async def iris(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.iris(shapes.parse_speed(await request.body()))
    return schemas.ok(DONE)


@router.post("/lens/iris-target")
async def iris_target(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.iris_target(shapes.parse_iris_target(await request.body()))
    return schemas.ok(DONE)


@router.put("/lens/limits")
async def limits(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.set_limits(*shapes.parse_limits(await request.body()))
    return schemas.ok(DONE)


@router.post("/lens/init")
async def init(backend: Backend) -> JSONResponse:
    backend.lens.init()
    return schemas.ok(DONE)


@router.post("/lens/goto")
async def goto(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.goto(*shapes.parse_goto(await request.body()))
    return schemas.ok(DONE)
