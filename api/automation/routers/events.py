"""Realtime events: WebSocket ``/events/ws`` and Server-Sent Events ``/events/stream`` (reference §9).

Both carry the same envelopes (:mod:`api.automation.realtime`), filtered by ``?category=`` and
repeated ``?event_type=``. Each connection holds one bus subscription and drains it in batches;
a connection that falls more than a queue's worth behind loses the oldest events, which the bus
counts (``/metrics``) and the connection logs as it happens and when it ends. Neither path is rate
limited.

WebSocket: authenticated by ``?api_key=`` or by a first text frame ``{"type":"Auth","token"}`` (or
``"api_key"``); ``?token=`` is ignored. One that sends no frame is told "Authentication required"
and closed after ``ws_auth_timeout`` wall seconds (60 by default; the server would wait forever).
Events come as ``{"batch":true,"events":[…]}`` of at most 10, a partial batch at most 50 ms after
its first event; ``AgentExecutionCompleted`` and ``AlertCreated`` come at once as bare envelopes.
The server pings (``{"type":"ping"}``) on authentication and every 30 s of world time; a client
that has not answered ``{"type":"pong"}`` for more than 60 s is told "Heartbeat timeout"
and closed at the next ping.

SSE: ``?token=`` (JWT) or ``?api_key=``; without valid credentials a bare 401. The event name is
the type; a ``:keepalive`` comment follows 30 s of world time without an event.

``POST /events`` publishes a client's own event, carried as ``Custom`` (``{custom_type, data}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.background import BackgroundTask
from starlette.websockets import WebSocketDisconnect, WebSocketState

from api import json_input
from api.automation.deps import Backend, catalogued
from api.automation.realtime import (
    IMMEDIATE,
    SUBSCRIPTION_QUEUE,
    Envelope,
    EventEncoder,
    EventFilter,
    authenticate,
    encoder_of,
    try_authenticate,
)
from api.tasks import first_failure
from hardware.ports.automation import AutomationBackend
from hardware.ports.clock import Clock
from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.events import Event, Subscription

log = logging.getLogger(__name__)
router = APIRouter(tags=["events"])
legacy = APIRouter(tags=["earlier revision"])
"""Release 0.9.17 also answers the earlier revision's paths: WebSocket and SSE both at ``/events``."""

BATCH_SIZE = 10
BATCH_DELAY_S = 0.05
"""Transport buffering, on the loop's own timer: a partial batch waits this long for company."""
HEARTBEAT_S = 30.0
HEARTBEAT_TIMEOUT_S = 60.0
KEEPALIVE_S = 30.0
WS_AUTH_TIMEOUT_S = 60.0
"""Wall seconds a connection may wait before its ``Auth`` frame (``app.state.ws_auth_timeout``)."""
DRAIN = 512
"""Bus events taken per wake-up, so one connection never holds the loop for long."""


MAX_CUSTOM_DATA = 1 << 20


class PublishEvent(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event_type: StrictStr = Field(min_length=1, max_length=256)
    data: object
    source: StrictStr | None = None


@router.post("/events")
async def publish_event(body: PublishEvent, backend: Backend) -> JSONResponse:
    if len(json.dumps(body.data, separators=(",", ":"))) > MAX_CUSTOM_DATA:
        raise InvalidInput("data must be at most 1 MB", field="data")
    source = body.source or "api"
    backend.publish_event(body.event_type, body.data, source)
    return JSONResponse({"success": True, "event_type": body.event_type, "source": source})


# SSE -------------------------------------------------------------------------------------------
@router.get("/events/stream", tags=["realtime"])
@legacy.get("/events", tags=["realtime"])
async def event_stream(request: Request, backend: Backend) -> Response:
    query = request.query_params
    if try_authenticate(backend, query.get("token"), query.get("api_key")) is None:
        return Response(status_code=401)
    events = EventFilter.of(query.get("category"), query.getlist("event_type"))
    sub = backend.bus.subscribe(events.kinds(), maxlen=SUBSCRIPTION_QUEUE)
    return StreamingResponse(
        _sse(sub, events, encoder_of(request.app.state, backend), backend.clock),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        background=BackgroundTask(_finish, sub, "sse"),
    )


async def _sse(
    sub: Subscription, events: EventFilter, encoder: EventEncoder, clock: Clock
) -> AsyncIterator[bytes]:
    """Everything pending goes out as one write (at most :data:`DRAIN` events); a keep-alive
    comment after 30 s of world time without one.

    A subscriber that stops reading holds only its own queue (the oldest events dropped past
    :data:`SUBSCRIPTION_QUEUE`) and its task, parked in the write. Each batch then yields to the
    loop: a large backlog never holds it, and once the client is gone (the server's writes return
    at once then) the response is cancelled at the next batch instead of encoding the backlog."""
    accepted = events.accepted()
    losses = _Losses(sub, "sse")
    last_sent = clock.now()
    keepalive = asyncio.ensure_future(clock.sleep(KEEPALIVE_S, background=True))
    ready: asyncio.Future | None = None
    try:
        while True:
            items = sub.drain(DRAIN)
            if not items:
                ready = asyncio.ensure_future(sub.ready())
                await asyncio.wait((ready, keepalive), return_when=asyncio.FIRST_COMPLETED)
                ready.cancel()
                ready = None
            if keepalive.done():
                keepalive.exception()  # a reset world fails the wait: just start a new one
                idle = clock.now() - last_sent
                if idle >= KEEPALIVE_S:
                    last_sent = clock.now()
                    yield b":keepalive\n\n"
                    idle = 0.0
                keepalive = asyncio.ensure_future(clock.sleep(max(KEEPALIVE_S - idle, 1.0), background=True))
            if not items:
                continue
            losses.check()
            chunk = _sse_chunk(items, accepted, encoder)
            if chunk:
                last_sent = clock.now()
                yield chunk
            await asyncio.sleep(0)  # a backlog goes out one batch per turn of the loop (see _sse)
    finally:
        keepalive.cancel()
        if ready is not None:
            ready.cancel()
        _finish(sub, "sse")


def _envelopes(
    items: list[tuple[int, Event]], accepted: frozenset[str] | None, encoder: EventEncoder
) -> list[Envelope]:
    """The envelopes of drained bus items that pass the connection's filter (``None``: all pass)."""
    found = encoder.many(items)
    return found if accepted is None else [env for env in found if env.type in accepted]


def _sse_chunk(
    items: list[tuple[int, Event]], accepted: frozenset[str] | None, encoder: EventEncoder
) -> bytes:
    return b"".join(env.sse for env in _envelopes(items, accepted, encoder))


class _Losses:
    """Reports a live connection's drops as they happen (at most one log line per 10 s of wall time),
    not only when it ends; the bus counts them for ``/metrics`` either way."""

    def __init__(self, sub: Subscription, channel: str) -> None:
        self.sub = sub
        self.channel = channel
        self.reported = 0
        self.quiet_until = 0.0

    def check(self) -> None:
        dropped = self.sub.dropped
        if dropped > self.reported:
            now = asyncio.get_running_loop().time()
            if now >= self.quiet_until:
                log.warning(
                    "events %s: connection falling behind, %d events dropped so far", self.channel, dropped
                )
                self.reported, self.quiet_until = dropped, now + 10.0


def _finish(sub: Subscription, channel: str) -> None:
    if getattr(sub, "closed", False):
        return
    sub.close()
    if sub.dropped:
        log.warning("events %s: connection fell behind and lost %d events", channel, sub.dropped)


# WebSocket ---------------------------------------------------------------------------------------
@router.websocket("/events/ws")
@legacy.websocket("/events")
async def event_ws(websocket: WebSocket) -> None:
    backend: AutomationBackend = websocket.app.state.backend
    query = websocket.query_params
    events = EventFilter.of(query.get("category"), query.getlist("event_type"))
    await websocket.accept()
    if not await _ws_authenticate(websocket, backend, query.get("api_key")):
        return
    sub = backend.bus.subscribe(events.kinds(), maxlen=SUBSCRIPTION_QUEUE)
    session = _WsSession(websocket, sub, events, encoder_of(websocket.app.state, backend), backend.clock)
    try:
        await websocket.send_text(
            json.dumps({"type": "Authenticated", "message": "Authentication successful"})
        )
        await session.run()
    except (WebSocketDisconnect, RuntimeError, OSError):
        pass
    finally:
        _finish(sub, "ws")
        if websocket.application_state != WebSocketState.DISCONNECTED:
            with contextlib.suppress(Exception):
                await websocket.close()


catalogued(router)  # the earlier revision's paths (``legacy``) authenticate in their handlers


async def _ws_error(websocket: WebSocket, message: str) -> None:
    with contextlib.suppress(Exception):
        await websocket.send_text(json.dumps({"type": "Error", "message": message}))
        await websocket.close()


async def _ws_authenticate(websocket: WebSocket, backend: AutomationBackend, api_key: str | None) -> bool:
    """``?api_key=``, else the first text frame must be ``{"type":"Auth", "token"|"api_key"}``."""
    if api_key:
        if try_authenticate(backend, None, api_key) is None:
            await _ws_error(websocket, "Invalid API key")
            return False
        return True
    timeout = getattr(websocket.app.state, "ws_auth_timeout", WS_AUTH_TIMEOUT_S)
    try:
        message = await asyncio.wait_for(websocket.receive(), timeout)
    except TimeoutError:  # the server itself waits forever; the twin bounds what a client holds
        await _ws_error(websocket, "Authentication required")
        return False
    except (WebSocketDisconnect, RuntimeError):
        return False
    if message["type"] == "websocket.disconnect":
        return False
    try:
        frame = json_input.loads((message.get("text") or "").encode(), json_input.SERDE)
    except ValueError:
        frame = None
    if not isinstance(frame, dict) or frame.get("type") != "Auth":
        await _ws_error(websocket, "Authentication required")
        return False
    token, key = frame.get("token"), frame.get("api_key")
    token = token if isinstance(token, str) else None
    key = key if isinstance(key, str) else None
    if not (token or key):
        await _ws_error(websocket, "Authentication required")
        return False
    try:
        authenticate(backend, token, key)
    except DomainError:
        await _ws_error(websocket, "Invalid or expired token")
        return False
    return True


class _WsSession:
    """One authenticated connection: a sender (batches), a heartbeat (world time) and a reader
    (pongs, close). Sends are serialised by a lock; the first of the three to end ends the rest."""

    def __init__(
        self,
        websocket: WebSocket,
        sub: Subscription,
        events: EventFilter,
        encoder: EventEncoder,
        clock: Clock,
    ) -> None:
        self.websocket = websocket
        self.sub = sub
        self.accepted = events.accepted()
        self.encoder = encoder
        self.clock = clock
        self.lock = asyncio.Lock()
        self.losses = _Losses(sub, "ws")
        self.last_pong = clock.now()

    async def send(self, text: str) -> None:
        async with self.lock:
            await self.websocket.send_text(text)

    async def run(self) -> None:
        await first_failure(self.sender(), self.heartbeat(), self.reader())

    async def reader(self) -> None:
        while True:
            message = await self.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if not text:
                continue
            try:
                frame = json_input.loads(text.encode(), json_input.SERDE)
            except ValueError:
                continue
            if isinstance(frame, dict) and frame.get("type") == "pong":
                self.last_pong = self.clock.now()

    async def heartbeat(self) -> None:
        """Beats fall every 30 s of world time from authentication. A clock advanced in one jump
        still has every beat in between, each judged at its own time."""
        beat = self.clock.now()
        while True:
            if beat - self.last_pong > HEARTBEAT_TIMEOUT_S:
                await self.send(json.dumps({"type": "Error", "message": "Heartbeat timeout"}))
                return
            await self.send(json.dumps({"type": "ping", "timestamp": int(beat)}))
            beat += HEARTBEAT_S
            try:
                await self.clock.sleep(beat - self.clock.now(), background=True)
            except DomainError:  # the world was reset or restored under us: beat on from its time
                beat = self.last_pong = self.clock.now()

    async def sender(self) -> None:
        loop = asyncio.get_running_loop()
        pending: list[str] = []
        deadline = 0.0
        while True:
            if pending:
                try:
                    await asyncio.wait_for(self.sub.ready(), max(0.0, deadline - loop.time()))
                except TimeoutError:
                    await self._flush(pending)
                    continue
            else:
                await self.sub.ready()
            await asyncio.sleep(0)  # one drained batch per turn of the loop, as the SSE stream
            envelopes = _envelopes(self.sub.drain(DRAIN), self.accepted, self.encoder)
            self.losses.check()
            if not envelopes:
                continue
            fresh = not pending
            if IMMEDIATE.isdisjoint(env.type for env in envelopes):
                pending.extend(env.json for env in envelopes)
            else:
                for env in envelopes:
                    if env.type in IMMEDIATE:
                        await self._flush(pending)
                        await self.send(env.json)
                    else:
                        pending.append(env.json)
            flushed = len(pending) >= BATCH_SIZE
            while len(pending) >= BATCH_SIZE:
                await self.send(_batch(pending[:BATCH_SIZE]))
                del pending[:BATCH_SIZE]
            if pending and (fresh or flushed):
                deadline = loop.time() + BATCH_DELAY_S

    async def _flush(self, pending: list[str]) -> None:
        if pending:
            text = _batch(pending)
            pending.clear()
            await self.send(text)


def _batch(texts: list[str]) -> str:
    return '{"batch":true,"events":[' + ",".join(texts) + "]}"
