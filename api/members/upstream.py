"""A real endpoint behind the twin: its base URL, a pool of keep-alive HTTP/1.1 connections to it, and
how to reach its WebSockets. Certificates are verified unless this member was configured as insecure
(a device's self-signed certificate); the choice never spreads to any other connection.

The pool is small on purpose: one request at a time per connection, the response parsed with
``httptools`` as it arrives and handed on chunk by chunk (an event stream flows as it is written;
reading from the real side pauses while the client is slower). It adds nothing to a request but its
``Host`` (no default ``Accept-Encoding``, ``User-Agent`` or cookies), so the real member sees what the
client sent. A kept connection that the real side closed meanwhile is noticed when it closes; a
request without a body that meets one anyway is sent again once on a new connection.

Nothing here logs the endpoint's address: logs name the member, never where it lives.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any
from urllib.parse import urlsplit

import httptools
import httpx

log = logging.getLogger("twin.passthrough")

CONNECT_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 256
"""Connections to one real endpoint at once (open event streams each hold one)."""
IDLE_S = 4.0
"""A kept connection unused this long is closed rather than reused: servers close idle ones (uvicorn
after 5 s), and one closing just as a request is written would lose it."""
READ_HIGH = 1 << 20
"""Response bytes read ahead of the client before reading from the real side pauses."""

Headers = Sequence[tuple[bytes, bytes]]


class UpstreamError(Exception):
    """The real endpoint could not be reached, or broke off or garbled its answer."""


def _no_cookies() -> CookieJar:
    """A jar that keeps nothing: the client is shared by every caller, so a cookie one caller's
    response set must never ride along on another's request."""
    return CookieJar(DefaultCookiePolicy(allowed_domains=[]))


class _Connection(asyncio.Protocol):
    """One keep-alive connection; ``httptools`` parses the answers as they arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.closed = False
        self.idle_since = 0.0
        self._writable: asyncio.Future[None] | None = None
        self.begin(head=False)

    # The request side ----------------------------------------------------------------------------
    def begin(self, head: bool) -> None:
        """Ready for the answer to a new request (``head``: to a ``HEAD``, which has no body)."""
        self.head_only = head
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.received = False  # any byte of this answer
        self.header_done = False
        self.complete = False
        self.keep_alive = False
        self.until_close = False  # a body that ends with the connection
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    async def drain(self) -> None:
        if self._writable is not None:
            await self._writable
        if self.closed:
            raise UpstreamError(f"connection lost while sending ({type(self.error).__name__})")

    async def wait(self) -> None:
        """Until something new arrived: header, body bytes, the end, or an error."""
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self) -> bytes:
        chunk = self.chunks.popleft()
        self.buffered -= len(chunk)
        if self._paused and self.buffered < READ_HIGH // 4 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return chunk

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # asyncio ---------------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.received = True
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as err:  # no upgrade is asked for
            self._fail(UpstreamError(f"unreadable answer ({type(err).__name__})"))
            if self.transport is not None:
                self.transport.close()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.header_done and self.until_close and not self.complete and exc is None:
            self.complete = True  # the end of a body that runs to the connection's end
        elif not self.complete:
            self._fail(exc or ConnectionResetError("closed by the real endpoint"))
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._wake()

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    def _fail(self, err: BaseException) -> None:
        if self.error is None:
            self.error = err
        self._wake()

    # httptools -------------------------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the real one follows
            self.headers = []
            return
        self.status, self.header_done = status, True
        names = {name.lower() for name, _ in self.headers}
        self.until_close = (
            b"content-length" not in names
            and b"transfer-encoding" not in names
            and status not in (204, 304)
            and not self.head_only
        )
        if self.head_only:  # no body follows, whatever the headers say: the parser cannot know
            self.complete, self.keep_alive = True, False
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self.complete:
            return
        self.chunks.append(body)
        self.buffered += len(body)
        if self.buffered > READ_HIGH and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if self.complete:  # a HEAD's answer, already complete
            return
        if 100 <= self.parser.get_status_code() < 200:
            return
        self.complete = True
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()


class Response:
    """The real endpoint's answer: status and headers as it sent them, then its body chunk by chunk
    (de-chunked, otherwise as sent). :meth:`close` gives the connection back or ends it."""

    def __init__(self, pool: _Pool, conn: _Connection) -> None:
        self._pool, self._conn = pool, conn
        self.status: int = conn.status
        self.headers: list[tuple[bytes, bytes]] = conn.headers
        self._closed = False

    async def body(self) -> AsyncIterator[tuple[bytes, bool]]:
        """Each chunk and whether more follow; the last says none do (an empty one if the body
        ended after its last chunk was handed on). Raises :class:`UpstreamError` if the real side
        breaks off before the end."""
        conn = self._conn
        while True:
            if conn.chunks:
                chunk = conn.take()
                more = not conn.complete or bool(conn.chunks)
                yield chunk, more
                if not more:
                    return
            elif conn.complete:
                yield b"", False
                return
            elif conn.error is not None or conn.closed:
                raise UpstreamError(f"closed mid-answer ({type(conn.error).__name__})")
            else:
                await conn.wait()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._pool.release(self._conn)


@dataclass
class _Pool:
    host: str
    port: int
    tls: ssl.SSLContext | None
    idle: list[_Connection] = field(default_factory=list)
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(MAX_CONNECTIONS))

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        tls: dict[str, Any] = {}
        if self.tls is not None:
            tls = {"ssl": self.tls, "server_hostname": self.host}
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Connection, self.host, self.port, **tls), CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError, ssl.SSLError) as err:
            raise UpstreamError(f"cannot connect ({type(err).__name__})") from err
        return conn

    def _kept(self) -> _Connection | None:
        """The most recently used kept connection still fit for a request; stale ones are closed."""
        now = asyncio.get_running_loop().time()
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed and now - conn.idle_since < IDLE_S:
                return conn
            if conn.transport is not None:
                conn.transport.close()
        return None

    async def request(
        self, method: str, head: bytes, body: AsyncIterator[bytes] | None, chunked: bool
    ) -> Response:
        """Send ``head`` (request line and headers) and ``body``; returns once the answer's headers
        are in. ``chunked``: the body is sent in chunked transfer coding."""
        await self.slots.acquire()
        try:
            while True:
                conn = self._kept()
                reused = conn is not None
                if conn is None:
                    conn = await self._open()
                try:
                    await self._send(conn, method, head, body, chunked)
                    while not conn.header_done:
                        if isinstance(conn.error, UpstreamError):
                            raise conn.error
                        if conn.error is not None or conn.closed:
                            raise UpstreamError(f"no answer ({type(conn.error).__name__})")
                        await conn.wait()
                except BaseException as err:
                    if conn.transport is not None:
                        conn.transport.close()
                    if isinstance(err, UpstreamError) and reused and body is None and not conn.received:
                        continue  # a kept connection the real side had just closed: once more, anew
                    raise
                return Response(self, conn)
        except BaseException:
            self.slots.release()
            raise

    async def _send(
        self, conn: _Connection, method: str, head: bytes, body: AsyncIterator[bytes] | None, chunked: bool
    ) -> None:
        conn.begin(method == "HEAD")
        transport = conn.transport
        assert transport is not None
        transport.write(head)
        if body is None:
            return
        async for chunk in body:
            if conn.closed:
                break
            transport.write(b"%x\r\n%b\r\n" % (len(chunk), chunk) if chunked else chunk)
            await conn.drain()
        if chunked and not conn.closed:
            transport.write(b"0\r\n\r\n")

    def release(self, conn: _Connection) -> None:
        """Back to the pool if the answer was read to its end on a connection that stays open."""
        self.slots.release()
        if conn.complete and conn.keep_alive and not conn.closed and not conn.chunks:
            conn.idle_since = asyncio.get_running_loop().time()
            self.idle.append(conn)
        elif conn.transport is not None:
            conn.transport.close()

    def close(self) -> None:
        for conn in self.idle:
            if conn.transport is not None:
                conn.transport.close()
        self.idle.clear()


@dataclass
class Upstream:
    name: str
    """The member's name in the twin (``automation``, a camera id): what logs show."""
    url: str
    """Base URL, ``http://host:port`` or ``https://host:port``, no path."""
    insecure: bool = False
    """Accept any certificate from this endpoint (self-signed on the device)."""
    _client: httpx.AsyncClient | None = field(default=None, repr=False)
    _pool: _Pool | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{self.name}: a real endpoint is an http:// or https:// URL")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"{self.name}: a real endpoint's URL has no path, query or fragment")
        self.url = f"{parts.scheme}://{parts.netloc}"
        self._host_header = b"host: " + parts.netloc.encode("idna" if not parts.netloc.isascii() else "ascii")
        self._address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))

    @property
    def client(self) -> httpx.AsyncClient:
        """An HTTP client for the twin's own requests to the endpoint (its startup probe)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.url,
                verify=self._tls() if self.url.startswith("https:") else True,
                timeout=httpx.Timeout(CONNECT_TIMEOUT_S, read=None, pool=None),
                follow_redirects=False,
                trust_env=False,  # an environment proxy must not sit between the twin and a device
                cookies=_no_cookies(),
            )
        return self._client

    async def request(
        self, method: str, target: str, headers: Headers, body: AsyncIterator[bytes] | None = None
    ) -> Response:
        """Forward one request: ``target`` (path and query as the client sent them) with exactly
        ``headers`` and ``Host``; ``body`` streamed as it comes (with its ``Content-Length`` among
        ``headers``, else chunked). Raises :class:`UpstreamError` if no answer came."""
        if self._pool is None:
            self._pool = _Pool(*self._address, self.ws_tls())
        lines = [f"{method} {target} HTTP/1.1".encode("latin-1"), self._host_header]
        lines += [name + b": " + value for name, value in headers]
        chunked = body is not None and not any(name.lower() == b"content-length" for name, _ in headers)
        if chunked:
            lines.append(b"transfer-encoding: chunked")
        return await self._pool.request(method, b"\r\n".join(lines) + b"\r\n\r\n", body, chunked)

    def _tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def ws_url(self, target: str) -> str:
        """``target``: the path and query as the client sent them."""
        return ("wss" + self.url[5:] if self.url.startswith("https:") else "ws" + self.url[4:]) + target

    def ws_tls(self) -> ssl.SSLContext | None:
        return self._tls() if self.url.startswith("https:") else None

    async def probe(self, path: str, headers: dict[str, str] | None = None) -> int | None:
        """The status of one GET of the twin's own (startup check); ``None`` if unreachable."""
        try:
            response = await self.client.get(path, headers=headers, timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as err:
            log.warning("twin: real %s is unreachable (%s)", self.name, type(err).__name__)
            return None
        return response.status_code

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None
