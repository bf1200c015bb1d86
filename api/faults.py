"""Transport and API faults as ASGI middleware. Delays are awaited on the world clock, never
``time.sleep``, so a thousand delayed requests cost a thousand timers, not a thousand threads.

Per server: latency with jitter (per path prefix), a 5xx burst (a status for the next N requests or
until cleared), packet loss (a fraction of connections reset), resets of the next N requests, a hang
(requests get no answer until the hang is lifted, then their connection closes), truncated bodies
(the next N responses stop halfway, then the connection closes), a bandwidth cap on response
bodies, and dropping every open stream (a WebSocket is closed by the server with 1012, an SSE
response is cut where it is and its body ended). A reset sends the
status line and closes the connection before the body, which a client sees as a peer that closed
without a complete message. Random draws (jitter, loss) come from a counter-based generator seeded
per server, so the same run draws the same numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

FAULT_KEY = "twin.fault"
ENDED_KEY = "twin.ended_at"
"""Set on a stream's scope when the fault layer ends it: the world time the drop was decided."""
HANG_POLL_S = 1.0
MAX_FAULTS = 64
"""Latency entries, and 5xx bursts, a server keeps at once: adding one past this many drops the
oldest (a control plane or scenario that adds without clearing cannot grow them)."""
_MASK = (1 << 64) - 1


class InjectedReset(ConnectionError):
    """Raised inside the ASGI app to make the server drop the connection (an injected reset)."""


class _QuietResets(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, InjectedReset)


logging.getLogger("uvicorn.error").addFilter(_QuietResets())


def _uniform(seed: int, counter: int) -> float:
    """A splitmix64 draw in [0, 1) for (seed, counter)."""
    z = (seed * 0x9E3779B97F4A7C15 + counter * 0xBF58476D1CE4E5B9 + 0x94D049BB133111EB) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return (z >> 11) / float(1 << 53)


@dataclass(slots=True)
class Latency:
    seconds: float
    path_prefix: str = "/"
    jitter: float = 0.0
    """Up to this many seconds more or less, drawn per request (the total never goes below 0)."""


@dataclass(slots=True)
class ErrorBurst:
    status: int
    path_prefix: str = "/"
    remaining: int | None = None
    """Requests left to fail; ``None`` fails every matching request until cleared."""


@dataclass(slots=True)
class FaultSet:
    """The faults active on one server. The control plane and scenarios edit it through its
    methods; the middleware reads it."""

    latency: list[Latency] = field(default_factory=list)
    errors: list[ErrorBurst] = field(default_factory=list)
    loss: float = 0.0
    """Fraction of requests whose connection is reset."""
    reset_next: int = 0
    truncate_next: int = 0
    """The next N responses are cut off halfway through their body, then the connection closes."""
    hang: bool = False
    bandwidth: float | None = None
    """Response body bytes per world second."""
    seed: int = 0
    draws: int = 0
    streams: dict[int, tuple[Scope, Callable[[int], Awaitable[None]]]] = field(default_factory=dict)
    """Open WebSockets and event streams: each one's scope and the coroutine function that drops
    it (given the WebSocket close code)."""
    _stream_ids: int = 0
    _closing: set = field(default_factory=set)

    def _draw(self) -> float:
        self.draws += 1
        return _uniform(self.seed, self.draws)

    @property
    def active(self) -> bool:
        return bool(
            self.latency
            or self.errors
            or self.loss
            or self.reset_next
            or self.truncate_next
            or self.hang
            or self.bandwidth
        )

    def delay_for(self, path: str) -> float:
        total = 0.0
        for lat in self.latency:
            if path.startswith(lat.path_prefix):
                total += lat.seconds
                if lat.jitter:
                    total += lat.jitter * (2.0 * self._draw() - 1.0)
        return max(0.0, total)

    def add_latency(self, seconds: float, path_prefix: str = "/", jitter: float = 0.0) -> int:
        """Delay requests under ``path_prefix`` by ``seconds`` (± ``jitter``) of world time; the
        number of latency faults now active."""
        if len(self.latency) >= MAX_FAULTS:
            del self.latency[0]
        self.latency.append(Latency(seconds, path_prefix, jitter))
        return len(self.latency)

    def remove_latency(self, seconds: float, path_prefix: str = "/", jitter: float = 0.0) -> None:
        target = Latency(seconds, path_prefix, jitter)
        if target in self.latency:
            self.latency.remove(target)

    def add_errors(self, status: int, path_prefix: str = "/", count: int | None = None) -> None:
        if len(self.errors) >= MAX_FAULTS:
            del self.errors[0]
        self.errors.append(ErrorBurst(status, path_prefix, count))

    def error_for(self, path: str) -> int | None:
        for burst in self.errors:
            if path.startswith(burst.path_prefix):
                if burst.remaining is not None:
                    burst.remaining -= 1
                    if burst.remaining <= 0:
                        self.errors.remove(burst)
                return burst.status
        return None

    def should_reset(self) -> bool:
        if self.reset_next > 0:
            self.reset_next -= 1
            return True
        return self.loss > 0 and self._draw() < self.loss

    def drop_streams(self, code: int = 1012, at: float | None = None) -> int:
        """Close every open stream from the server side (WebSockets with ``code``, 1012: service
        restart); the number closed. It happens on the event loop; the apps then see the client
        go away. ``at`` (world time) is when the journal says each stream ended."""
        drops = list(self.streams.values())
        self.streams.clear()
        for scope, drop in drops:
            scope[FAULT_KEY] = "dropped"
            if at is not None:
                scope[ENDED_KEY] = at
            task = asyncio.ensure_future(drop(code))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        return len(drops)

    def open_stream(self, scope: Scope, drop: Callable[[int], Awaitable[None]]) -> int:
        """Register an open stream served outside the ASGI apps (an RTSP session) so that
        :meth:`drop_streams` ends it too; the key for :meth:`close_stream`."""
        return self._register(scope, drop)

    def close_stream(self, key: int) -> None:
        self.streams.pop(key, None)

    def _register(self, scope: Scope, drop: Callable[[int], Awaitable[None]]) -> int:
        self._stream_ids += 1
        self.streams[self._stream_ids] = (scope, drop)
        return self._stream_ids

    def describe(self) -> dict:
        return {
            "latency": [
                {"seconds": lat.seconds, "path_prefix": lat.path_prefix, "jitter": lat.jitter}
                for lat in self.latency
            ],
            "errors": [
                {"status": b.status, "path_prefix": b.path_prefix, "remaining": b.remaining}
                for b in self.errors
            ],
            "loss": self.loss,
            "reset_next": self.reset_next,
            "truncate_next": self.truncate_next,
            "hang": self.hang,
            "bandwidth": self.bandwidth,
            "open_streams": len(self.streams),
        }

    def clear(self) -> None:
        self.latency.clear()
        self.errors.clear()
        self.loss = 0.0
        self.reset_next = 0
        self.truncate_next = 0
        self.hang = False
        self.bandwidth = None


def _canceller(task: asyncio.Task | None) -> Callable[[int], Awaitable[None]]:
    async def cancel(_code: int) -> None:
        if task is not None:
            task.cancel()

    return cancel


def _is_event_stream(message: Message) -> bool:
    if message["type"] != "http.response.start" or message["status"] != 200:
        return False
    for name, value in message.get("headers", ()):
        if value.startswith(b"text/event-stream") and name.lower() == b"content-type":
            return True
    return False


_ERROR_TEXT = {500: b"Internal Server Error", 502: b"Bad Gateway", 503: b"Service Unavailable"}


class FaultMiddleware:
    def __init__(self, app: ASGIApp, faults: FaultSet, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.app = app
        self.faults = faults
        self.sleep = sleep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        faults = self.faults
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not faults.active:
            await self._plain(scope, receive, send)
            return
        path = scope["path"]
        delay = faults.delay_for(path)
        if delay > 0:
            await self.sleep(delay)
        if faults.hang:
            scope[FAULT_KEY] = "hang"
            while faults.hang:
                await self.sleep(HANG_POLL_S)
            await self._reset(send)
        if faults.should_reset():
            scope[FAULT_KEY] = "reset"
            await self._reset(send)
        status = faults.error_for(path)
        if status is not None:
            scope[FAULT_KEY] = f"http_{status}"
            body = _ERROR_TEXT.get(status, b"Error")
            headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if faults.truncate_next > 0:
            faults.truncate_next -= 1
            scope[FAULT_KEY] = "truncated"
            await self.app(scope, receive, self._truncated(send))
            return
        if faults.bandwidth:
            send = self._throttled(send, faults.bandwidth)
        await self._plain(scope, receive, send)

    async def _plain(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            await self._get(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """WebSockets: injected latency before the handshake, and registration so that a drop
        can close them; the scope is marked when the fault layer closed the connection."""
        faults = self.faults
        delay = faults.delay_for(scope["path"]) if faults.latency else 0.0
        if delay > 0:
            await self.sleep(delay)

        async def drop(code: int) -> None:
            with contextlib.suppress(Exception):  # already closed by either side
                await send({"type": "websocket.close", "code": code, "reason": "dropped by the fault layer"})

        key = faults._register(scope, drop)
        try:
            await self.app(scope, receive, send)
        finally:
            faults.streams.pop(key, None)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A GET whose answer turns out to be an event stream is registered so that a drop ends
        it: the request's task is cancelled where it waits, and the body is ended cleanly (the
        client reads the end of the stream, as when a proxy in front restarts)."""
        faults = self.faults
        task = asyncio.current_task()  # the request's (the response may stream from another)
        keys: list[int] = []

        async def watching(message: Message) -> None:
            if not keys and _is_event_stream(message):
                keys.append(faults._register(scope, _canceller(task)))
            await send(message)

        try:
            await self.app(scope, receive, watching)
        except asyncio.CancelledError:
            if not keys or scope.get(FAULT_KEY) != "dropped" or task is None:
                raise
            task.uncancel()
            with contextlib.suppress(Exception):  # the client may have gone too
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            if keys:
                faults.streams.pop(keys[0], None)

    def _throttled(self, send: Send, rate: float) -> Send:
        async def throttled(message: Message) -> None:
            if message["type"] == "http.response.body":
                size = len(message.get("body", b""))
                if size:
                    await self.sleep(size / rate)
            await send(message)

        return throttled

    @staticmethod
    def _truncated(send: Send) -> Send:
        async def truncated(message: Message) -> None:
            if message["type"] == "http.response.body":
                body = message.get("body", b"")
                await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
                raise InjectedReset("response truncated by the fault layer")
            await send(message)

        return truncated

    @staticmethod
    async def _reset(send: Send) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"64")],
            }
        )
        raise InjectedReset("connection reset by the fault layer")
