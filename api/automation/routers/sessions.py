"""Chat sessions (jwt-or-api-key): create, list (the one paginated envelope), read, history, rename,
memory toggle, delete, cleanup, the pending stream of a turn in flight, and a chat turn over HTTP.

Enveloped, but for ``POST /sessions/:id/chat``, which answers the raw ``ChatResponse``. As on the
server, reading, deleting or chatting with an unknown session is 404 "Session not found", while
renaming or toggling its memory is a 500 whose message is the agent's "Not found: Session: <id>";
``POST /sessions`` takes any body (a complete ``{"config": AgentConfig}`` overrides the defaults).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from api.automation.deps import Backend
from api.automation.routers.agents import Route, release_router
from api.automation.schemas import Json, ok, request_id, rfc3339_nanos
from api.automation.schemas import chat as wire
from hardware.ports.chat import ChatEventKind, ChatTurn, SessionOptions
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
        body = json.loads(await request.body() or b"null")
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
    meta = {"timestamp": rfc3339_nanos(now), "request_id": request_id()}
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
    text, thinking, used, error, timed_out = await _collect(
        turn, backend.clock.sleep(HTTP_CHAT_TIMEOUT_S, background=True)
    )
    if error is not None:
        text += ("\n\n" if text else "") + f"[error: {error}]"
    if timed_out:
        text += (
            "\n\n" if text else ""
        ) + f"[timed out after {HTTP_CHAT_TIMEOUT_S:.0f}s — showing partial result]"
    ms = round((backend.clock.now() - started) * 1000)
    return Json(wire.chat_response(text, session_id, used, ms, thinking))


async def _collect(turn: ChatTurn, budget) -> tuple[str, str | None, list[str], str | None, bool]:
    timer = asyncio.ensure_future(budget)
    text, thinking, used, error = "", None, [], None
    try:
        while True:
            step = asyncio.ensure_future(turn.next())
            await asyncio.wait((step, timer), return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                turn.cancel()
                return text, thinking, used, error, True
            event = step.result()
            if event is None or event.kind is ChatEventKind.END:
                return text, thinking, used, error, False
            if event.kind is ChatEventKind.RESPONSE:  # the model could not start: no stream to collect
                raise InternalError(event.message)
            if event.kind is ChatEventKind.CONTENT:
                text += event.content
            elif event.kind is ChatEventKind.THINKING:
                thinking = (thinking or "") + event.content
            elif event.kind is ChatEventKind.TOOL_CALL_START and event.tool not in used:
                used.append(event.tool)
            elif event.kind is ChatEventKind.ERROR:
                error = event.message
    finally:
        timer.cancel()


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


def router_for(release: str) -> APIRouter:
    return release_router(ROUTES, release, "sessions")
