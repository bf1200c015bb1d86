"""A member served from a fixture ``twin record`` wrote (:mod:`hardware.ports.fixture`), on the
world clock: an ASGI app in the same middleware stack as a simulated or passthrough member, so the
fault layer, the journal and the verdicts act on it alike.

- **Answers.** A request at world offset ``t`` (sim seconds since the start) gets the latest answer
  recorded at or before ``t`` for the same method, path and query (credentials in the query
  masked, as recorded), the first one when ``t`` is before its first recording: the same status,
  the recorded headers and the same body bytes. Among them, an answer to a request with the same
  body is preferred.
- **Event streams** (WebSocket and SSE). A stream opened at ``t`` replays the latest stream
  recorded on the same path and query opened at or before ``t`` (else the first). Its frames are
  sent at their recorded offsets on the world clock, so in step mode only as the clock advances;
  frames recorded before the client connected are skipped. The stream's opening frames (marked
  by the recorder: a greeting, the answer to the client's sign-in, a codec configuration) are
  sent at once when the client connects instead.
  The real side's close is replayed at its offset; a stream still open at the end of the recording
  stays open. Client messages are read and ignored (the automation server's sign-in excepted).
- **Auth** works as on the recorded device: logins, sessions and keys (:data:`OWN_PREFIXES
  <hardware.ports.fixture.OWN_PREFIXES>`) are answered by the member's own simulated app, so a
  client logs in as it does on the twin; a recorded answer that was given to a request with
  credentials is given only to a request with credentials that app accepts, else the vendor's 401.
  The automation server's event WebSocket signs in inside the stream, as there: ``?api_key=`` or a
  first ``Auth`` frame, checked before any recorded frame is sent; a failure is its ``Error`` frame.
- **Anything not recorded** is the vendor's not-found: the gateway's ``404 {"code": 404,
  "message": "Not found"}``, the automation server's ``404 {"success": false, "error": {"code":
  "NOT_FOUND", ...}}``; a WebSocket upgrade is refused with that answer. A browser's CORS preflight
  (``OPTIONS``) the fixture does not hold is answered by the member's own app.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send

from api.automation import errors as automation_errors
from api.automation import realtime
from api.automation.deps import API_KEY_PREFIX
from api.gateway import errors as gateway_errors
from api.gateway.deps import request_token
from api.journal import query_of
from api.members.passthrough import deny_upgrade
from api.members.redact import credentials_in, is_own
from api.members.routes import StandIn
from hardware.ports.errors import DomainError, Unauthenticated
from hardware.ports.fixture import Fixture, Frame, Http, Recorded, load_fixture
from hardware.ports.types import ClockState

AUTOMATION_WS = ("/api/events/ws", "/api/events")
"""The automation server's event WebSocket (and its earlier path): it signs in inside the stream."""


class WorldClock(Protocol):
    """What a replay needs of the world clock (:class:`twin.clock.SimClock` is one)."""

    def state(self) -> ClockState: ...

    def sleep(self, seconds: float, *, background: bool = False) -> Awaitable[None]: ...


class Replay(StandIn):
    """``simulated``: the member's own app (logins, and the credential check); ``now``: world
    seconds since the start; ``sleep``: a background wait of that many world seconds."""

    def __init__(
        self,
        fixture: Fixture,
        simulated: Any,
        *,
        now: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        release: str = "0.9.24",
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        super().__init__(routes)
        self.fixture = fixture
        self.vendor = fixture.vendor
        self.simulated = simulated
        self.state = simulated.state
        self.now = now
        self.sleep = sleep
        self.release = release

    @classmethod
    def load(cls, path: Path, simulated: Any, clock: WorldClock, release: str = "0.9.24") -> Replay:
        """The member ``simulated`` served from the fixture at ``path`` on ``clock``; the routes of
        ``simulated`` name the journal's templates."""
        return cls(
            load_fixture(path),
            simulated,
            now=lambda: clock.state().sim_time,
            sleep=lambda seconds: clock.sleep(seconds, background=True),
            release=release,
            routes=simulated.state.routes,
        )

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and is_own(self.vendor, scope["path"]):
            await self.simulated(scope, receive, send)  # logins, sessions and keys: its own app's
        else:
            await super()._serve(scope, receive, send)

    # Answers in the vendor's shape -------------------------------------------------------------
    def _not_found(self) -> Response:
        if self.vendor == "gateway":
            return gateway_errors.not_found()
        return automation_errors.error_response(404, "NOT_FOUND", "Not found")

    def _unauthorized(self) -> Response:
        if self.vendor == "gateway":
            return gateway_errors.unauthorized()
        exc = Unauthenticated("Authentication required. Provide a valid JWT token or API key.")
        status, code = automation_errors.lookup(exc)
        legacy = automation_errors.legacy_response(exc, status, None) if self.release == "0.9.17" else None
        return legacy or automation_errors.error_response(status, code, exc.message)

    def _authorized(self, scope: Scope) -> bool:
        """Whether the member's own app accepts the request's credentials."""
        conn = HTTPConnection(scope)
        backend = self.simulated.state.backend
        try:
            if self.vendor == "gateway":
                token = request_token(conn)
                if not token:
                    return False
                backend.auth.check_token(token)
                return True
            scheme, _, value = conn.headers.get("authorization", "").partition(" ")
            token = (value.strip() if scheme.lower() == "bearer" else "") or conn.query_params.get(
                "token", ""
            )
            if token and not token.startswith(API_KEY_PREFIX):
                backend.users.authenticate(token)
                return True
            key = conn.headers.get("x-api-key") or conn.query_params.get("api_key") or token
            if not key:
                return False
            backend.api_keys.authenticate(key)
            return True
        except DomainError:
            return False

    # HTTP ------------------------------------------------------------------------------------
    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        digest = hashlib.sha256()
        sized = False
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            if message.get("body"):
                digest.update(message["body"])
                sized = True
            if not message.get("more_body", False):
                break
        query = query_of(scope.get("query_string", b""))
        t = self.now()
        body = digest.hexdigest() if sized else None
        found = self.fixture.answer(
            scope["method"], scope["path"], query, body, bool(credentials_in(scope)), t
        )
        if found is None and scope["method"] == "OPTIONS":  # a browser's preflight: the member's own CORS
            await self.simulated(scope, _replayed_body(), send)
            return
        if found is None:
            await self._not_found()(scope, receive, send)
            return
        opened = found.opened
        if opened.auth and not self._authorized(scope):
            await self._unauthorized()(scope, receive, send)
            return
        if isinstance(found, Http):
            await _answer(send, found.status, found.headers, found.content)
        elif opened.status >= 300:
            await _answer(send, opened.status, opened.headers, opened.content)
        else:
            await self._sse(found, t, receive, send)

    async def _sse(self, recorded: Recorded, t: float, receive: Receive, send: Send) -> None:
        headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in recorded.opened.headers]
        await send({"type": "http.response.start", "status": recorded.opened.status, "headers": headers})

        async def emit(frame: Frame) -> None:
            payload = frame.payload
            body = payload.encode() if isinstance(payload, str) else payload
            await send({"type": "http.response.body", "body": body, "more_body": True})

        async def gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        if await self._play(recorded, t, emit, gone):
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    # WebSocket -------------------------------------------------------------------------------
    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        t = self.now()
        found = self.fixture.socket(scope["path"], query_of(scope.get("query_string", b"")), t)
        if found is None:
            await _refuse(scope, send, self._not_found())
            return
        opened = found.opened
        if opened.status != 101:
            await deny_upgrade(
                scope, send, opened.status, _raw(opened.headers, opened.content), opened.content
            )
            return
        signs_in = self.vendor == "automation" and scope["path"] in AUTOMATION_WS
        checked = opened.auth and not signs_in
        if checked and not self._authorized(scope):
            await _refuse(scope, send, self._unauthorized())
            return
        await send({"type": "websocket.accept", "subprotocol": opened.subprotocol})
        if signs_in and not await self._sign_in(scope, receive, send):
            return

        async def emit(frame: Frame) -> None:
            payload = frame.payload
            key = "text" if isinstance(payload, str) else "bytes"
            await send({"type": "websocket.send", key: payload})

        async def gone() -> None:
            while (await receive())["type"] != "websocket.disconnect":
                pass  # client messages are ignored

        if await self._play(found, t, emit, gone):
            code = found.close.code if found.close is not None and found.close.code else 1000
            await send({"type": "websocket.close", "code": code})

    async def _sign_in(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """The event WebSocket's sign-in, as the server does it: ``?api_key=``, else a first frame
        ``{"type": "Auth", "token" | "api_key"}``; a failure is its Error frame, then a close."""
        token, key = None, HTTPConnection(scope).query_params.get("api_key")
        if not key:
            message = await receive()
            if message["type"] != "websocket.receive":
                return False
            try:
                frame = json.loads(message.get("text") or "")
            except ValueError:
                frame = None
            if isinstance(frame, dict) and frame.get("type") == "Auth":
                token, key = (
                    v if isinstance(v, str) else None for v in (frame.get("token"), frame.get("api_key"))
                )
        try:
            realtime.authenticate(self.simulated.state.backend, token, key)
            return True
        except DomainError:
            given = HTTPConnection(scope).query_params.get("api_key")
            why = (
                "Invalid API key"
                if given
                else "Invalid or expired token"
                if token or key
                else "Authentication required"
            )
            await send({"type": "websocket.send", "text": json.dumps({"type": "Error", "message": why})})
            await send({"type": "websocket.close", "code": 1000})
            return False

    # Frames on the world clock ---------------------------------------------------------------
    async def _play(
        self,
        recorded: Recorded,
        t: float,
        emit: Callable[[Frame], Awaitable[None]],
        gone: Callable[[], Awaitable[None]],
    ) -> bool:
        """Send the stream's frames on time until the recorded close (``True``: close now) or until
        the client goes (``False``); a stream the real side never closed waits for the client."""

        async def frames() -> None:
            for at, frame in schedule(recorded, t):
                await self._until(at)
                await emit(frame)
            if recorded.close is None:
                await asyncio.Event().wait()
            else:
                await self._until(max(recorded.close.t, recorded.opened.t, t))

        playing, leaving = asyncio.ensure_future(frames()), asyncio.ensure_future(gone())
        try:
            await asyncio.wait({playing, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (playing, leaving):
                task.cancel()
            for task in (playing, leaving):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        return playing.done() and not playing.cancelled() and not leaving.done()

    async def _until(self, at: float) -> None:
        """Wait until world offset ``at``: a clock run to exactly ``at`` has reached it (the delay is
        rounded down so that now + delay, as the clock adds it, is not past ``at``)."""
        now = self.now()
        delay = at - now
        while delay > 0 and now + delay > at:
            delay = math.nextafter(delay, 0.0)
        if delay > 0:
            await self.sleep(delay)


def _replayed_body() -> Receive:
    """A receive for a request whose (empty) body was read already."""

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    return receive


def schedule(recorded: Recorded, t: float) -> list[tuple[float, Frame]]:
    """When each frame of ``recorded`` is sent to a client that connected at ``t``: an opening frame
    at once, any other at its recorded offset, skipped if that was before ``t``."""
    out = []
    for frame in recorded.frames:
        if frame.opening:
            out.append((t, frame))
        elif frame.t >= t:
            out.append((frame.t, frame))
    return out


def _raw(headers: list[tuple[str, str]], body: bytes) -> list[tuple[bytes, bytes]]:
    raw = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers if n != "content-length"]
    return [*raw, (b"content-length", str(len(body)).encode())]


async def _answer(send: Send, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": _raw(headers, body)})
    await send({"type": "http.response.body", "body": body})


async def _refuse(scope: Scope, send: Send, response: Response) -> None:
    await deny_upgrade(scope, send, response.status_code, response.raw_headers, response.body)
