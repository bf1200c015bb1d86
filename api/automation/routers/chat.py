"""WS ``/chat``: the web app's chat, as the server's ``ws_chat_handler`` speaks it.

Authentication is in the query, checked after the upgrade: ``?token=<JWT>`` (a bad one: an
``Error`` "Invalid or expired token" and a close), else ``?api_key=`` (a bad one: ``Error``
"Invalid API key", close 4001), else ``Error`` "Authentication required..." and close 4001.

Then ``{"type":"system","content":"Connected to Edge AI Agent","sessionId"}``, the history of
``?sessionId=`` if it has any (``history`` frames and ``history_complete``), and a ``ping`` at once
and every 30 s of world time (the server never drops a client that does not answer ``pong``).
A client frame is a chat request ``{message, sessionId?, backendId?, images?, pageContext?,
sessionConfig?, selectedSkills?}`` (anything else is ignored). The connection's session is the
requested one when it exists (``session_switched`` and its history), else the current one, else a
new one (``session_created``, honouring ``sessionConfig``); a message starting with ``/`` stops
there. ``__CANCEL__`` interrupts the session's turn and is answered ``cancelled``. Each turn's
events stream as they happen (``Content``, ``ToolCallStart``/``ToolCallEnd``, ``intermediate_end``,
``end``...), turns of several sessions side by side; a closed connection interrupts the turn of its
current session. A connection with :data:`MAX_TURNS_IN_FLIGHT` turns not ended yet gets an
``Error`` frame for its next message, which is not started (back-pressure the client can see).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from fastapi import APIRouter, WebSocket
from pydantic import ValidationError
from starlette.websockets import WebSocketDisconnect, WebSocketState

from api import json_input
from api.automation.schemas import chat as wire
from api.tasks import first_failure
from hardware.ports.automation import AutomationBackend
from hardware.ports.chat import ChatTurn
from hardware.ports.errors import DomainError, NotFound

router = APIRouter(tags=["chat"])
HEARTBEAT_S = 30.0
MAX_TURNS_IN_FLIGHT = 16
"""Turns one connection may have started and not yet seen to their end. A message past that is
answered at once with an ``Error`` frame and not started: a client that sends faster than turns
finish learns it, instead of queueing turns (and their tasks) without bound."""
AUTH_CLOSE = 4001
CANCEL = "__CANCEL__"


def _refusal(
    backend: AutomationBackend, token: str | None, api_key: str | None
) -> tuple[str, int, str] | None:
    """(message, close code, close reason) for a connection the server turns away."""
    try:
        if token is not None:
            backend.users.authenticate(token)
            return None
    except DomainError:
        return "Invalid or expired token", 1000, ""
    if api_key is None:
        return (
            "Authentication required. Provide ?token=xxx or ?api_key=xxx.",
            AUTH_CLOSE,
            "Authentication required",
        )
    try:
        backend.api_keys.authenticate(api_key)
    except DomainError:
        return "Invalid API key", AUTH_CLOSE, "Invalid API key"
    return None


@router.websocket("/chat")
async def chat_ws(websocket: WebSocket) -> None:
    backend: AutomationBackend = websocket.app.state.backend
    query = websocket.query_params
    await websocket.accept()
    refusal = _refusal(backend, query.get("token"), query.get("api_key"))
    if refusal is not None:
        message, code, reason = refusal
        with contextlib.suppress(Exception):
            await websocket.send_text(_text({"type": "Error", "message": message}))
            await websocket.close(code, reason)
        return
    chat = _Chat(websocket, backend, query.get("sessionId"))
    try:
        await chat.run()
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    finally:
        chat.finish()
        if websocket.application_state != WebSocketState.DISCONNECTED:
            with contextlib.suppress(Exception):
                await websocket.close()


def _text(frame: dict[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":"))


class _Chat:
    """One connection: its current session, a reader, a heartbeat, and a pump per turn."""

    def __init__(self, websocket: WebSocket, backend: AutomationBackend, session_id: str | None) -> None:
        self.websocket = websocket
        self.backend = backend
        self.current = session_id
        self.lock = asyncio.Lock()
        self.pumps: set[asyncio.Task[None]] = set()

    async def send(self, frame: dict[str, Any]) -> None:
        async with self.lock:
            await self.websocket.send_text(_text(frame))

    async def run(self) -> None:
        await self.send(
            {"type": "system", "content": "Connected to Edge AI Agent", "sessionId": self.current}
        )
        if self.current:
            await self.history(self.current)
        await first_failure(self.reader(), self.heartbeat())

    def finish(self) -> None:
        for task in self.pumps:
            task.cancel()
        if self.current:
            self.backend.chat.cancel(self.current)

    async def history(self, session_id: str) -> None:
        try:
            messages = self.backend.chat.history(session_id)
        except NotFound:
            return
        if messages:
            for m in messages:
                await self.send(wire.history_frame(session_id, m))
            await self.send({"type": "history_complete", "sessionId": session_id, "count": len(messages)})

    async def heartbeat(self) -> None:
        clock = self.backend.clock
        beat = clock.now()
        while True:
            await self.send({"type": "ping", "timestamp": int(beat)})
            beat += HEARTBEAT_S
            try:
                await clock.sleep(beat - clock.now(), background=True)
            except DomainError:  # the world was reset or restored under us: beat on from its time
                beat = clock.now()

    async def reader(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                await self.handle(message["text"])

    async def handle(self, text: str) -> None:
        try:
            value = json_input.loads(text.encode(), json_input.SERDE)
        except ValueError:
            return
        if isinstance(value, dict) and value.get("type") == "pong":
            return
        try:
            request = wire.ChatRequest.model_validate(value)
        except ValidationError:
            return
        chat = self.backend.chat
        if request.message == CANCEL:
            target = request.sessionId or self.current or ""
            if target:
                chat.cancel(target)
            await self.send({"type": "cancelled", "message": "Request cancelled by user"})
            return
        session_id = await self.resolve(request)
        if request.message.strip().startswith("/"):
            return  # a control message: it only chose the session
        if len(self.pumps) >= MAX_TURNS_IN_FLIGHT:
            message = f"Too many requests in flight: {len(self.pumps)} turns have not ended yet"
            await self.send({"type": "Error", "message": message, "sessionId": session_id})
            return
        try:
            turn = chat.start_turn(session_id, request.to_turn())
        except NotFound as err:  # a ?sessionId= that names nothing: the server's fallback fails too
            await self.send({"type": "Error", "message": f"Not found: {err.message}"})
            return
        task = asyncio.create_task(self.pump(turn))
        self.pumps.add(task)
        task.add_done_callback(self.pumps.discard)

    async def resolve(self, request: wire.ChatRequest) -> str:
        chat, current, requested = self.backend.chat, self.current or "", request.sessionId
        if requested is not None and requested != current and chat.exists(requested):
            self.current = requested
            await self.send({"type": "session_switched", "sessionId": requested})
            await self.history(requested)
            return requested
        if current:
            return current
        config = request.sessionConfig
        self.current = chat.create_session(config.to_port() if config is not None else None)
        await self.send({"type": "session_created", "sessionId": self.current})
        return self.current

    async def pump(self, turn: ChatTurn) -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
            while (event := await turn.next()) is not None:
                await self.send(wire.event_frame(turn.session_id, event))
