"""``/api/v1/audio/*``: devices, status, config, capture and playback, the live ``audio/stream``
(S16LE PCM, one binary message per chunk) and two-way ``audio/talk`` (the client sends S16LE PCM; a
second concurrent talker is refused before the upgrade with 4002/429, as the device does)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import Body
from api.gateway.ws import deny, plain_get, ws_backend
from hardware.ports.camera_hw import AudioConfig, AudioDevice
from hardware.ports.errors import DomainError, InvalidInput, RateLimited

router = APIRouter(prefix="/api/v1/audio", tags=["audio"], dependencies=[Depends(require_session)])
ws_router = APIRouter(prefix="/api/v1/audio", tags=["audio"])


def _devices(devices: list[AudioDevice]) -> dict[str, object]:
    return {"devices": [{**dataclasses.asdict(d), "sample_rates": list(d.sample_rates)} for d in devices]}


def _msg(message: str) -> JSONResponse:
    return JSONResponse({"code": 0, "message": message})


@router.get("/capture-devices")
async def capture_devices(backend: Backend) -> JSONResponse:
    return schemas.ok(_devices(backend.audio.capture_devices()))


@router.get("/playback-devices")
async def playback_devices(backend: Backend) -> JSONResponse:
    return schemas.ok(_devices(backend.audio.playback_devices()))


@router.get("/status")
async def status(backend: Backend) -> JSONResponse:
    s = backend.audio.status()
    return schemas.ok(
        {
            "capture": {"running": s.capture_running, "device": s.capture_device},
            "playback": {"running": s.playback_running, "device": s.playback_device},
            "talk_active": s.talk_active,
            "talk_bytes": s.talk_bytes,
            "config": dataclasses.asdict(s.config),
        }
    )


@router.put("/config")
async def set_config(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    cur = backend.audio.status().config
    config = AudioConfig(
        body.int("sample_rate", default=cur.sample_rate),
        body.int("channels", default=cur.channels),
        body.int("volume", default=cur.volume),
        body.str("format", default=cur.format),
    )
    backend.audio.set_config(config)
    return _msg("Audio configuration updated")


async def _device(request: Request) -> str:
    raw = await request.body()
    return Body(raw).str("device") if raw.strip() else ""


@router.post("/capture/start")
async def capture_start(request: Request, backend: Backend) -> JSONResponse:
    backend.audio.start_capture(await _device(request))
    return _msg("Audio capture started")


@router.post("/capture/stop")
async def capture_stop(backend: Backend) -> JSONResponse:
    backend.audio.stop_capture()
    return _msg("Audio capture stopped")


@router.post("/playback/start")
async def playback_start(request: Request, backend: Backend) -> JSONResponse:
    backend.audio.start_playback(await _device(request))
    return _msg("Audio playback started")


@router.post("/playback/stop")
async def playback_stop(backend: Backend) -> JSONResponse:
    backend.audio.stop_playback()
    return _msg("Audio playback stopped")


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
