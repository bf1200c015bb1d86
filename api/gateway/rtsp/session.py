"""One RTSP session: the stream viewer it plays from and the transport its RTP goes out on.

Over TCP the packets are interleaved on the RTSP connection, one write per access unit so that no
answer lands inside one; a client that reads slowly makes the viewer's bounded queue drop frames
(non-key first), never a packet from the middle of a frame. Over UDP a session has its own pair of
server ports, RTP to the client's first port; anything arriving on them (RTCP receiver reports,
NAT punches) keeps the session alive like a request does.

While the fault layer hangs the server, the session stalls: frames wait in the viewer (and drop
when it is full) until the hang lifts.

While the world clock stands still (step mode paused, or a paused realtime run), a playing session
that gets no frame for one frame interval of wall time (the stream's nominal rate) repeats the
picture with a skipped P frame (:mod:`api.gateway.rtsp.repeat`), as a real camera keeps sending at
its frame rate; a client probing the stream with FFmpeg's defaults then has its frames at once.
The world's frames take over as soon as its clock moves; a frame that is merely late (the clock
moving) is waited for, never repeated. This is transport timing only: the world and its trace
are untouched.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from api.faults import HANG_POLL_S, FaultSet
from api.gateway.rtsp import repeat
from api.gateway.rtsp.protocol import Transport
from api.gateway.rtsp.rtp import CLOCK_RATE, RtpStream, interleaved, nal_units
from hardware.ports.errors import DomainError
from hardware.ports.media import MediaViewer


class Sleep(Protocol):
    """Waiting on the world clock; a ``background`` wait does not make a step-mode runner move time."""

    def __call__(self, seconds: float, *, background: bool = False) -> Awaitable[None]: ...


SESSION_TIMEOUT_S = 60
"""What SETUP announces (``Session: <id>;timeout=60``). The daemon never enforces it over TCP (the
session lives as long as its connection); a UDP session with no request, RTCP or other packet for
that long of wall time ends."""


CATCH_UP_S = 1.0
"""Wall time without a frame after which a still world's stream is taken as caught up."""


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, seen: Callable[[], None]) -> None:
        self.seen = seen

    def datagram_received(self, data: bytes, addr: tuple) -> None:
        self.seen()


class Session:
    def __init__(
        self,
        stream_id: str,
        viewer: MediaViewer,
        transport: Transport,
        faults: FaultSet,
        sleep: Sleep,
        clock: Callable[[], float] = time.monotonic,
        *,
        fps: int = 30,
        sim_time: Callable[[], float] | None = None,
    ) -> None:
        self.id = secrets.token_hex(8).upper()
        self.stream_id = stream_id
        self.viewer = viewer
        self.transport = transport
        self.rtp = RtpStream(secrets.randbits(32), interval=CLOCK_RATE // max(1, fps))
        self.fps = max(1, fps)
        self.sim_time = sim_time
        """The world's sim time: a picture is repeated only while it stands still (None: whenever late)."""
        self.repeats = 0
        self._syntax: repeat.Syntax | None = None
        self._ref: tuple[int, int] | None = None
        self._skip: bytes | None = None
        self._world_at: float | None = None
        self._frame_at = clock()
        self.faults, self.sleep, self.clock = faults, sleep, clock
        self.playing = False
        self.last_seen = clock()
        self.server_ports = (0, 0)
        self._udp: list[asyncio.DatagramTransport] = []
        self._peer: tuple[str, int] | None = None

    async def open_udp(self, host: str, client_host: str) -> None:
        """Bind the session's RTP and RTCP ports on the server's address."""
        loop = asyncio.get_running_loop()
        for _ in range(2):
            transport, _ = await loop.create_datagram_endpoint(
                lambda: _Datagrams(self.touch), local_addr=(host, 0)
            )
            self._udp.append(transport)
        self.server_ports = tuple(t.get_extra_info("sockname")[1] for t in self._udp)
        self._peer = (client_host, self.transport.client_ports[0])

    def touch(self) -> None:
        self.last_seen = self.clock()

    def expired(self) -> bool:
        return not self.transport.tcp and self.clock() - self.last_seen > SESSION_TIMEOUT_S

    def transport_header(self) -> str:
        t, ssrc = self.transport, f"{self.rtp.ssrc:08X}"
        if t.tcp:
            return f"RTP/AVP/TCP;unicast;interleaved={t.channels[0]}-{t.channels[1]};ssrc={ssrc}"
        (a, b), (c, d) = t.client_ports, self.server_ports
        return f"RTP/AVP;unicast;client_port={a}-{b};server_port={c}-{d};ssrc={ssrc}"

    async def pump(self, writer: asyncio.StreamWriter) -> None:
        """Send frames until the viewer closes (the stream went away) or the connection does."""
        self._learn(self.viewer.config_frame().payload)
        with contextlib.suppress(DomainError, ConnectionError):
            while True:
                packets = await self._next()
                while self.faults.hang:
                    await self.sleep(HANG_POLL_S, background=True)
                if self.transport.tcp:
                    channel = self.transport.channels[0]
                    writer.write(b"".join(interleaved(channel, p) for p in packets))
                    await writer.drain()
                else:
                    for packet in packets:
                        self._udp[0].sendto(packet, self._peer)
                    await asyncio.sleep(0)  # let requests and RTCP in between frames

    async def _next(self) -> list[bytes]:
        """The next frame's packets: the world's, or the picture repeated while the world stands still."""
        while True:
            if self._skip is None or self.viewer.pending():
                frame = await self.viewer.next_frame()
            else:
                try:
                    frame = await asyncio.wait_for(self.viewer.next_frame(), 1 / self.fps)
                except TimeoutError:
                    if not self._still():
                        continue
                    self.repeats += 1
                    return self.rtp.repeat(len(self._skip).to_bytes(4, "big") + self._skip)
            self._world_at = self.sim_time() if self.sim_time is not None else None
            self._frame_at = self.clock()
            self._learn(frame.payload)
            return self.rtp.packets(frame)

    def _still(self) -> bool:
        """Whether the world stands still with no frame of it on the way: its clock has not moved
        since the last look, and the last frame is of its current instant (or none came for
        :data:`CATCH_UP_S`: the frames of a time step that the stream skipped never come)."""
        if self.sim_time is None:
            return True
        now = self.sim_time()
        if now != self._world_at:
            self._world_at = now  # the world moves: its frame is on the way
            return False
        device_pts = (round(now * 1e9) // 11111) & 0xFFFFFFFF  # the stream's PTS of that instant
        behind = (device_pts - (self.rtp.last or 0)) & 0xFFFFFFFF
        caught_up = behind < 2 * self.rtp.interval or behind >= 1 << 31
        return caught_up or self.clock() - self._frame_at >= CATCH_UP_S

    def _learn(self, payload: bytes) -> None:
        """Follow the stream's parameter sets and last reference picture, for :meth:`_next`'s repeats."""
        nals = nal_units(payload)
        sps = next((n for n in nals if n[0] & 0x1F == repeat.NAL_SPS), None)
        pps = next((n for n in nals if n[0] & 0x1F == repeat.NAL_PPS), None)
        if sps is not None and pps is not None:
            self._syntax = repeat.syntax(sps, pps)
        if self._syntax is None:
            self._skip = None
            return
        for nal in nals:
            if nal[0] & 0x1F in (repeat.NAL_SLICE, repeat.NAL_IDR):
                ref = repeat.reference(nal, self._syntax)
                if ref is not None:
                    self._ref = ref
                    self._skip = repeat.skip_frame(self._syntax, ref)
                elif nal[0] & 0x60 == 0:  # a non-reference picture: the last reference stands
                    pass
                else:
                    self._skip = None  # something the repeats cannot follow
                break

    def close(self) -> None:
        self.viewer.close()
        for transport in self._udp:
            transport.close()
        self._udp.clear()
