"""One camera's RTSP server, as its camera daemon serves it (``camera-daemon/src/rtsp_server.cpp``).

- **Where:** the port in the media configuration (``rtsp.port``, 8554 on the device) on the camera's
  address; while ``rtsp.enabled`` is off, or the camera is down, nothing listens (connection
  refused). :meth:`RtspServer.reconcile` brings the listener in line after a change.
- **Paths:** one per configured, enabled stream (``/main``, ``/sub``, ``/third``); any other path,
  or a disabled stream, answers 404 to DESCRIBE and SETUP. No authentication.
- **Methods:** OPTIONS, DESCRIBE (SDP with ``profile-level-id`` and ``sprop-parameter-sets``,
  ``Content-Base`` the request URI plus ``/``), SETUP, PLAY (455 before SETUP; a key frame is
  requested), TEARDOWN (then the connection closes), GET_PARAMETER (keep-alive); anything else 405.
- **Transport:** RTP interleaved on the RTSP connection. The daemon answers a UDP SETUP with 461
  Unsupported Transport (clients then retry over TCP); the twin can serve UDP too where it is
  switched on (``--rtsp-udp``). One session per connection, ``Session: <16 hex>;timeout=60``.
- **Frames:** the same encoded frames the WebSocket viewers get (a viewer of the stream's fan-out),
  packetised per RFC 6184 (:mod:`api.gateway.rtsp.rtp`). A viewer is opened at DESCRIBE, so the
  SDP carries the stream's SPS/PPS and PLAY starts on a key frame; in step mode with the clock
  paused the key frame is a picture of the current instant, at once; while the clock stands still
  the session repeats that picture at the stream's frame rate of wall time (skipped P frames, see
  :mod:`api.gateway.rtsp.session`), so a client probing with FFmpeg's defaults starts at once.
- **Faults** (the camera's fault set, as on its HTTP server): latency before each answer, a hang
  (no answer until it lifts, then the connection closes; playing sessions stall meanwhile),
  resets and loss (the connection drops), error bursts (the status as an RTSP answer), and
  ``drop_streams`` ends every playing session. Requests are journalled; a PLAY when its session ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from collections.abc import Callable

from api.faults import ENDED_KEY, FAULT_KEY, HANG_POLL_S, FaultSet
from api.gateway.rtsp import protocol
from api.gateway.rtsp.protocol import MAX_REQUEST, Request, path_of, response, stream_name
from api.gateway.rtsp.rtp import sdp
from api.gateway.rtsp.session import SESSION_TIMEOUT_S, Session, Sleep
from api.journal import Journal
from hardware.ports.errors import DomainError, Unavailable
from hardware.ports.gateway import GatewayBackend
from hardware.ports.media import MediaViewer

log = logging.getLogger(__name__)

PUBLIC = "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER"
PRIME_TIMEOUT_S = 5.0
"""How long DESCRIBE waits for a stream's first frame (its SPS/PPS) before describing it without."""
REAP_EVERY_S = 5.0


class RtspServer:
    def __init__(
        self,
        backend: GatewayBackend,
        faults: FaultSet,
        *,
        name: str,
        host: str,
        port: int,
        sleep: Sleep,
        udp: bool = False,
        journal: Journal | None = None,
        clock: Callable[[], float] = time.monotonic,
        sim_time: Callable[[], float] | None = None,
    ) -> None:
        self.backend, self.faults, self.name = backend, faults, name
        self.sim_time = sim_time
        """The world's sim time: sessions repeat the picture while it stands still (see the session)."""
        self.host, self.port, self.udp = host, port, udp
        self.sleep, self.journal, self.clock = sleep, journal, clock
        self.connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None
        self._reaper: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._started = False
        """Between :meth:`start` and :meth:`stop`: only then does :meth:`reconcile` listen."""

    @property
    def serving(self) -> bool:
        return self._server is not None

    def url(self, stream_id: str = "main") -> str:
        return f"rtsp://{self.host}:{self.port}/{stream_id}"

    async def start(self) -> int:
        """Listen on the configured port, or on a free one if it is taken; returns the port."""
        self._started = True
        try:
            await self._listen(self.port)
        except OSError as err:
            if not self.port or err.errno != errno.EADDRINUSE:
                raise
            log.warning(
                "%s: RTSP port %s:%d is taken, serving on a free port", self.name, self.host, self.port
            )
            await self._listen(0)
        return self.port

    async def reconcile(self) -> None:
        """Listen where the configuration says, or not at all when RTSP is off or the camera down."""
        async with self._lock:
            wanted = self._wanted() if self._started else None
            if self._server is not None and wanted != self.port:
                await self._close()
            if wanted is not None and self._server is None:
                try:
                    await self._listen(wanted)
                except OSError as err:  # like the daemon: RTSP stays down, the rest of the camera runs
                    log.warning("%s: RTSP server failed to start on port %d (%s)", self.name, wanted, err)

    async def stop(self) -> None:
        async with self._lock:
            self._started = False
            await self._close()

    def _wanted(self) -> int | None:
        if not self.backend.reachable():
            return None
        rtsp = self.backend.media_config.config().get("rtsp", {})
        return int(rtsp.get("port", self.port)) if rtsp.get("enabled", True) else None

    def stream_on(self, stream_id: str) -> bool:
        streams = self.backend.media_config.config().get("streams", [])
        return any(s.get("name") == stream_id and s.get("enabled", True) for s in streams)

    def reap(self) -> int:
        """End the UDP sessions silent for longer than their timeout; how many ended."""
        idle = [c for c in self.connections if c.session is not None and c.session.expired()]
        for connection in idle:
            connection.close()
        return len(idle)

    async def _listen(self, port: int) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.host, port, reuse_address=True, limit=MAX_REQUEST
        )
        self.port = self._server.sockets[0].getsockname()[1]
        if self.udp and self._reaper is None:
            self._reaper = asyncio.create_task(self._reap_forever(), name=f"{self.name}/rtsp-reaper")

    async def _close(self) -> None:
        server, self._server = self._server, None
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None
        if server is None:
            return
        server.close()
        tasks = []
        for connection in list(self.connections):
            connection.close(abort=True)
            if connection.task is not None and connection.task is not asyncio.current_task():
                connection.task.cancel()  # one waiting on the world clock (latency, a hang)
                tasks.append(connection.task)
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_S)  # transport time, like the WebSocket write timeouts
            self.reap()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(self, reader, writer)
        self.connections.add(connection)
        try:
            await connection.run()
        except asyncio.CancelledError:
            pass  # the server closed while it waited on the clock; asyncio logs a cancelled handler
        finally:
            connection.close()


class _Connection:
    def __init__(
        self, server: RtspServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server, self.reader, self.writer = server, reader, writer
        peer = writer.get_extra_info("peername")
        self.client: str = peer[0] if peer else "-"
        self.session: Session | None = None
        self.held: tuple[str, MediaViewer] | None = None
        """The viewer DESCRIBE opened, until SETUP takes it for the session."""
        self.scope: dict = {"type": "rtsp", "path": "/"}
        """What the fault layer marks (dropped, and when) and the journal reads, as on an ASGI scope."""
        self.closed = False
        self.task = asyncio.current_task()
        self._pump: asyncio.Task | None = None
        self._fault_key: int | None = None
        self._played: tuple[float, str, str] | None = None

    async def run(self) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            while not self.closed:
                request = await self._read()
                if request is not None and not await self._answer(request):
                    return

    async def _read(self) -> Request | None:
        """The next request; interleaved data from the client (RTCP) is skipped."""
        first = await self.reader.readexactly(1)
        if first == b"$":
            size = int.from_bytes((await self.reader.readexactly(3))[1:], "big")
            await self.reader.readexactly(size)
            if self.session is not None:
                self.session.touch()
            return None
        head = (first + await self.reader.readuntil(b"\r\n\r\n")).lstrip(b"\r\n")
        request = protocol.parse_request(head[:-4])
        length = request.header("content-length") if request else None
        if length and length.isdigit():
            if int(length) > MAX_REQUEST:
                raise ConnectionError("request body too large")
            await self.reader.readexactly(int(length))
        return request

    async def _answer(self, request: Request) -> bool:
        """Answer one request; False once the connection is to close."""
        server, faults = self.server, self.server.faults
        at = server.journal.now() if server.journal else 0.0
        path = path_of(request.uri)
        if faults.latency:
            delay = faults.delay_for(path)
            if delay > 0:
                await server.sleep(delay)
        if faults.active:
            if faults.hang:
                while faults.hang:
                    await server.sleep(HANG_POLL_S)
                self._journal(at, request, 0, "hang")
                return False
            if faults.should_reset():
                self._journal(at, request, 0, "reset")
                self.close(abort=True)
                return False
            status = faults.error_for(path)
            if status is not None:
                await self._send(response(status, request.cseq))
                self._journal(at, request, status, f"rtsp_{status}")
                return True
        if self.session is not None:
            self.session.touch()
        try:
            code, headers, body, keep = await self._handle(request)
        except Unavailable:  # the camera daemon is down: its RTSP server with it
            self._journal(at, request, 0, None)
            self.close(abort=True)
            return False
        except DomainError:  # the stream went away meanwhile
            code, headers, body, keep = 404, [], b"", True
        await self._send(response(code, request.cseq, headers, body))
        if request.method == "PLAY" and code == 200 and self._played is None:
            self._played = (at, self._route(request), path)
        else:
            self._journal(at, request, code, None)
        return keep

    async def _handle(self, request: Request) -> tuple[int, list[tuple[str, str]], bytes, bool]:
        method, name = request.method, stream_name(request.uri)
        session_id = self.session.id if self.session else ""
        if method == "OPTIONS":
            return 200, [("Public", PUBLIC)], b"", True
        if method == "DESCRIBE":
            if not self.server.stream_on(name):
                return 404, [], b"", True
            viewer = await self._hold(name)
            headers = [("Content-Type", "application/sdp"), ("Content-Base", request.uri + "/")]
            return 200, headers, sdp(viewer.config_frame().payload).encode(), True
        if method == "SETUP":
            return await self._setup(request, name)
        if method == "PLAY":
            if self.session is None:
                return 455, [], b"", True
            self._play()
            base = request.uri.split("/trackID")[0].split("?")[0]
            rtp_info = f"url={base}/trackID=0;seq={self.session.rtp.seq}"
            return 200, [("Session", session_id), ("RTP-Info", rtp_info), ("Range", "npt=0.000-")], b"", True
        if method == "TEARDOWN":
            return 200, [("Session", session_id)], b"", False
        if method == "GET_PARAMETER":
            return 200, [("Session", session_id)], b"", True
        return 405, [], b"", True

    async def _setup(self, request: Request, name: str) -> tuple[int, list[tuple[str, str]], bytes, bool]:
        if not self.server.stream_on(name):
            return 404, [], b"", True
        spec = request.header("transport")
        transport = protocol.parse_transport(spec, self.server.udp) if spec else None
        if transport is None:
            return 461, [], b"", True
        viewer = await self._hold(name)
        self.held = None
        old = self.session
        if old is not None:
            self._stop_playing()
            if old.viewer is not viewer:
                old.close()
        server = self.server
        fps = next((c.fps for c in server.backend.media.streams() if c.stream_id == name), 30)
        session = Session(
            name, viewer, transport, server.faults, server.sleep, server.clock, fps=fps,
            sim_time=server.sim_time,
        )  # fmt: skip
        if old is not None:
            session.id = old.id  # one session per connection, as on the device
        if not transport.tcp:
            await session.open_udp(server.host, self.client)
        self.session = session
        headers = [
            ("Transport", session.transport_header()),
            ("Session", f"{session.id};timeout={SESSION_TIMEOUT_S}"),
        ]
        return 200, headers, b"", True

    async def _hold(self, name: str) -> MediaViewer:
        """A viewer of ``name`` for this connection, its parameter sets ready (or given up on)."""
        if self.held is not None and self.held[0] == name:
            return self.held[1]
        if self.session is not None and self.session.stream_id == name:
            return self.session.viewer
        if self.held is not None:
            self.held[1].close()
            self.held = None
        viewer = self.server.backend.media.open_viewer(name)
        self.held = (name, viewer)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(viewer.stream.primed(), PRIME_TIMEOUT_S)
        return viewer

    def _play(self) -> None:
        session = self.session
        assert session is not None
        session.viewer.stream.request_keyframe()
        if session.playing:
            return
        session.playing = True
        self._pump = asyncio.create_task(session.pump(self.writer), name=f"{self.server.name}/rtsp-pump")
        self._pump.add_done_callback(self._pump_ended)
        self._fault_key = self.server.faults.open_stream(self.scope, self._drop)

    def _pump_ended(self, task: asyncio.Task[None]) -> None:
        if task is self._pump:
            self.close()

    def _stop_playing(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        if self._fault_key is not None:
            self.server.faults.close_stream(self._fault_key)
            self._fault_key = None

    async def _drop(self, _code: int) -> None:
        self.close(abort=True)

    async def _send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    def _route(self, request: Request) -> str:
        name = stream_name(request.uri)
        if self.session is not None and request.method not in ("DESCRIBE", "SETUP"):
            name = self.session.stream_id
        elif not any(c.stream_id == name for c in self.server.backend.media.streams()):
            return "rtsp:*" if request.method == "OPTIONS" else "unmatched"
        return f"rtsp:/{name}"

    def _journal(self, at: float, request: Request, status: int, fault: str | None) -> None:
        if self.server.journal is not None:
            self.server.journal.record(
                at, self.server.name, request.method, self._route(request), path_of(request.uri), "",
                status, self.client, fault=fault,
            )  # fmt: skip

    def close(self, abort: bool = False) -> None:
        """End the connection and its session; idempotent. ``abort`` resets it (no FIN)."""
        if self.closed:
            return
        self.closed = True
        self.server.connections.discard(self)
        self._stop_playing()
        if self.session is not None:
            self.session.close()
        if self.held is not None:
            self.held[1].close()
        journal = self.server.journal
        if self._played is not None and journal is not None:
            at, route, path = self._played
            journal.record(
                at, self.server.name, "PLAY", route, path, "", 200, self.client,
                fault=self.scope.get(FAULT_KEY), stream=True, end=self.scope.get(ENDED_KEY),
            )  # fmt: skip
        if abort:
            self.writer.transport.abort()
        else:
            self.writer.close()
