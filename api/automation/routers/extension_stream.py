"""The ``/extensions/:id/stream`` WebSocket session of push-mode extensions.

Client → server JSON by ``type``: ``hello``, ``init{config}``, ``ack``, ``close``; server → client
``capability``, ``session_created``, ``push_output``, ``error``, ``session_closed``; control
messages are always text. Authentication is ``?token=`` (a JWT or an API key); without a valid one
the upgrade is refused with a plain-text 401. ``push_output`` frames are binary when the client
asked (``init.config.binary``) and the server confirmed (``session_created.binary``); release 0.9.17
predates binary frames and never confirms. Binary layout: kind u8 = 1, version u8 = 1, sequence
u64 BE, meta length u32 BE, meta JSON (the text envelope without ``data`` and ``sequence``), payload.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import Path, WebSocket
from fastapi.responses import PlainTextResponse
from starlette.websockets import WebSocketDisconnect

from api import json_input
from api.automation.deps import API_KEY_PREFIX
from api.automation.schemas.extensions import binary_frame, capability_info, text_frame
from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import DomainError
from hardware.ports.extensions import StreamSession

ExtensionId = Annotated[str, Path(alias="id")]


def _authenticated(backend: AutomationBackend, token: str | None) -> bool:
    if not token:
        return False
    try:
        if token.startswith(API_KEY_PREFIX):
            backend.api_keys.authenticate(token)
        else:
            backend.users.authenticate(token)
    except DomainError:
        return False
    return True


class _Session:
    """One WebSocket's state: the push session, its pump, counters and a send lock."""

    def __init__(self, websocket: WebSocket, backend: AutomationBackend, extension_id: str, binary_ok: bool):
        self.ws = websocket
        self.backend = backend
        self.extension_id = extension_id
        self.binary_ok = binary_ok
        self.binary = False
        self.push: StreamSession | None = None
        self.pump: asyncio.Task[None] | None = None
        self.lock = asyncio.Lock()
        self.started_at = backend.clock.now()
        self.frames = 0
        self.out_bytes = 0
        self.in_chunks = 0
        self.in_bytes = 0
        self.errors = 0

    async def send(self, message: dict[str, Any] | bytes) -> None:
        async with self.lock:
            if isinstance(message, bytes):
                await self.ws.send_bytes(message)
            else:
                await self.ws.send_text(json.dumps(message, separators=(",", ":")))

    async def error(self, code: str, message: str, retryable: bool = False) -> None:
        self.errors += 1
        await self.send({"type": "error", "code": code, "message": message, "retryable": retryable})

    async def hello(self) -> None:
        try:
            ext = self.backend.extensions.get_extension(self.extension_id)
        except DomainError as err:
            await self.error("EXTENSION_NOT_FOUND", err.message)
            return
        if ext.stream is None:
            await self.error("NOT_SUPPORTED", f"Extension {ext.id} has no stream capability")
            return
        await self.send({"type": "capability", "capability": capability_info(ext.stream)})

    async def init(self, config: Any) -> None:
        if self.push is not None:
            await self.error("SESSION_INIT_FAILED", "A session is already open on this connection")
            return
        try:
            self.backend.extensions.get_extension(self.extension_id)
        except DomainError as err:
            await self.error("EXTENSION_NOT_FOUND", err.message)
            return
        try:
            self.push = self.backend.extensions.open_stream(self.extension_id)
        except DomainError as err:
            await self.error(str(err.details.get("stream_code", "SESSION_INIT_FAILED")), err.message)
            return
        wants = isinstance(config, dict) and config.get("binary") is True
        self.binary = wants and self.binary_ok
        created: dict[str, Any] = {
            "type": "session_created",
            "session_id": self.push.session_id,
            "server_time": self.backend.clock.now(),
        }
        if self.binary_ok:
            created["binary"] = self.binary
        await self.send(created)
        self.pump = asyncio.create_task(self._pump(self.push))

    async def _pump(self, push: StreamSession) -> None:
        while True:
            try:
                frame = await push.next_frame()
            except DomainError:
                return
            out: dict[str, Any] | bytes
            out = binary_frame(push.session_id, frame) if self.binary else text_frame(push.session_id, frame)
            await self.send(out)
            self.frames += 1
            self.out_bytes += len(frame.data)

    async def close(self, notify: bool) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.pump
            self.pump = None
        if self.push is not None:
            push, self.push = self.push, None
            push.close()
            if notify:
                await self.send(
                    {
                        "type": "session_closed",
                        "session_id": push.session_id,
                        "total_frames": self.frames,
                        "duration_ms": round((self.backend.clock.now() - self.started_at) * 1000),
                        "stats": {
                            "input_chunks": self.in_chunks,
                            "output_chunks": self.frames,
                            "input_bytes": self.in_bytes,
                            "output_bytes": self.out_bytes,
                            "errors": self.errors,
                        },
                    }
                )

    async def handle(self, message: Mapping[str, Any]) -> bool:
        """One client message; ``False`` when the connection should end."""
        if message.get("bytes") is not None:
            self.in_chunks += 1
            self.in_bytes += max(0, len(message["bytes"]) - 8)
            await self.error("INVALID_MODE", "This session pushes output; it takes no input chunks")
            return True
        try:
            data = json_input.loads((message.get("text") or "").encode(), json_input.SERDE)
            kind = data["type"]
        except (ValueError, KeyError, TypeError):
            await self.error("INVALID_FRAME", "Expected a JSON object with a type")
            return True
        if kind == "hello":
            await self.hello()
        elif kind == "init":
            await self.init(data.get("config"))
        elif kind == "ack":
            pass  # flow control is the bounded queue: an ack needs no answer
        elif kind == "close":
            await self.close(notify=True)
            return False
        else:
            await self.error("INVALID_FRAME", f"Unknown message type {kind!r}")
        return True


async def stream(websocket: WebSocket, extension_id: ExtensionId) -> None:
    backend: AutomationBackend = websocket.app.state.backend
    if not _authenticated(backend, websocket.query_params.get("token")):
        try:
            await websocket.send_denial_response(PlainTextResponse("Unauthorized", status_code=401))
        except RuntimeError:  # no denial-response extension on this server
            await websocket.close(code=1008)
        return
    await websocket.accept()
    session = _Session(websocket, backend, extension_id, websocket.app.state.release != "0.9.17")
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect" or not await session.handle(message):
                break
    except WebSocketDisconnect:
        pass
    finally:
        await session.close(notify=False)
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.close()
