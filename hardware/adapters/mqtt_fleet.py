"""The simulated sensor fleet published to an outside MQTT broker, as the real devices would publish:
each device's tick is one JSON message on ``device/{type}/{id}/uplink`` (the automation server's own
topic and payload, the encoder the twin's MQTT bridge uses), QoS 1, not retained. A real automation
server on that broker sees the devices appear as drafts, and stores their telemetry once approved.

Delivery is counted, never assumed. A message counts as *acknowledged* only when its ``PUBACK``
arrives; one published on a connection that ends before its ``PUBACK`` counts as *undelivered* (the
broker may or may not have it; it is not sent again). While the broker is away, messages wait in a
bounded buffer; when it is full the oldest are *dropped* and counted (a burst bigger than the buffer,
one tick of a larger fleet or a long step of the clock, loses its oldest messages even while
connected: size it to at least one tick of the fleet). At every moment::

    produced == acknowledged + in_flight + undelivered + buffered + dropped

The connection comes back by itself with exponential backoff and jitter from a seeded stream (wall
time: this talks to the outside world; the world's own clock is not involved). The paho client runs
on the event loop (its socket watched by the loop, no network thread); only the TCP connect, which
can block, runs in a worker thread. Credentials come from the caller (the environment) and are never
logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as mqtt

from api.realtime.mqtt import uplink_payload, uplink_topic
from hardware.ports.automation import AutomationBackend
from hardware.ports.events import Event, EventKind, Subscription

log = logging.getLogger(__name__)

KEEPALIVE_S = 30
CONNACK_TIMEOUT_S = 10.0
SCHEMES = {"mqtt": 1883, "mqtts": 8883}


def broker_address(url: str) -> tuple[str, int, bool]:
    """``mqtt://host[:port]`` or ``mqtts://host[:port]`` → (host, port, tls); ``ValueError`` else
    (credentials in the URL are refused: they come from the environment)."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError("expected mqtt://host:port or mqtts://host:port")
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("a broker URL has no credentials, path or query (credentials: environment)")
    return parts.hostname, parts.port or SCHEMES[parts.scheme], parts.scheme == "mqtts"


class FleetPublisher:
    """Publishes every ``DEVICE_TELEMETRY`` event of ``backend`` to the broker at ``url``.

    ``login``: (username, password) or none; ``buffer``: messages kept while disconnected;
    ``window``: messages in flight awaiting ``PUBACK`` at once; ``backoff``: the first and the
    longest wait between failed connection attempts, in seconds; ``seed``: the jitter's stream.
    """

    def __init__(
        self,
        backend: AutomationBackend,
        url: str,
        login: tuple[str, str] | None = None,
        *,
        buffer: int = 10_000,
        window: int = 1000,
        backoff: tuple[float, float] = (0.5, 30.0),
        seed: int = 0,
        client_id: str = "twin-fleet",
    ) -> None:
        self.backend = backend
        self.url = url
        self.host, self.port, self.tls = broker_address(url)
        self._login = login
        self.buffer, self.window, self.backoff = buffer, window, backoff
        self.client_id = client_id
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
        self._client: mqtt.Client | None = None
        self._connack: asyncio.Future[Any] | None = None
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
        self._sub = sub = self.backend.subscribe(frozenset({EventKind.DEVICE_TELEMETRY}), maxlen=self.buffer)
        pump = asyncio.create_task(self._pump(sub), name="fleet-publisher-pump")
        failures = 0
        try:
            while True:
                client = await self._connect()
                if client is None:
                    failures += 1
                    await asyncio.sleep(self._delay(failures))
                    continue
                self._up, acknowledged = True, self.acknowledged
                self.reconnects += self._connections > 0
                self._connections += 1
                log.info("twin: fleet publisher connected to %s:%d", self.host, self.port)
                try:
                    await self._publish(client)
                finally:
                    self._close(client)
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
            if self._client is not None:
                self._close(self._client)
            sub.close()
            log.info("twin: %s", self.summary())

    def _delay(self, failures: int) -> float:
        """Exponential backoff with equal jitter: half the step fixed, half drawn from the seed."""
        first, longest = self.backoff
        step = min(longest, first * 2 ** min(failures - 1, 30))
        return step / 2 + self._jitter.uniform(0, step / 2)

    async def _connect(self) -> mqtt.Client | None:
        """A connected client once the broker accepted it (``CONNACK`` 0), else ``None``."""
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id, clean_session=True)
        # No limit of paho's own: the window bounds what is in flight, and every message handed over goes
        # out at once (paho's default of 20 queued the rest and rescanned them on every PUBACK).
        client.max_inflight_messages_set(0)
        if self._login is not None:
            client.username_pw_set(*self._login)
        if self.tls:
            client.tls_set()
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, client.connect, self.host, self.port, KEEPALIVE_S)
        except (OSError, ValueError) as err:
            self.last_error = f"cannot connect: {type(err).__name__}"
            return None
        self._attach(client, loop)
        try:
            code = await asyncio.wait_for(asyncio.shield(self._connack), CONNACK_TIMEOUT_S)
        except (TimeoutError, ConnectionError) as err:
            code = None
            self.last_error = f"no CONNACK: {type(err).__name__}"
        if code is None or code.is_failure:
            if code is not None:
                self.last_error = f"refused: {code}"
            self._close(client)
            return None
        return client

    def _attach(self, client: mqtt.Client, loop: asyncio.AbstractEventLoop) -> None:
        """Drive ``client`` from the event loop: its socket's reads and writes, its keepalive."""
        self._client, self._connack = client, loop.create_future()
        sock = client.socket()
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_socket_close = lambda c, u, s: (loop.remove_reader(s), loop.remove_writer(s))
        client.on_socket_register_write = lambda c, u, s: loop.add_writer(s, c.loop_write)
        client.on_socket_unregister_write = lambda c, u, s: loop.remove_writer(s)
        loop.add_reader(sock, client.loop_read)
        if client.want_write():
            loop.add_writer(sock, client.loop_write)
        self._misc = asyncio.create_task(self._keepalive(client), name="fleet-publisher-keepalive")

    async def _keepalive(self, client: mqtt.Client) -> None:
        while client.loop_misc() == mqtt.MQTT_ERR_SUCCESS:
            await asyncio.sleep(1.0)

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, code: Any, props: Any) -> None:
        if client is self._client and self._connack is not None and not self._connack.done():
            self._connack.set_result(code)

    def _on_disconnect(self, client: mqtt.Client, userdata: Any, flags: Any, code: Any, props: Any) -> None:
        if client is not self._client:
            return
        if self._connack is not None and not self._connack.done():
            self._connack.set_exception(ConnectionError(str(code)))
        self._client, self._up = None, False
        self._wake.set()

    def _on_publish(self, client: mqtt.Client, userdata: Any, mid: int, code: Any, props: Any) -> None:
        if client is self._client and self._inflight.pop(mid, None) is not None:
            self.acknowledged += 1
            self._wake.set()

    async def _publish(self, client: mqtt.Client) -> None:
        """Send buffered messages, at most ``window`` awaiting ``PUBACK``, until the connection ends."""
        while client is self._client:
            while self._pending and len(self._inflight) < self.window:
                topic, payload = self._pending.popleft()
                info = client.publish(topic, payload, qos=1)
                if info.rc != mqtt.MQTT_ERR_SUCCESS:  # the connection has just gone: not sent
                    self._pending.appendleft((topic, payload))
                    break
                self._inflight[info.mid] = (topic, payload)
                self.published += 1
            self._wake.clear()
            if client is self._client:
                await self._wake.wait()

    def _close(self, client: mqtt.Client) -> None:
        """End ``client``'s connection (``DISCONNECT`` when it is still up); what it had in flight
        without a ``PUBACK`` is undelivered."""
        if self._misc is not None:
            self._misc.cancel()
            self._misc = None
        sock = client.socket()
        if sock is not None:
            loop = asyncio.get_running_loop()
            loop.remove_reader(sock)
            loop.remove_writer(sock)
        client.on_socket_register_write = client.on_socket_unregister_write = None
        client.on_socket_close = None
        if self._client is client:
            self._client, self._up = None, False
        with contextlib.suppress(Exception):
            client.disconnect()  # written at once, then paho closes the socket
        if client.socket() is not None:
            with contextlib.suppress(Exception):
                client.socket().close()
        self.undelivered += len(self._inflight)
        self._inflight.clear()
        self._connack = None
