"""``/api/v1/device/{zoom,focus,autofocus}`` and ``/api/v1/device/lens/*``: motors and autofocus.

Motor commands answer at once with the device's proto ``Status`` (the motors then move on the world
clock); ``lens/status`` and ``lens/af/status`` report where they are.
"""

from __future__ import annotations

import dataclasses

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import Body, status
from hardware.ports.camera_hw import AfJob, LensStatus, MotorLimit

router = APIRouter(prefix="/api/v1/device", tags=["lens"], dependencies=[Depends(require_session)])


def _limit(limit: MotorLimit) -> dict[str, int]:
    return {"min_pos": limit.min_pos, "max_pos": limit.max_pos}


def _lens_status(s: LensStatus) -> dict[str, object]:
    out = dataclasses.asdict(s)
    out["zoom_limit"], out["focus_limit"] = _limit(s.zoom_limit), _limit(s.focus_limit)
    return out


def _job(job: AfJob) -> dict[str, object]:
    return {"accepted": job.accepted, "job_id": job.job_id, "message": job.message}


def _parse_limit(value: dict | None, name: str) -> MotorLimit | None:
    if value is None:
        return None
    body = Body.of(value, f"Invalid request format: {name}")
    return MotorLimit(body.int("min_pos", required=True), body.int("max_pos", required=True))


@router.post("/zoom")
async def zoom(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.zoom(Body(await request.body()).int("speed", required=True))
    return schemas.ok(status("Zoom command executed"))


@router.post("/focus")
async def focus(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.focus(Body(await request.body()).int("speed", required=True))
    return schemas.ok(status("Focus command executed"))


@router.post("/autofocus")
async def autofocus(request: Request, backend: Backend) -> JSONResponse:
    enable = Body(await request.body()).bool("enable", required=True)
    backend.lens.set_autofocus(enable)
    return schemas.ok(status(f"Autofocus {'enabled' if enable else 'disabled'}"))


@router.post("/lens/oneshot-af")
@router.post("/lens/af/oneshot")
async def oneshot_af(backend: Backend) -> JSONResponse:
    return schemas.ok(_job(backend.lens.oneshot_af()))


@router.get("/lens/af/status")
async def af_status(backend: Backend) -> JSONResponse:
    return schemas.ok(dataclasses.asdict(backend.lens.af_status()))


@router.post("/lens/af/cancel")
async def af_cancel(backend: Backend) -> JSONResponse:
    job = backend.lens.cancel_af()
    return schemas.ok({"success": True, "job_id": job.job_id, "message": job.message})


@router.post("/lens/zoom-follow")
async def zoom_follow(request: Request, backend: Backend) -> JSONResponse:
    ratio = Body(await request.body()).float("ratio", required=True)
    return schemas.ok(_job(backend.lens.zoom_follow(ratio)))


@router.get("/lens/status")
async def lens_status(backend: Backend) -> JSONResponse:
    return schemas.ok(_lens_status(backend.lens.status()))


@router.put("/lens/zoom-level")
async def zoom_level(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.set_zoom_level(Body(await request.body()).float("level", required=True))
    return schemas.ok(status("Zoom level set"))


@router.put("/lens/focus-level")
async def focus_level(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.set_focus_level(Body(await request.body()).float("level", required=True))
    return schemas.ok(status("Focus level set"))


@router.post("/lens/reset-zero")
async def reset_zero(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    backend.lens.reset_zero(body.bool("zoom"), body.bool("focus"))
    return schemas.ok(status("Reset to zero started"))


@router.post("/lens/iris")
async def iris(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.iris(Body(await request.body()).int("speed", required=True))
    return schemas.ok(status("Iris command executed"))


@router.post("/lens/iris-target")
async def iris_target(request: Request, backend: Backend) -> JSONResponse:
    backend.lens.iris_target(Body(await request.body()).int("target", required=True))
    return schemas.ok(status("Iris target set"))


@router.put("/lens/limits")
async def limits(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    zoom_limit = _parse_limit(body.obj("zoom_limit"), "zoom_limit")
    focus_limit = _parse_limit(body.obj("focus_limit"), "focus_limit")
    backend.lens.set_limits(zoom_limit, focus_limit)
    return schemas.ok(status("Lens limits set"))


@router.post("/lens/init")
async def init(backend: Backend) -> JSONResponse:
    backend.lens.init()
    return schemas.ok(status("Lens initialisation started"))


@router.post("/lens/goto")
async def goto(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    backend.lens.goto(body.float("zoom_ratio", required=True), body.float("focus_distance_m", required=True))
    return schemas.ok(status("Lens moving"))
