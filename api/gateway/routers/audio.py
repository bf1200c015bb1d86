"""``/api/v1/audio/*``: devices, status, config, capture and playback (``handlers/audio.go``), the live
``audio/stream`` (S16LE PCM, one binary message per chunk) and two-way ``audio/talk`` (the client sends
S16LE PCM; a second concurrent talker is refused before the upgrade with 4002/429, as the device does).
Every body is bound like Gin's ``ShouldBindJSON``: an empty one is ``1001 Invalid request body: EOF``."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import audio as shapes
from api.gateway.ws import deny, plain_get, ws_backend
from hardware.ports.errors import DomainError, InvalidInput, RateLimited

router = APIRouter(prefix="/api/v1/audio", tags=["audio"], dependencies=[Depends(require_session)])
ws_router = APIRouter(prefix="/api/v1/audio", tags=["audio"])


@router.get("/capture-devices")
async def capture_devices(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.devices(backend.audio.capture_devices()))


@router.get("/playback-devices")
async def playback_devices(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.devices(backend.audio.playback_devices()))


@router.get("/status")
async def status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.status(backend.audio.status()))


@router.put("/config")
async def set_config(request: Request, backend: Backend) -> JSONResponse:
    backend.audio.set_config(shapes.parse_config(await request.body()))
    return schemas.ok(shapes.message("Audio config updated"))


@router.post("/capture/start")
async def capture_start(request: Request, backend: Backend) -> JSONResponse:
    backend.audio.start_capture(*shapes.parse_capture(await request.body()))
    return schemas.ok(shapes.message("Audio capture started"))


@router.post("/capture/stop")
async def capture_stop(backend: Backend) -> JSONResponse:
    backend.audio.stop_capture()
    return schemas.ok(shapes.message("Audio capture stopped"))


@router.post("/playback/start")
async def playback_start(request: Request, backend: Backend) -> JSONResponse:
    backend.audio.start_playback(*shapes.parse_playback(await request.body()))
    return schemas.ok(shapes.message("Audio playback started"))


@router.post("/playback/stop")
async def playback_stop(backend: Backend) -> JSONResponse:
    backend.audio.stop_playback()
    return schemas.ok(shapes.message("Audio playback stopped"))


async def _authorised(websocket: WebSocket) -> bool:
    return await ws_backend(websocket) is not None


@ws_router.websocket("/stream")
async def stream(websocket: WebSocket) -> None:
    if not await _authorised(websocket):
        return
    listener = websocket.app.state.backend.audio.listen()
    await websocket.accept()
    receiver = asyncio.create_task(_drain(websocket))
    try:
        while not receiver.done():
            chunk = asyncio.create_task(listener.next_chunk())
            await asyncio.wait([chunk, receiver], return_when=asyncio.FIRST_COMPLETED)
            if not chunk.done():
                chunk.cancel()
                break
            await websocket.send_bytes(chunk.result())
    except (DomainError, WebSocketDisconnect, RuntimeError):
        pass
    finally:
        listener.close()
        receiver.cancel()
        with contextlib.suppress(Exception):
            await websocket.close()


async def _drain(websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass


@ws_router.websocket("/talk")
async def talk(websocket: WebSocket) -> None:
    if not await _authorised(websocket):
        return
    try:
        session = websocket.app.state.backend.audio.talk()
    except RateLimited as err:
        await deny(websocket, errors.fail(4002, err.message))
        return
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data:
                try:
                    session.receive(data)
                except InvalidInput:
                    await websocket.close(code=1003, reason="S16LE PCM expected")
                    break
    except (WebSocketDisconnect, RuntimeError):
        pass
    finally:
        session.close()


plain_get(ws_router, "/stream")
plain_get(ws_router, "/talk")
