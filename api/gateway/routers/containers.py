"""``/api/v1/containers*``: list (paged, filtered), detail, stats, logs (JSON, SSE ``log`` events,
WebSocket text lines), start/stop/restart/remove, and the exec WebSocket — a simulated shell."""

from __future__ import annotations

import contextlib
import json

from fastapi import APIRouter, Depends, WebSocket
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.websockets import WebSocketDisconnect

from api import json_input
from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes
from api.gateway.ws import deny, drain, plain_get, until_first_ends, ws_backend
from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.gateway_apps import LineFeed, ShellSession

router = APIRouter(prefix="/api/v1/containers", tags=["containers"], dependencies=[Depends(require_session)])
ws_router = APIRouter(prefix="/api/v1/containers", tags=["containers"])


@router.get("")
async def list_containers(
    backend: Backend, state: str = "", search: str = "", page: int = 1, page_size: int = 20
) -> JSONResponse:
    if page < 1 or not 1 <= page_size <= 1000:
        raise InvalidInput("page must be >= 1 and page_size between 1 and 1000", resource="parameter")
    items = [
        c
        for c in backend.containers.list()
        if (not state or c.state == state) and (not search or search.lower() in f"{c.name} {c.image}".lower())
    ]
    return schemas.ok(shapes.container_page(items, page, page_size))


@router.get("/{container_id}")
async def get_container(container_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok({"container": {"info": shapes.container(backend.containers.get(container_id))}})


@router.delete("/{container_id}")
async def remove_container(container_id: str, backend: Backend) -> JSONResponse:
    backend.containers.remove(container_id)
    return schemas.ok({"message": f"Container {container_id} removed"})


@router.get("/{container_id}/stats")
async def container_stats(container_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.container_stats(backend.containers.stats(container_id)))


@router.get("/{container_id}/logs")
async def container_logs(container_id: str, backend: Backend, tail: int = 100) -> JSONResponse:
    lines = backend.containers.logs(container_id, tail)
    return schemas.ok({"logs": list(lines) if lines else None})


@router.get("/{container_id}/logs/stream")
async def stream_logs(container_id: str, backend: Backend, tail: int = 100) -> StreamingResponse:
    backlog = backend.containers.logs(container_id, tail)
    feed = backend.containers.follow(container_id)

    async def events():
        try:
            for line in backlog:
                yield f"event:log\ndata:{json.dumps(line)}\n\n"
            while (new := await feed.next()) is not None:
                yield f"event:log\ndata:{json.dumps(new)}\n\n"
        finally:
            feed.close()

    return StreamingResponse(events(), media_type="text/event-stream")


@router.post("/{container_id}/start")
async def start(container_id: str, backend: Backend) -> JSONResponse:
    await backend.lifecycle.start_container(container_id)
    return schemas.ok({"message": f"Container {container_id} started"})


@router.post("/{container_id}/stop")
async def stop(container_id: str, backend: Backend) -> JSONResponse:
    await backend.lifecycle.stop_container(container_id)
    return schemas.ok({"message": f"Container {container_id} stopped"})


@router.post("/{container_id}/restart")
async def restart(container_id: str, backend: Backend) -> JSONResponse:
    await backend.lifecycle.restart_container(container_id)
    return schemas.ok({"message": f"Container {container_id} restarted"})


# WebSockets ------------------------------------------------------------------------------------
async def _denied_by_domain(websocket: WebSocket, err: DomainError) -> None:
    await deny(websocket, errors.fail(4000 if err.code == "not_found" else 1001, err.message))


@ws_router.websocket("/{container_id}/logs/ws")
async def logs_ws(websocket: WebSocket, container_id: str, tail: int = 100) -> None:
    backend = await ws_backend(websocket)
    if backend is None:
        return
    try:
        backlog = backend.containers.logs(container_id, tail)
        feed = backend.containers.follow(container_id)
    except DomainError as err:
        await _denied_by_domain(websocket, err)
        return
    await websocket.accept()
    try:
        for line in backlog:
            await websocket.send_text(line)
        await _pump_lines(websocket, feed)
    finally:
        feed.close()


async def _pump_lines(websocket: WebSocket, feed: LineFeed) -> None:
    async def send() -> None:
        while (line := await feed.next()) is not None:
            await websocket.send_text(line)
        await websocket.close()

    await until_first_ends(websocket, send(), drain(websocket))


@ws_router.websocket("/{container_id}/exec/ws")
async def exec_ws(websocket: WebSocket, container_id: str) -> None:
    backend = await ws_backend(websocket)
    if backend is None:
        return
    try:
        shell = backend.containers.shell(container_id)
    except DomainError as err:
        await _denied_by_domain(websocket, err)
        return
    await websocket.accept()
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        await websocket.send_bytes(shell.banner().encode())
        await _exec(websocket, shell)


async def _exec(websocket: WebSocket, shell: ShellSession) -> None:
    """Binary frames are stdin (lines run on newline); a text ``{type:"resize"}`` is accepted."""
    pending = ""
    while not shell.closed:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        if message.get("text") is not None:
            with contextlib.suppress(ValueError):
                frame = json_input.loads(message["text"].encode(), json_input.GO)
                if isinstance(frame, dict) and frame.get("type") == "resize":
                    continue
            chunk = message["text"]
        else:
            chunk = (message.get("bytes") or b"").decode(errors="replace")
        pending += chunk
        while "\n" in pending and not shell.closed:
            line, pending = pending.split("\n", 1)
            await websocket.send_bytes(shell.feed(line.rstrip("\r")).encode())
    await websocket.close()


plain_get(ws_router, "/{container_id}/logs/ws")
plain_get(ws_router, "/{container_id}/exec/ws")
