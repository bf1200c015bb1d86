"""Bounds on what an HTTP client can hold on a listener, in the protocol layer (before any app).

Each listener serves uvicorn's httptools protocol with these limits (:func:`protocol` makes its
class), so a request head that is too big is cut off as it arrives instead of being buffered:

- **head size**: the request line and headers together; past it the answer is ``431 Request
  Header Fields Too Large`` and a close, whether the head has ended or not (an unfinished one is
  refused once the bytes read for it pass the limit: at most one read, 256 KiB, beyond it).
- **header count**: more headers than the limit, ``431`` too.
- **request target**: a URL longer than the limit, ``414 URI Too Long`` (hyper's ``http`` crate).
- **slow head**: a head not finished within ``header_timeout`` seconds of its first byte (or of
  the connection, for its first request) is closed without an answer (slowloris), as hyper's
  header read timeout and Go's read deadline do.
- **idle keep-alive**: ``idle_timeout`` seconds after an answer with no new request, closed.

The sizes are the vendors' own: the automation server is Rust's hyper (a read buffer of 8 KiB +
100 x 4 KiB = 417 792 bytes for the head, 100 headers at most, URIs up to 65 534 bytes); the
camera's gateway is Go's ``net/http`` (``DefaultMaxHeaderBytes`` 1 MiB, plus the 4 096 bytes of
slack its reader allows; no count or URL limit of its own). The timeouts are wall time, whatever
the world's clock does: they bound the machine's resources, not the simulation.
"""

from __future__ import annotations

import argparse
import asyncio
import http
from dataclasses import dataclass, replace
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_S = 30.0
"""hyper's ``header_read_timeout`` default."""
IDLE_TIMEOUT_S = 60.0
"""The gateway's ``IdleTimeout``."""
WS_AUTH_TIMEOUT_S = 60.0
"""The automation server's event WebSocket waits for its ``Auth`` frame without a limit; the twin
closes it after as long as it allows an authenticated client to miss its pongs."""


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    body: bytes = b""
    content_type: bytes = b""

    def response(self) -> bytes:
        phrase = http.HTTPStatus(self.status).phrase
        head = [f"HTTP/1.1 {self.status} {phrase}".encode()]
        if self.content_type:
            head.append(b"content-type: " + self.content_type)
        head += [b"content-length: " + str(len(self.body)).encode(), b"connection: close"]
        return b"\r\n".join(head) + b"\r\n\r\n" + self.body


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """What one listener accepts of a request head, and how long it waits for one."""

    max_head: int
    """Bytes of the request line and headers together."""
    max_headers: int | None = None
    max_target: int | None = None
    """Bytes of the request target (the URL)."""
    too_large: Refusal = Refusal(431)
    too_long: Refusal = Refusal(414)
    header_timeout: float = HEADER_TIMEOUT_S
    idle_timeout: float = IDLE_TIMEOUT_S

    def timed(self, header_timeout: float, idle_timeout: float) -> HttpLimits:
        return replace(self, header_timeout=header_timeout, idle_timeout=idle_timeout)


HYPER = HttpLimits(max_head=8192 + 4096 * 100, max_headers=100, max_target=65534)
"""The automation server (axum on hyper 1.x): its answers carry no body."""
GO = HttpLimits(
    max_head=(1 << 20) + 4096,
    too_large=Refusal(431, b"431 Request Header Fields Too Large", b"text/plain; charset=utf-8"),
)
"""The camera's gateway (Go ``net/http``, ``DefaultMaxHeaderBytes``)."""
CONTROL = HttpLimits(max_head=64 * 1024, max_headers=100, max_target=16 * 1024)
"""The twin's own control plane: nothing it serves needs more."""


@dataclass
class Counters:
    """What a listener has refused or closed, for tests and benches."""

    too_large: int = 0
    too_long: int = 0
    slow: int = 0
    largest_refused: int = 0
    """The most bytes of a head read before it was refused."""


class _Refused(Exception):
    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal


class LimitedHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with :class:`HttpLimits` (set on the subclass :func:`protocol` makes)."""

    limits: HttpLimits = HYPER
    counters: Counters = Counters()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(Coalescing(transport, self.loop))  # type: ignore[arg-type]
        self._reading_head = True
        self._head_bytes = 0
        self._head_size = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_since: float | None = None
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_since = None
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().connection_lost(exc)

    # The slow-head timer: a head's start is noted (one clock read a request); the timer, armed
    # once and left running, checks at its deadline whether that head is still unfinished, and
    # re-arms itself for the rest of the time of a head begun since.
    def _arm_head_timer(self) -> None:
        if self._head_since is None:
            self._head_since = self.loop.time()
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.limits.header_timeout, self._slow_head)

    def _cancel_head_timer(self) -> None:
        self._head_since = None

    def _slow_head(self) -> None:
        self._head_timer = None
        since = self._head_since
        if since is None:
            return
        left = since + self.limits.header_timeout - self.loop.time()
        if left > 0:
            self._head_timer = self.loop.call_later(left, self._slow_head)
        elif self._reading_head and not self.transport.is_closing():
            self.counters.slow += 1
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        if self._reading_head:
            self._head_bytes += len(data)
            self._arm_head_timer()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError as err:
            if isinstance(err.__context__, _Refused):
                self._refuse(err.__context__.refusal)
                return
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)
            self.send_400_response(msg)
            return
        if self._reading_head and self._head_bytes > self.limits.max_head:
            self._refuse(self.limits.too_large)  # an unfinished head past the limit

    def _refuse(self, refusal: Refusal) -> None:
        self._cancel_head_timer()
        if refusal.status == 414:
            self.counters.too_long += 1
        else:
            self.counters.too_large += 1
        self.counters.largest_refused = max(self.counters.largest_refused, self._head_bytes)
        self._reading_head = False
        if not self.transport.is_closing():
            self.transport.write(refusal.response())
            self.transport.close()

    def handle_websocket_upgrade(self) -> None:
        self._cancel_head_timer()
        self._reading_head = False
        if isinstance(self.transport, Coalescing):  # a WebSocket's frames go straight out
            self.transport = self.transport.transport
        super().handle_websocket_upgrade()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_size = 0
        self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        limit = self.limits.max_target
        if limit is not None and len(self.url) > limit:
            raise _Refused(self.limits.too_long)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value) + 4
        limit = self.limits.max_headers
        if limit is not None and len(self.headers) >= limit:
            raise _Refused(self.limits.too_large)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        size = self._head_size + len(self.url) + 16  # the method, version and line ends
        if size > self.limits.max_head:
            self._head_bytes = max(self._head_bytes, size)
            raise _Refused(self.limits.too_large)
        self._cancel_head_timer()
        self._reading_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._reading_head = True
        self._head_bytes = 0

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._reading_head and self._head_bytes == 0:
            self._cancel_head_timer()  # waiting for the next request: the idle timeout applies


class Coalescing:
    """A connection's transport that sends a response's head together with what follows it: the
    head is held, and leaves with the next write (a plain response's body, in the same turn of the
    event loop) as one system call and one TCP segment instead of two; a head nothing follows in
    that turn (a stream's) leaves at the end of the turn. Every other write goes straight through,
    so nothing but a lone head waits. The bytes and their order are unchanged; a held head is
    written before the transport is closed or half-closed, and dropped by an abort."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    @property
    def transport(self) -> asyncio.Transport:
        """The transport under this one, its held head (if any) sent first."""
        self.flush()
        return self._transport

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.writelines((held, data))
        elif data.startswith(b"HTTP/"):
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def protocol(limits: HttpLimits) -> type[LimitedHttpTools]:
    """A protocol class for one listener, with its own :class:`Counters`."""
    name = f"LimitedHttpTools{limits.max_head}"
    attrs: dict[str, Any] = {"limits": limits, "counters": Counters()}
    return type(name, (LimitedHttpTools,), attrs)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return seconds


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``twin run``'s connection limits."""
    group = parser.add_argument_group("connection limits", "how long the servers wait for clients")
    group.add_argument(
        "--header-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="close a connection whose request head is not complete within this time "
        f"(default {HEADER_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--idle-timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"close a kept-alive connection idle this long (default {IDLE_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--ws-auth-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="close an automation event WebSocket that has not authenticated within this time "
        f"(default {WS_AUTH_TIMEOUT_S:g})",
    )
