"""``/api/v1/media/status`` and the live feed ``GET /api/v1/h264/{stream_id}`` (WebSocket).

The feed, as the device serves it (reference §8):

- Refusals come before the upgrade as plain HTTP answers (the WebSocket denial response): no or a bad
  token → 401/2000 like the device's auth middleware; a ``stream_id`` containing ``..`` → 400/1001;
  an unknown stream → 404/4000. If the server lacks the denial extension, the socket is closed with
  1008 instead (Starlette then answers 403).
- After the upgrade: the cached SPS/PPS as one frame (frame_type 1, PTS/DTS 0), a keyframe request,
  then one binary message per access unit: an 18-byte header (magic ``0xFFD8FF00``, frame_type 0 key /
  1 not key, flags ``0x01``, PTS u32, DTS u32, 4 reserved zero bytes, all big-endian) + AVCC payload.
- A stream that cannot start (disabled, camera service down): the upgrade, then a text frame
  ``{"error":"Failed to start stream"}`` and a close.
- At most 5 connections per client IP: a sixth closes the oldest with 1008 "Connection replaced".
- A write slower than 1 s, or 5 writes in a row slower than 50 ms, evict the client (1008).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.websockets import WebSocketDisconnect

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import media as shapes
from api.gateway.ws import deny, plain_get, ws_backend
from hardware.ports.errors import DomainError, NotFound, Unavailable
from hardware.ports.gateway import GatewayBackend
from hardware.ports.media import MediaFrame, MediaViewer

router = APIRouter(tags=["media"])
status_router = APIRouter(prefix="/api/v1/media", tags=["media"], dependencies=[Depends(require_session)])

MAGIC = 0xFFD8FF00
FLAGS = 0x01
HEADER = struct.Struct(">IBBII4x")
MAX_PER_IP = 5
REPLACED = (1008, "Connection replaced")
EVICTED = (1008, "Client too slow")
WRITE_TIMEOUT_S = 1.0
SLOW_WRITE_S = 0.05
SLOW_WRITES = 5


def pack(frame: MediaFrame) -> bytes:
    """One binary message: the 18-byte header, then the AVCC payload."""
    return HEADER.pack(MAGIC, 0 if frame.key else 1, FLAGS, frame.pts, frame.dts) + frame.payload


@status_router.get("/status")
async def media_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.media_status(backend.media.status()))


@dataclass(eq=False)
class _Connection:
    websocket: WebSocket
    tasks: list[asyncio.Task] = field(default_factory=list)

    async def replace(self) -> None:
        for task in self.tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await self.websocket.close(*REPLACED)


def _clients(websocket: WebSocket) -> dict[str, deque[_Connection]]:
    state = websocket.app.state
    if not hasattr(state, "h264_clients"):
        state.h264_clients = {}
    return state.h264_clients


@router.websocket("/api/v1/h264/{stream_id}")
async def h264(websocket: WebSocket, stream_id: str) -> None:
    backend = await ws_backend(websocket)
    if backend is None:
        return
    if ".." in stream_id:
        await deny(websocket, errors.fail(1001, "Invalid stream id"))
        return
    try:
        viewer = backend.media.open_viewer(stream_id)
    except NotFound as err:
        await deny(websocket, errors.fail(4000, err.message))
        return
    except Unavailable:  # the device upgrades, then reports that the stream did not start
        await websocket.accept()
        await websocket.send_text(json.dumps({"error": "Failed to start stream"}))
        await websocket.close(code=1011)
        return
    except DomainError as err:
        code = errors.DOMAIN_CODES.get((err.code, err.resource)) or errors.DOMAIN_CODES[(err.code, None)]
        await deny(websocket, errors.fail(code, err.message))
        return
    host = websocket.client.host if websocket.client else ""
    conns = _clients(websocket).setdefault(host, deque())
    me = _Connection(websocket)
    conns.append(me)
    try:
        while len(conns) > MAX_PER_IP:
            await conns.popleft().replace()
        await websocket.accept()
        await _serve(websocket, viewer, me)
    finally:
        viewer.close()
        if me in conns:
            conns.remove(me)
        if not conns:
            _clients(websocket).pop(host, None)


async def _serve(websocket: WebSocket, viewer: MediaViewer, me: _Connection) -> None:
    await viewer.stream.primed()
    try:
        await websocket.send_bytes(pack(viewer.config_frame()))
    except (WebSocketDisconnect, RuntimeError):
        return  # the viewer left before its first frame
    viewer.stream.request_keyframe()
    sender = asyncio.create_task(_pump(websocket, viewer))
    receiver = asyncio.create_task(_drain(websocket))
    me.tasks = [sender, receiver]
    try:
        await asyncio.wait(me.tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in me.tasks:
            task.cancel()
        await asyncio.gather(*me.tasks, return_exceptions=True)


async def _pump(
    websocket: WebSocket, viewer: MediaViewer, clock: Callable[[], float] = time.monotonic
) -> None:
    """Send frames as they come. Like the device, a client whose writes take longer than
    :data:`WRITE_TIMEOUT_S`, or :data:`SLOW_WRITES` times in a row longer than :data:`SLOW_WRITE_S`,
    is evicted (transport time, read on the host's monotonic clock, not the world's)."""
    slow = 0
    with contextlib.suppress(WebSocketDisconnect, DomainError, RuntimeError):
        while True:
            frame = await viewer.next_frame()
            started = clock()
            try:
                await asyncio.wait_for(websocket.send_bytes(pack(frame)), WRITE_TIMEOUT_S)
            except TimeoutError:
                await websocket.close(*EVICTED)
                return
            slow = slow + 1 if clock() - started > SLOW_WRITE_S else 0
            if slow >= SLOW_WRITES:
                await websocket.close(*EVICTED)
                return


async def _drain(websocket: WebSocket) -> None:
    """Read (and ignore) what the client sends until it goes away."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return


def _h264_checks(request: Request, backend: GatewayBackend) -> Response | None:
    """The handler's checks before it upgrades: a ``..`` in the id, an unknown stream."""
    stream_id = request.path_params["stream_id"]
    if ".." in stream_id:
        return errors.fail(1001, "Invalid stream id")
    if stream_id not in {s.stream_id for s in backend.media.streams()}:
        return errors.fail(4000, f"Stream not found: {stream_id}")
    return None


plain_get(router, "/api/v1/h264/{stream_id}", _h264_checks)
