"""``/api/v1/logs/*`` (service journals and log files, download, live stream over WebSocket) and
``/api/v1/debug-logs/*`` (the services and files a debug export can hold, and the tar.gz export)."""

from __future__ import annotations

import contextlib
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocketDisconnect

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import files as shapes
from api.gateway.ws import deny, drain, plain_get, until_first_ends, ws_backend
from hardware.ports.errors import DomainError
from hardware.ports.gateway_files import LogFollower

router = APIRouter(prefix="/api/v1", tags=["logs"], dependencies=[Depends(require_session)])
stream_router = APIRouter(prefix="/api/v1", tags=["logs"])

Kind = Annotated[str, Query(alias="type")]
"""``?type=service|file``."""


@router.get("/logs/services")
async def services(backend: Backend) -> JSONResponse:
    return schemas.ok({"services": [{"id": sid, "name": name} for sid, name in backend.logs.services()]})


@router.get("/logs/files")
async def files(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.log_files(backend.logs.files(), backend.system.device_time().offset_s))


@router.get("/logs/content")
async def content(backend: Backend, kind: Kind = "", target: str = "", lines: str = "") -> JSONResponse:
    count, text = backend.logs.content(kind, target, shapes.lines_param(lines))
    return schemas.ok({"target": target, "type": kind, "lines": count, "content": text})


@router.get("/logs/download")
async def download(backend: Backend, kind: Kind = "", target: str = "") -> Response:
    f = backend.logs.download(kind, target)
    return Response(f.data, media_type="text/plain; charset=utf-8", headers=shapes.attachment(f.name))


@router.get("/debug-logs/services")
async def debug_services(backend: Backend) -> JSONResponse:
    services = [{"id": sid, "name": name} for sid, name in backend.logs.debug_services()]
    return schemas.ok({"services": services})


@router.get("/debug-logs/files")
async def debug_files(backend: Backend) -> JSONResponse:
    files = shapes.debug_files(backend.logs.debug_files(), backend.system.device_time().offset_s)
    return schemas.ok({"files": files or None})  # a nil slice when there is none


@router.post("/debug-logs/export")
async def debug_export(request: Request, backend: Backend) -> Response:
    raw = await request.body()
    body = shapes.json_object(raw) if raw.strip() else {}
    services, files = shapes.string_list(body, "services"), shapes.string_list(body, "files")
    members = backend.logs.debug_export(services, files, shapes.field(body, "lines", int))
    now = backend.system.device_time().unix
    archive = shapes.tar_gz_of(members, now)
    name = f"debug-logs-{int(now)}.tar.gz"
    return Response(archive, media_type="application/gzip", headers=shapes.attachment(name))


@stream_router.websocket("/logs/stream/ws")
async def stream(websocket: WebSocket) -> None:
    """Text frames, one log line each, as the journal or file grows (in world time)."""
    backend = await ws_backend(websocket)
    if backend is None:
        return
    params = websocket.query_params
    try:
        follower = backend.log_stream.follow(params.get("type", ""), params.get("target", ""))
    except DomainError as err:
        code = errors.DOMAIN_CODES.get((err.code, err.resource)) or errors.DOMAIN_CODES[(err.code, None)]
        await deny(websocket, errors.fail(code, err.message))
        return
    try:
        await websocket.accept()
        await pump_until_closed(websocket, follower)
    finally:
        follower.close()


async def pump_until_closed(websocket: WebSocket, follower: LogFollower) -> None:
    async def pump() -> None:
        with contextlib.suppress(WebSocketDisconnect, DomainError, RuntimeError):
            while True:
                for line in await follower.next_lines():
                    await websocket.send_text(line)

    await until_first_ends(websocket, pump(), drain(websocket))


plain_get(stream_router, "/logs/stream/ws")
