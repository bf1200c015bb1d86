"""One RTSP session: the stream viewer it plays from and the transport its RTP goes out on.

Over TCP the packets are interleaved on the RTSP connection, one write per access unit so that no
answer lands inside one; a client that reads slowly makes the viewer's bounded queue drop frames
(non-key first), never a packet from the middle of a frame. Over UDP a session has its own pair of
server ports, RTP to the client's first port; anything arriving on them (RTCP receiver reports,
NAT punches) keeps the session alive like a request does.

While the fault layer hangs the server, the session stalls: frames wait in the viewer (and drop
when it is full) until the hang lifts.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from api.faults import HANG_POLL_S, FaultSet
from api.gateway.rtsp.protocol import Transport
from api.gateway.rtsp.rtp import RtpStream, interleaved
from hardware.ports.errors import DomainError
from hardware.ports.media import MediaViewer


class Sleep(Protocol):
    """Waiting on the world clock; a ``background`` wait does not make a step-mode runner move time."""

    def __call__(self, seconds: float, *, background: bool = False) -> Awaitable[None]: ...


SESSION_TIMEOUT_S = 60
"""What SETUP announces (``Session: <id>;timeout=60``). The daemon never enforces it over TCP (the
session lives as long as its connection); a UDP session with no request, RTCP or other packet for
that long of wall time ends."""


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
    ) -> None:
        self.id = secrets.token_hex(8).upper()
        self.stream_id = stream_id
        self.viewer = viewer
        self.transport = transport
        self.rtp = RtpStream(secrets.randbits(32))
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
        with contextlib.suppress(DomainError, ConnectionError):
            while True:
                frame = await self.viewer.next_frame()
                while self.faults.hang:
                    await self.sleep(HANG_POLL_S, background=True)
                packets = self.rtp.packets(frame)
                if self.transport.tcp:
                    channel = self.transport.channels[0]
                    writer.write(b"".join(interleaved(channel, p) for p in packets))
                    await writer.drain()
                else:
                    for packet in packets:
                        self._udp[0].sendto(packet, self._peer)
                    await asyncio.sleep(0)  # let requests and RTCP in between frames

    def close(self) -> None:
        self.viewer.close()
        for transport in self._udp:
            transport.close()
        self._udp.clear()
