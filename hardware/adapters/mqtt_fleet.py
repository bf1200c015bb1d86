"""The simulated sensor fleet published to an outside MQTT broker, as the real devices would publish:
each device's tick is one JSON message on ``device/{type}/{id}/uplink`` (the automation server's own
topic and payload, :mod:`hardware.ports.device_topics`, which the twin's MQTT bridge speaks too), QoS 1,
not retained. A real automation server on that broker sees the devices appear as drafts, and stores
their telemetry once approved.

Delivery is counted, never assumed. A message counts as *acknowledged* only when its ``PUBACK``
arrives; one published on a connection that ends before its ``PUBACK`` counts as *undelivered* (the
broker may or may not have it; it is not sent again). While the broker is away, messages wait in a
bounded buffer; when it is full the oldest are *dropped* and counted (a burst bigger than the buffer,
one tick of a larger fleet or a long step of the clock, loses its oldest messages even while
connected: size it to at least one tick of the fleet). At every moment::

    produced == acknowledged + in_flight + undelivered + buffered + dropped

The connection comes back by itself with exponential backoff and jitter from a seeded stream (wall
time: this talks to the outside world; the world's own clock is not involved). The client is a small
MQTT 3.1.1 one of its own on the event loop (``CONNECT``, QoS 1 ``PUBLISH`` and ``PUBACK``, keepalive
pings, ``DISCONNECT``): the messages a turn of the loop can send go out in one write, and one read
takes every ``PUBACK`` that has arrived (paho read a packet a byte at a time, three reads for each
``PUBACK``, and built a message object with its own lock for each ``PUBLISH``: at 2 000 messages a
second that was most of the publisher's time). Credentials come from the caller (the environment)
and are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from hardware.ports.automation import EventSource
from hardware.ports.device_topics import uplink_payload, uplink_topic
from hardware.ports.events import Event, EventKind, Subscription

log = logging.getLogger(__name__)

KEEPALIVE_S = 30
CONNACK_TIMEOUT_S = 10.0
SCHEMES = {"mqtt": 1883, "mqtts": 8883}
MAX_WINDOW = 65_535
"""Packet identifiers are 16 bits, 0 excluded."""
CONNACK, PUBACK, PINGRESP = 2, 4, 13
PINGREQ_PACKET = b"\xc0\x00"
DISCONNECT_PACKET = b"\xe0\x00"
REFUSALS = {
    1: "Unsupported protocol version",
    2: "Client identifier not valid",
    3: "Server unavailable",
    4: "Bad user name or password",
    5: "Not authorized",
}
"""``CONNACK`` return codes of MQTT 3.1.1."""


def broker_address(url: str) -> tuple[str, int, bool]:
    """``mqtt://host[:port]`` or ``mqtts://host[:port]`` → (host, port, tls); ``ValueError`` else
    (credentials in the URL are refused: they come from the environment)."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError("expected mqtt://host:port or mqtts://host:port")
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("a broker URL has no credentials, path or query (credentials: environment)")
    return parts.hostname, parts.port or SCHEMES[parts.scheme], parts.scheme == "mqtts"


def _remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def _utf8(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return len(raw).to_bytes(2, "big") + raw


def connect_packet(client_id: str, login: tuple[str, str] | None, keepalive: int) -> bytes:
    """``CONNECT``, MQTT 3.1.1, clean session, with the login if any."""
    flags, payload = 0x02, _utf8(client_id)
    if login is not None:
        flags |= 0xC0
        payload += _utf8(login[0]) + _utf8(login[1])
    body = _utf8(b"MQTT") + bytes((4, flags)) + keepalive.to_bytes(2, "big") + payload
    return b"\x10" + _remaining_length(len(body)) + body


def publish_packet(topic: bytes, mid: int, payload: bytes) -> bytes:
    """``PUBLISH`` at QoS 1, not retained, first delivery."""
    size = 4 + len(topic) + len(payload)
    return b"\x32" + _remaining_length(size) + _utf8(topic) + mid.to_bytes(2, "big") + payload


class _Link(asyncio.Protocol):
    """One connection to the broker: what is written goes out as is; ``CONNACK``, ``PUBACK`` and
    ``PINGRESP`` are read, anything else is skipped."""

    def __init__(self, on_puback: Callable[[_Link, int], None], on_lost: Callable[[_Link], None]) -> None:
        loop = asyncio.get_running_loop()
        self.connack: asyncio.Future[int] = loop.create_future()
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.last_sent = loop.time()
        self.ping_sent: float | None = None
        self._buffer = bytearray()
        self._on_puback, self._on_lost = on_puback, on_lost

    @property
    def open(self) -> bool:
        return not self.lost and self.transport is not None and not self.transport.is_closing()

    def send(self, data: bytes) -> None:
        if self.open:
            self.transport.write(data)  # type: ignore[union-attr]
            self.last_sent = asyncio.get_running_loop().time()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        pos, end = 0, len(buffer)
        while end - pos >= 2:
            length, shift, i = 0, 0, pos + 1
            while i < end:
                byte = buffer[i]
                i += 1
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
                if shift > 21:  # a remaining length of more than four bytes: not MQTT
                    self.transport.abort()  # type: ignore[union-attr]
                    return
            else:
                break  # the length is not complete yet
            if end - i < length:
                break
            kind = buffer[pos] >> 4
            if kind == PUBACK and length >= 2:
                self._on_puback(self, buffer[i] << 8 | buffer[i + 1])
            elif kind == CONNACK and length >= 2 and not self.connack.done():
                self.connack.set_result(buffer[i + 1])
            elif kind == PINGRESP:
                self.ping_sent = None
            pos = i + length
        del buffer[:pos]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.connack.done():
            self.connack.set_exception(ConnectionError(type(exc).__name__ if exc else "closed"))
        self._on_lost(self)


class FleetSource(Protocol):
    """Where the fleet's ticks come from: the automation server's events, or the world of a shard
    that samples a slice of the sensors without holding the server."""

    @property
    def bus(self) -> EventSource: ...


class FleetPublisher:
    """Publishes every ``DEVICE_TELEMETRY`` event of ``backend`` to the broker at ``url``.

    ``login``: (username, password) or none; ``buffer``: messages kept while disconnected;
    ``window``: messages in flight awaiting ``PUBACK`` at once; ``backoff``: the first and the
    longest wait between failed connection attempts, in seconds; ``seed``: the jitter's stream.
    """

    def __init__(
        self,
        backend: FleetSource,
        url: str,
        login: tuple[str, str] | None = None,
        *,
        buffer: int = 10_000,
        window: int = 1000,
        backoff: tuple[float, float] = (0.5, 30.0),
        seed: int = 0,
        client_id: str = "twin-fleet",
        only: frozenset[str] | None = None,
    ) -> None:
        self.backend = backend
        self.url = url
        self.host, self.port, self.tls = broker_address(url)
        self._login = login
        self.buffer, self.window, self.backoff = buffer, min(window, MAX_WINDOW), backoff
        self.client_id = client_id
        self.only = only
        """The devices whose ticks it publishes (``None``: all): a shard's share of the fleet."""
        self._jitter = random.Random(seed)
        self._pending: deque[tuple[str, bytes]] = deque()
        self._inflight: dict[int, tuple[str, bytes]] = {}
        self._taken = self._evicted = 0
        self._sub: Subscription | None = None
        self.published = 0
        """PUBLISH packets written to a connection."""
        self.acknowledged = 0
        self.undelivered = 0
        self.reconnects = 0
        self.last_error: str | None = None
        self._connections = 0
        self._link: _Link | None = None
        self._mid = 0
        self._wake = asyncio.Event()
        self._misc: asyncio.Task | None = None
        self._up = False

    # Counters ------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._up

    @property
    def produced(self) -> int:
        """Messages the fleet produced since publishing began (one per device per tick)."""
        return self._taken + (self._sub.dropped if self._sub is not None else 0)

    @property
    def dropped(self) -> int:
        return self._evicted + (self._sub.dropped if self._sub is not None else 0)

    def status(self) -> dict[str, Any]:
        return {
            "broker": f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}",
            "connected": self.connected,
            "produced": self.produced,
            "published": self.published,
            "acknowledged": self.acknowledged,
            "in_flight": len(self._inflight),
            "undelivered": self.undelivered,
            "buffered": len(self._pending),
            "buffer_size": self.buffer,
            "dropped": self.dropped,
            "reconnects": self.reconnects,
            "last_error": self.last_error,
        }

    def summary(self) -> str:
        s = self.status()
        return (
            f"fleet publisher {s['broker']}: {s['produced']} produced, {s['published']} published, "
            f"{s['acknowledged']} acknowledged, {s['undelivered']} undelivered, {s['in_flight']} in "
            f"flight, {s['buffered']} buffered, {s['dropped']} dropped, {s['reconnects']} reconnects"
        )

    # The world's side ----------------------------------------------------------------------------
    def _take(self, event: Event) -> None:
        if self.only is not None and event.source not in self.only:
            return
        self._taken += 1
        if len(self._pending) >= self.buffer:
            self._pending.popleft()
            self._evicted += 1
        self._pending.append((uplink_topic(event.data["device_type"], event.source), uplink_payload(event)))

    async def _pump(self, sub: Subscription) -> None:
        while True:
            self._take(await sub.get())
            while (event := sub.get_nowait()) is not None:
                self._take(event)
            self._wake.set()

    # The broker's side ---------------------------------------------------------------------------
    async def run(self) -> None:
        """Publish until cancelled; the counters go to the log when it ends."""
        self._sub = sub = self.backend.bus.subscribe(
            frozenset({EventKind.DEVICE_TELEMETRY}), maxlen=self.buffer
        )
        pump = asyncio.create_task(self._pump(sub), name="fleet-publisher-pump")
        failures = 0
        try:
            while True:
                link = await self._connect()
                if link is None:
                    failures += 1
                    await asyncio.sleep(self._delay(failures))
                    continue
                self._up, acknowledged = True, self.acknowledged
                self.reconnects += self._connections > 0
                self._connections += 1
                log.info("twin: fleet publisher connected to %s:%d", self.host, self.port)
                try:
                    await self._publish(link)
                finally:
                    self._close(link)
                # A connection that delivered something resets the backoff; one the broker ends
                # before any PUBACK counts as a failure, so a broker that accepts and hangs up at
                # once is not hammered.
                failures = 1 if self.acknowledged > acknowledged else failures + 1
                delay = self._delay(failures)
                log.warning("twin: fleet publisher lost %s:%d; again in %.1f s", self.host, self.port, delay)
                await asyncio.sleep(delay)
        finally:
            pump.cancel()
            with contextlib.suppress(BaseException):
                await pump
            if self._link is not None:
                self._close(self._link)
            sub.close()
            log.info("twin: %s", self.summary())

    def _delay(self, failures: int) -> float:
        """Exponential backoff with equal jitter: half the step fixed, half drawn from the seed."""
        first, longest = self.backoff
        step = min(longest, first * 2 ** min(failures - 1, 30))
        return step / 2 + self._jitter.uniform(0, step / 2)

    async def _connect(self) -> _Link | None:
        """A connected link once the broker accepted it (``CONNACK`` 0), else ``None``."""
        loop = asyncio.get_running_loop()
        tls: dict[str, Any] = {}
        if self.tls:
            tls = {"ssl": ssl.create_default_context(), "server_hostname": self.host}
        try:
            _, link = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Link(self._on_puback, self._on_lost), self.host, self.port, **tls
                ),
                CONNACK_TIMEOUT_S,
            )
        except (OSError, ValueError, TimeoutError) as err:
            self.last_error = f"cannot connect: {type(err).__name__}"
            return None
        self._link = link
        link.send(connect_packet(self.client_id, self._login, KEEPALIVE_S))
        try:
            code = await asyncio.wait_for(asyncio.shield(link.connack), CONNACK_TIMEOUT_S)
        except (TimeoutError, ConnectionError) as err:
            code = None
            self.last_error = f"no CONNACK: {type(err).__name__}"
        if code is None or code != 0:
            if code is not None:
                self.last_error = f"refused: {REFUSALS.get(code, code)}"
            self._close(link)
            return None
        self._misc = asyncio.create_task(self._keepalive(link), name="fleet-publisher-keepalive")
        return link

    async def _keepalive(self, link: _Link) -> None:
        """A ``PINGREQ`` when nothing was sent for the keepalive; no ``PINGRESP`` within another one
        ends the connection (the broker is gone without closing it)."""
        loop = asyncio.get_running_loop()
        while link.open:
            await asyncio.sleep(1.0)
            now = loop.time()
            if link.ping_sent is not None and now - link.ping_sent >= KEEPALIVE_S:
                link.transport.abort()  # type: ignore[union-attr]
                return
            if link.ping_sent is None and now - link.last_sent >= KEEPALIVE_S:
                link.send(PINGREQ_PACKET)
                link.ping_sent = now

    def _on_lost(self, link: _Link) -> None:
        if link is not self._link:
            return
        self._link, self._up = None, False
        self._wake.set()

    def _on_puback(self, link: _Link, mid: int) -> None:
        if link is self._link and self._inflight.pop(mid, None) is not None:
            self.acknowledged += 1
            self._wake.set()

    def _next_mid(self) -> int:
        while True:
            self._mid = self._mid % MAX_WINDOW + 1
            if self._mid not in self._inflight:
                return self._mid

    async def _publish(self, link: _Link) -> None:
        """Send buffered messages, at most ``window`` awaiting ``PUBACK``, until the connection ends;
        what one turn can send goes out in one write."""
        while link is self._link and link.open:
            batch = []
            while self._pending and len(self._inflight) < self.window:
                topic, payload = self._pending.popleft()
                mid = self._next_mid()
                self._inflight[mid] = (topic, payload)
                batch.append(publish_packet(topic.encode(), mid, payload))
            if batch:
                link.send(b"".join(batch))
                self.published += len(batch)
            self._wake.clear()
            if link is self._link and link.open:
                await self._wake.wait()

    def _close(self, link: _Link) -> None:
        """End ``link``'s connection (``DISCONNECT`` when it is still up); what it had in flight
        without a ``PUBACK`` is undelivered."""
        if self._misc is not None:
            self._misc.cancel()
            self._misc = None
        if self._link is link:
            self._link, self._up = None, False
        if link.open:
            link.send(DISCONNECT_PACKET)
            link.transport.close()  # type: ignore[union-attr]
        self.undelivered += len(self._inflight)
        self._inflight.clear()
