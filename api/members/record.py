"""``twin record``: a recording passthrough in front of a real camera's gateway or a real automation
server. The user's client talks to the recorder's address as it would to the device; every
exchange is forwarded (:class:`~api.members.passthrough.Passthrough`) and written, with its
offset from the start, to a fixture (:mod:`hardware.ports.fixture`) that a scenario replays on
the world clock. With ``poll_s`` the recorder also reads a fixed set of routes itself every so
many seconds (through the same passthrough, so they are recorded alike), so status and telemetry
are captured even while no client asks:

- gateway: system info and stats, health, media configuration, the monitor's summary;
- automation server: health, system stats, the device list and each device's current values.

Its own reads carry the credential named by ``api_key`` as ``X-API-Key`` (the automation server's
API key; the gateway reads a session token there too). Secrets never reach the fixture or the logs
(see the fixture's docstring): every credential a client presents, and every token a login
answers with, is learnt and masked in whatever is recorded after it.

The recorder is a real-device tool, outside the world: its offsets are wall seconds.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.journal import query_of
from api.members.gates import AutomationGate, GatewayGate
from api.members.passthrough import Passthrough
from api.members.polls import poll
from api.members.redact import KEPT_HEADERS, credentials_in, is_own, mask, mask_bytes, secrets_in
from api.members.upstream import Upstream
from hardware.ports.fixture import FORMAT, OPENING_S, VERSION

log = logging.getLogger("twin.record")

MAX_BODY = 16 * 1024 * 1024
"""An answer larger than this is forwarded but not recorded (a firmware download, a log export)."""
MAX_FRAMES = 256 * 1024 * 1024
"""Bytes of stream frames a fixture holds at most (an open H.264 stream fills it in minutes); later
frames are relayed but not recorded."""
SHUTDOWN_GRACE_S = 1


@dataclass(frozen=True)
class RecordOptions:
    vendor: str
    """``gateway`` (a camera) or ``automation``."""
    url: str
    out: Path
    duration: float
    host: str = "127.0.0.1"
    port: int = 0
    insecure: bool = False
    api_key: str | None = field(default=None, repr=False)
    """The credential of the recorder's own reads (never written)."""
    poll_s: float = 0.0
    """Read the vendor's status routes every this many seconds; 0: only what clients ask."""


@dataclass
class Summary:
    exchanges: int = 0
    streams: int = 0
    frames: int = 0
    skipped: int = 0
    """Answers and frames forwarded but not recorded (logins, past :data:`MAX_BODY` or :data:`MAX_FRAMES`)."""
    frame_bytes: int = 0


class FixtureWriter:
    """Writes records as they complete, one line each, masking every secret learnt so far."""

    def __init__(self, out: IO[str], vendor: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        self.vendor = vendor
        self.clock = clock
        self.secrets: set[str] = set()
        self.summary = Summary()
        self._start = clock()
        self._streams = 0
        self.closed = False
        self.in_flight: set[asyncio.Task] = set()
        """The exchanges and streams being recorded (ended with the recording)."""
        self._line({"format": FORMAT, "version": VERSION, "vendor": vendor, "started": round(time.time(), 3)})

    def offset(self) -> float:
        return round(self.clock() - self._start, 6)

    def learn(self, *values: str | None) -> None:
        for value in values:
            if value:
                self.secrets.add(value.removeprefix("Bearer ").strip())

    def stream_id(self) -> int:
        self._streams += 1
        return self._streams

    def write(self, record: dict[str, Any]) -> None:
        if self.closed:
            return
        kind = record["kind"]
        if kind == "http":
            self.summary.exchanges += 1
        elif kind == "stream":
            self.summary.streams += 1
        elif kind == "frame":
            size = len(record.get("text") or record.get("b64") or "")
            if self.summary.frame_bytes + size > MAX_FRAMES:  # a video stream left open: keep the file sane
                self.summary.skipped += 1
                return
            self.summary.frames += 1
            self.summary.frame_bytes += size
        self._line(record)

    def body(self, data: bytes, encoded: bool) -> dict[str, str]:
        """``body`` (masked text) when ``data`` is uncompressed UTF-8, else ``body_b64``."""
        if not encoded:
            try:
                return {"body": mask(data.decode("utf-8"), self.secrets)}
            except UnicodeDecodeError:
                pass
        return {"body_b64": base64.b64encode(mask_bytes(data, self.secrets)).decode()}

    def frame(self, payload: str | bytes, anchor: float) -> dict[str, Any]:
        """A frame's payload, masked, marked ``opening`` within :data:`OPENING_S` of ``anchor`` (the
        stream's opening, or the client's first message: what answers it)."""
        opening = {"opening": True} if self.offset() - anchor <= OPENING_S else {}
        if isinstance(payload, str):
            return {"text": mask(payload, self.secrets), **opening}
        return {"b64": base64.b64encode(mask_bytes(payload, self.secrets)).decode(), **opening}

    def end(self) -> set[asyncio.Task]:
        """Write the end and end every exchange still open: an event stream ends for its client too
        (a WebSocket with 1001). Returns the exchanges told to end."""
        if not self.closed:
            self._line({"t": self.offset(), "kind": "end"})
            self.closed = True
        ending = set(self.in_flight)
        for task in ending:
            task.cancel()
        return ending

    def _line(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()


def _kept(headers: list[tuple[bytes, bytes]]) -> list[list[str]]:
    return [
        [n.decode("latin-1").lower(), v.decode("latin-1")]
        for n, v in headers
        if n.lower().decode() in KEPT_HEADERS
    ]


def _text_or_bytes(chunk: bytes) -> str | bytes:
    try:
        return chunk.decode("utf-8")
    except UnicodeDecodeError:
        return chunk


class RecordMiddleware:
    """Around the passthrough: writes each exchange, stream opening, frame and close it forwards."""

    def __init__(self, app: ASGIApp, writer: FixtureWriter) -> None:
        self.app = app
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.writer.closed:
            await self.app(scope, receive, send)
            return
        task = asyncio.current_task()
        assert task is not None
        self.writer.in_flight.add(task)
        try:
            if scope["type"] == "http":
                await self._http(scope, receive, send)
            else:
                await self._websocket(scope, receive, send)
        finally:
            self.writer.in_flight.discard(task)

    def _head(self, scope: Scope) -> dict[str, Any]:
        credentials = credentials_in(scope)
        self.writer.learn(*credentials)
        return {
            "t": self.writer.offset(),
            "path": scope["path"],
            "query": query_of(scope.get("query_string", b"")),
            "auth": bool(credentials),
        }

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        writer, head = self.writer, self._head(scope)
        own = is_own(writer.vendor, scope["path"])
        digest = hashlib.sha256()
        sized, size, ended = [0], [0], [False]  # the request's and the answer's bytes; answered
        answer: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def listen() -> Message:
            message = await receive()
            if message["type"] == "http.request" and message.get("body"):
                digest.update(message["body"])
                sized[0] += len(message["body"])
            return message

        async def watch(message: Message) -> None:
            await send(message)
            ended[0] = message["type"] == "http.response.body" and not message.get("more_body", False)
            if message["type"] == "http.response.start":
                answer.update(status=message["status"], headers=_kept(message.get("headers", [])))
                kind = dict(answer["headers"]).get("content-type", "")
                if kind.startswith("text/event-stream") and not own:
                    answer["stream"], answer["anchor"] = writer.stream_id(), writer.offset()
                    writer.write({**head, "kind": "stream", "id": answer["stream"], "transport": "sse",
                                  "status": answer["status"], "headers": answer["headers"]})  # fmt: skip
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                if "stream" in answer:
                    if body:
                        frame = writer.frame(_text_or_bytes(body), answer["anchor"])
                        writer.write(
                            {"t": writer.offset(), "kind": "frame", "stream": answer["stream"], **frame}
                        )
                    if not message.get("more_body", False):
                        writer.write({"t": writer.offset(), "kind": "close", "stream": answer["stream"]})
                    return
                size[0] += len(body)
                if size[0] <= MAX_BODY:  # past it the answer is forwarded, not kept
                    chunks.append(body)
                if not message.get("more_body", False):
                    if size[0] > MAX_BODY:
                        writer.summary.skipped += 1
                        return
                    self._answered(scope, head, own, digest.hexdigest() if sized[0] else None, answer, chunks)

        try:
            await self.app(scope, listen, watch)
        except asyncio.CancelledError:
            if not (writer.closed and "status" in answer) or ended[0]:
                raise
            await send({"type": "http.response.body", "body": b"", "more_body": False})  # the recording ended

    def _answered(
        self, scope: Scope, head: dict, own: bool, digest: str | None, answer: dict, chunks: list
    ) -> None:
        writer = self.writer
        data = b"".join(chunks)
        if own:  # a login or a key: learn what it hands out, record nothing
            writer.learn(*secrets_in(data.decode("utf-8", "replace")))
            writer.summary.skipped += 1
            return
        encoded = any(name == "content-encoding" for name, _ in answer.get("headers", []))
        exchange = {"kind": "http", "method": scope["method"], "body_sha256": digest, **answer}
        writer.write({**head, **exchange, **writer.body(data, encoded)})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        writer, head = self.writer, self._head(scope)
        state: dict[str, Any] = {"client_left": False}

        async def listen() -> Message:
            message = await receive()
            if message["type"] == "websocket.receive" and not state.get("spoke"):
                state["spoke"], state["anchor"] = True, writer.offset()  # its answer is an opening frame too
            if message["type"] == "websocket.receive" and message.get("text"):
                writer.learn(*secrets_in(message["text"]))  # an Auth message's token: masked from now on
            elif message["type"] == "websocket.disconnect":
                state["client_left"] = True
            return message

        async def watch(message: Message) -> None:
            kind = message["type"]
            state["closed"] = kind == "websocket.close"
            if kind == "websocket.accept":
                state["id"], state["anchor"] = writer.stream_id(), writer.offset()
                writer.write({**head, "kind": "stream", "id": state["id"], "transport": "ws", "status": 101,
                              "subprotocol": message.get("subprotocol")})  # fmt: skip
            elif kind == "websocket.send" and "id" in state:
                payload = message["bytes"] if message.get("bytes") is not None else message.get("text", "")
                frame = writer.frame(payload, state["anchor"])
                writer.write({"t": writer.offset(), "kind": "frame", "stream": state["id"], **frame})
            elif kind == "websocket.close" and "id" in state and not state["client_left"]:
                writer.write({"t": writer.offset(), "kind": "close", "stream": state["id"],
                              "code": message.get("code", 1000)})  # fmt: skip
            elif kind == "websocket.close" and "id" not in state:  # refused without an HTTP answer
                writer.write(
                    {**head, "kind": "stream", "id": writer.stream_id(), "transport": "ws", "status": 403}
                )
            elif kind == "websocket.http.response.start":
                state["refused"] = {"status": message["status"], "headers": _kept(message.get("headers", []))}
            elif kind == "websocket.http.response.body" and "refused" in state:
                state.setdefault("body", []).append(message.get("body", b""))
                if not message.get("more_body", False):
                    body = writer.body(b"".join(state["body"]), False)
                    writer.write({**head, "kind": "stream", "id": writer.stream_id(), "transport": "ws",
                                  **state["refused"], **body})  # fmt: skip
            await send(message)

        try:
            await self.app(scope, listen, watch)
        except asyncio.CancelledError:
            if not (writer.closed and "id" in state) or state.get("closed"):
                raise
            await send({"type": "websocket.close", "code": 1001})  # going away: the recording ended


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self):  # the command line handles its own signals
        yield


async def record(
    options: RecordOptions,
    on_start: Callable[[str], object] | None = None,
    stop: asyncio.Event | None = None,
    http: Any = "auto",
) -> Summary:
    """Serve the recording passthrough on ``options.host:port`` for ``options.duration`` seconds (or
    until ``stop`` is set), writing ``options.out``. ``on_start`` gets the address clients use;
    ``http`` is uvicorn's HTTP protocol (the command line gives one with the vendor's limits).
    Raises ``OSError`` if the address cannot be bound or the fixture cannot be written."""
    # no storms at the recorder: the real server applies its own limit
    gate = GatewayGate() if options.vendor == "gateway" else AutomationGate(None, "0.9.24")
    app = Passthrough(Upstream(options.vendor, options.url, options.insecure), gate)
    sock = socket.socket(socket.AF_INET6 if ":" in options.host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
        sock.bind((options.host, options.port))
    except OSError as err:
        sock.close()
        raise OSError(err.errno, f"cannot listen on {options.host}:{options.port} ({err.strerror})") from err
    with sock, open(options.out, "w", encoding="utf-8") as out:
        writer = FixtureWriter(out, options.vendor)
        writer.learn(options.api_key)
        app.add_middleware(RecordMiddleware, writer=writer)
        config = uvicorn.Config(
            app, http=http, log_level="warning", access_log=False, lifespan="off", ws="websockets-sansio",
            ws_per_message_deflate=False, server_header=False, date_header=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )  # fmt: skip
        server = _Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        poller = None
        try:
            while not server.started:
                if task.done():
                    raise OSError("the recorder's server failed to start")
                await asyncio.sleep(0.005)
            host, port = sock.getsockname()[:2]
            url = f"http://{host}:{port}"
            log.info("twin: recording the %s for %g s; clients use %s", options.vendor, options.duration, url)
            if on_start is not None:
                on_start(url)
            if options.poll_s > 0:
                poller = asyncio.create_task(poll(url, options.vendor, options.poll_s, options.api_key))
            stopped = asyncio.ensure_future((stop or asyncio.Event()).wait())
            await asyncio.wait({stopped}, timeout=options.duration)
            stopped.cancel()
        finally:
            if poller is not None:
                poller.cancel()
                with contextlib.suppress(BaseException):
                    await poller
            ending = writer.end()
            if ending:  # they end as the recording does (1001), not as the server shuts down (1012)
                await asyncio.wait(ending, timeout=SHUTDOWN_GRACE_S + 5)
            server.should_exit = True
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, SHUTDOWN_GRACE_S + 5)
            await app.upstream.aclose()
    s = writer.summary
    log.info(
        "twin: recorded %d answers, %d streams, %d frames (%d not recorded)",
        s.exchanges,
        s.streams,
        s.frames,
        s.skipped,
    )
    return s
