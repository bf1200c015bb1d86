"""Chat sessions (jwt-or-api-key): create, list (the one paginated envelope), read, history, rename,
memory toggle, delete, cleanup, the pending stream of a turn in flight, and a chat turn over HTTP.

Enveloped, but for ``POST /sessions/:id/chat``, which answers the raw ``ChatResponse``. As on the
server, reading, deleting or chatting with an unknown session is 404 "Session not found", while
renaming or toggling its memory is a 500 whose message is the agent's "Not found: Session: <id>";
``POST /sessions`` takes any body (a complete ``{"config": AgentConfig}`` overrides the defaults).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from api import json_input
from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import Json, ok, request_id, rfc3339_nanos
from api.automation.schemas import chat as wire
from hardware.ports.chat import ChatEvent, ChatEventKind, SessionOptions
from hardware.ports.errors import InternalError, NotFound

SessionId = Annotated[str, Path(alias="id")]
U32 = 2**32 - 1
HTTP_CHAT_TIMEOUT_S = 300.0


def _missing(err: NotFound) -> NotFound:
    return NotFound("Session not found", resource="session")


def _agent_error(err: NotFound) -> InternalError:
    return InternalError(f"Not found: {err.message}", resource="session")


async def create_session(request: Request, backend: Backend) -> JSONResponse:
    return ok({"sessionId": backend.chat.create_session(await _options(request))}, backend.clock.now())


async def _options(request: Request) -> SessionOptions | None:
    """The body is optional and any body that is not a complete ``{"config": AgentConfig}`` is
    ignored (the server's extractor is ``Option<Json<...>>``)."""
    try:
        body = json_input.loads(await request.body() or b"null", json_input.SERDE)
        config = body.get("config") if isinstance(body, dict) else None
        return wire.AgentConfig.model_validate(config).to_port() if config is not None else None
    except (ValueError, ValidationError):
        return None


async def list_sessions(
    backend: Backend,
    page: Annotated[int, Query(ge=0, le=U32)] = 1,
    page_size: Annotated[int, Query(ge=0, le=U32)] = 20,
) -> JSONResponse:
    page, size = max(page, 1), min(max(page_size, 1), 100)
    sessions = backend.chat.list_sessions()
    rows = [wire.session_item(s) for s in sessions[(page - 1) * size : page * size]]
    now = backend.clock.now()
    meta: dict[str, Any] = {"timestamp": rfc3339_nanos(now), "request_id": request_id()}
    meta["pagination"] = wire.pagination(page, size, len(sessions))
    return Json({"success": True, "data": rows, "meta": meta})


async def get_session(session_id: SessionId, backend: Backend) -> JSONResponse:
    try:
        state = backend.chat.session_state(session_id)
    except NotFound as err:
        raise _missing(err) from err
    return ok({"sessionId": session_id, "state": wire.session_state(state)}, backend.clock.now())


async def session_history(session_id: SessionId, backend: Backend) -> JSONResponse:
    try:
        messages = backend.chat.history(session_id)
    except NotFound as err:
        raise _missing(err) from err
    data = {"messages": [wire.history_message(m) for m in messages], "count": len(messages)}
    return ok(data, backend.clock.now())


async def update_session(session_id: SessionId, body: wire.UpdateSession, backend: Backend) -> JSONResponse:
    try:
        backend.chat.rename(session_id, body.title)
    except NotFound as err:
        raise _agent_error(err) from err
    return ok({"sessionId": session_id, "updated": True}, backend.clock.now())


async def toggle_memory(session_id: SessionId, body: wire.ToggleMemory, backend: Backend) -> JSONResponse:
    try:
        backend.chat.set_memory(session_id, body.enabled)
    except NotFound as err:
        raise _agent_error(err) from err
    return ok({"sessionId": session_id, "memoryEnabled": body.enabled}, backend.clock.now())


async def delete_session(session_id: SessionId, backend: Backend) -> JSONResponse:
    try:
        backend.chat.delete_session(session_id)
    except NotFound as err:
        raise _missing(err) from err
    return ok({"deleted": True, "sessionId": session_id}, backend.clock.now())


async def cleanup_sessions(backend: Backend) -> JSONResponse:
    cleaned = backend.chat.cleanup()
    data = {"cleaned": cleaned, "message": f"Cleaned up {cleaned} invalid session(s)"}
    return ok(data, backend.clock.now())


async def get_pending(session_id: SessionId, backend: Backend) -> JSONResponse:
    now = backend.clock.now()
    return ok(wire.pending(session_id, backend.chat.pending(session_id), now), now)


async def clear_pending(session_id: SessionId, backend: Backend) -> JSONResponse:
    backend.chat.clear_pending(session_id)
    return ok({"cleared": True, "sessionId": session_id}, backend.clock.now())


async def chat(session_id: SessionId, body: wire.ChatRequest, backend: Backend) -> JSONResponse:
    """One turn, collected: every round's text, the tools used (first use order), the reasoning;
    an error or the 300 s (world time) budget is reported in the text."""
    try:
        turn = backend.chat.start_turn(session_id, body.to_turn())
    except NotFound as err:
        raise _missing(err) from err
    started = backend.clock.now()
    got = _Collected()
    timer = asyncio.ensure_future(backend.clock.sleep(HTTP_CHAT_TIMEOUT_S, background=True))
    step: asyncio.Future | None = None
    try:
        while True:
            step = asyncio.ensure_future(turn.next())
            await asyncio.wait((step, timer), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                got.timed_out = True
                break
            if not got.add(step.result()):
                break
    finally:
        for task in (timer, step):
            if task is not None:
                task.cancel()
        turn.cancel()  # the client went away, or time ran out: the server drops the stream
    ms = round((backend.clock.now() - started) * 1000)
    return Json(wire.chat_response(got.response(), session_id, got.used, ms, got.thinking))


@dataclass
class _Collected:
    text: str = ""
    thinking: str | None = None
    used: list[str] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False

    def add(self, event: ChatEvent | None) -> bool:
        """Take one event; False once the turn has ended."""
        kind = event.kind if event is not None else ChatEventKind.END
        if event is None or kind is ChatEventKind.END:
            return False
        if kind is ChatEventKind.RESPONSE:  # the model could not start: the server has no stream
            raise InternalError(event.message)
        if kind is ChatEventKind.CONTENT:
            self.text += event.content
        elif kind is ChatEventKind.THINKING:
            self.thinking = (self.thinking or "") + event.content
        elif kind is ChatEventKind.TOOL_CALL_START and event.tool not in self.used:
            self.used.append(event.tool)
        elif kind is ChatEventKind.ERROR:
            self.error = event.message
        return True

    def response(self) -> str:
        notes = [f"[error: {self.error}]"] if self.error is not None else []
        if self.timed_out:
            notes.append(f"[timed out after {HTTP_CHAT_TIMEOUT_S:.0f}s — showing partial result]")
        return "\n\n".join(p for p in (self.text, *notes) if p)


ROUTES: list[Route] = [
    ("POST", "/sessions", create_session),
    ("GET", "/sessions", list_sessions),
    ("POST", "/sessions/cleanup", cleanup_sessions),
    ("GET", "/sessions/{id}", get_session),
    ("GET", "/sessions/{id}/history", session_history),
    ("PUT", "/sessions/{id}", update_session),
    ("PUT", "/sessions/{id}/memory-toggle", toggle_memory),
    ("DELETE", "/sessions/{id}", delete_session),
    ("POST", "/sessions/{id}/chat", chat),
    ("GET", "/sessions/{id}/pending", get_pending),
    ("DELETE", "/sessions/{id}/pending", clear_pending),
]


router = catalogued_router(ROUTES, "sessions")
