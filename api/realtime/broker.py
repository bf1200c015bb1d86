"""The embedded MQTT broker (amqtt, a real broker on a real port) and the log of its client sessions.

The broker can keep a :class:`SessionLog`: each client's connection and its end (on a clock the
owner passes in, the world's in a scenario run), whether the client said goodbye (``DISCONNECT``)
or was cut off, and when the broker itself was down, so that scenario expectations can judge
whether a client reconnected after a drop."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amqtt.adapters import ReaderAdapter, WriterAdapter
from amqtt.broker import Broker
from amqtt.errors import AMQTTError, BrokerError, MQTTError
from amqtt.mqtt.disconnect import DisconnectPacket
from amqtt.plugins.base import BaseAuthPlugin, BasePlugin

from hardware.ports.mqtt import BrokerAuth

BRIDGE_CLIENT_ID = "twin-bridge"
"""The twin's own bridge's client id: its sessions are the twin's, not a client's, and are not logged."""
MAX_SESSIONS = 10_000
MAX_OUTAGES = 1000
"""Broker outages a :class:`SessionLog` keeps (the oldest go first), like its sessions."""
MAX_PACKET = 1024 * 1024
"""The largest packet (its remaining length) a client may send: the real server's broker (rmqtt's
listener builder, whose default the server keeps) refuses larger ones by closing the connection."""
HANDSHAKE_TIMEOUT_S = 30.0
"""A connection whose ``CONNECT`` has not been read and answered by then is closed (rmqtt's default)."""


class PacketTooLarge(MQTTError):
    pass


class BoundedReader(ReaderAdapter):
    """A client's byte stream, read as the broker reads it, that follows the packets' framing: a
    packet announcing more than ``limit`` bytes, or a length that is no MQTT length, cuts the
    connection (``cut``) before its body is read, so it is never buffered."""

    def __init__(self, inner: ReaderAdapter, limit: int, cut: Callable[[], None]) -> None:
        self.inner, self.limit, self.cut = inner, limit, cut
        self._left = 0
        """Bytes of the current packet's body still to come."""
        self._head = bytearray()
        """The next packet's fixed header so far."""

    async def read(self, n: int = -1) -> bytes:
        data = await self.inner.read(n)
        self._follow(data)
        return data

    def feed_eof(self) -> None:
        self.inner.feed_eof()

    def _follow(self, data: bytes) -> None:
        i = 0
        while i < len(data):
            if self._left:
                taken = min(self._left, len(data) - i)
                self._left, i = self._left - taken, i + taken
                continue
            self._head.append(data[i])
            i += 1
            if len(self._head) < 2 or self._head[-1] & 0x80:
                if len(self._head) > 5:  # a remaining length is at most 4 bytes
                    self._refuse("malformed remaining length")
                continue
            length = sum((b & 0x7F) << (7 * k) for k, b in enumerate(self._head[1:]))
            self._head.clear()
            if length > self.limit:
                self._refuse(f"packet of {length} bytes, past the {self.limit} the broker takes")
            self._left = length

    def _refuse(self, why: str) -> None:
        self.cut()
        raise PacketTooLarge(why)


@dataclass(slots=True)
class MqttSession:
    """One client connection to the broker, on the log's clock."""

    client_id: str
    at: float
    end: float | None = None
    """``None`` while the client is connected."""
    clean: bool | None = None
    """``True``: the client sent ``DISCONNECT``; ``False``: it was cut off (its connection dropped,
    the broker went down, another connection took its client id); ``None`` while connected."""


class SessionLog:
    """The broker's client sessions and outages, bounded (oldest sessions go first). Survives the
    broker: a broker started again on the same port is given the same log."""

    def __init__(self, now: Callable[[], float], maxlen: int = MAX_SESSIONS) -> None:
        self.now = now
        self.sessions: deque[MqttSession] = deque(maxlen=maxlen)
        self.outages: list[tuple[float, float | None]] = []
        """``(down, up)`` per time the broker went away; ``up`` is ``None`` until it is back."""
        self._open: dict[str, MqttSession] = {}
        self._goodbyes: set[str] = set()

    def connected(self, client_id: str) -> None:
        if client_id == BRIDGE_CLIENT_ID:
            return
        self._cut(client_id)
        session = MqttSession(client_id, self.now())
        self.sessions.append(session)
        self._open[client_id] = session

    def said_goodbye(self, client_id: str) -> None:
        """The client sent ``DISCONNECT``: the end that follows is its own choice."""
        if client_id in self._open:
            self._goodbyes.add(client_id)

    def disconnected(self, client_id: str) -> None:
        session = self._open.pop(client_id, None)
        if session is not None:
            session.end, session.clean = self.now(), client_id in self._goodbyes
        self._goodbyes.discard(client_id)

    def broker_down(self) -> None:
        """The broker is stopping: every client still connected is cut off now."""
        if len(self.outages) >= MAX_OUTAGES:
            del self.outages[0]
        self.outages.append((self.now(), None))
        for client_id in list(self._open):
            self._cut(client_id)

    def broker_up(self) -> None:
        if self.outages and self.outages[-1][1] is None:
            self.outages[-1] = (self.outages[-1][0], self.now())

    def _cut(self, client_id: str) -> None:
        session = self._open.pop(client_id, None)
        if session is not None:
            session.end, session.clean = self.now(), False
        self._goodbyes.discard(client_id)


class _Watch:
    """What the broker's plugin and its disconnect hook report to: a log, once one is attached."""

    log: SessionLog | None = None


class SessionWatch(BasePlugin):
    """amqtt plugin: client connections and their ends go to the broker's :class:`SessionLog`."""

    @dataclass
    class Config:
        watch: Any = None

    async def on_broker_client_connected(self, *, client_id: str, client_session: Any) -> None:
        if (log := self.config.watch.log) is not None:
            log.connected(client_id)

    async def on_broker_client_disconnected(self, *, client_id: str, client_session: Any) -> None:
        if (log := self.config.watch.log) is not None:
            log.disconnected(client_id)


class _Broker(Broker):
    """amqtt's broker, telling the session log whether a client that goes away said goodbye (the
    disconnect event amqtt gives plugins does not say)."""

    def __init__(self, config: dict[str, Any], watch: _Watch) -> None:
        super().__init__(config)
        self._watch = watch
        self.handshake = HANDSHAKE_TIMEOUT_S

    async def _client_connected(
        self, listener_name: str, reader: ReaderAdapter, writer: WriterAdapter
    ) -> None:
        """Every connection's packets are bounded (:data:`MAX_PACKET`); whatever ends its handling
        (a first packet that is no ``CONNECT``, garbage, a refused login, a handshake past
        :data:`HANDSHAKE_TIMEOUT_S`, the client leaving) ends the connection too."""

        def cut() -> None:
            transport = getattr(getattr(writer, "_writer", None), "transport", None)
            if transport is not None:
                transport.abort()

        try:
            await super()._client_connected(listener_name, BoundedReader(reader, MAX_PACKET, cut), writer)
        finally:
            cut()

    async def _initialize_client_session(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await asyncio.wait_for(super()._initialize_client_session(*args, **kwargs), self.handshake)
        except TimeoutError as err:
            raise AMQTTError("no CONNECT in time") from err

    async def _handle_disconnect(self, client_session: Any, *args: Any) -> None:
        """``(client_session, handler, disconnect_waiter)``: the waiter holds the ``DISCONNECT``
        packet when the client sent one, ``None`` when its connection just ended."""
        waiter = args[-1] if args else None
        log = self._watch.log
        if (
            log is not None
            and isinstance(waiter, asyncio.Future)
            and waiter.done()
            and not waiter.cancelled()
            and waiter.exception() is None
            and isinstance(waiter.result(), DisconnectPacket)
        ):
            log.said_goodbye(client_session.client_id)
        await super()._handle_disconnect(client_session, *args)


class BrokerLogin(BaseAuthPlugin):
    """amqtt plugin: asks the server's :class:`~hardware.ports.mqtt.BrokerAuth` on every connection
    (authentication can be turned on and off without a restart)."""

    @dataclass
    class Config:
        auth: Any = None

    async def authenticate(self, *, session: Any) -> bool:
        auth: BrokerAuth = self.config.auth
        return not auth.required() or auth.check(session.username, session.password)


class EmbeddedBroker:
    """An amqtt broker on ``host:port`` (port 0 picks a free one; :attr:`port` tells which).
    ``sessions`` (settable later) logs its clients' connections and its own outages. ``auth``: who
    may connect (anyone without it); ``tls``: the certificate and key files to listen with."""

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 1883,
        sessions: SessionLog | None = None,
        *,
        auth: BrokerAuth | None = None,
        tls: tuple[str, str] | None = None,
    ) -> None:
        self.host = host
        self._port = port
        self._watch = _Watch()
        self._watch.log = sessions
        self.auth = auth
        self.tls = tls
        self._broker = _Broker(self._config(), self._watch)

    def _config(self) -> dict[str, Any]:
        listener: dict[str, Any] = {"type": "tcp", "bind": f"{self.host}:{self._port}"}
        if self.tls is not None:
            listener.update(ssl=True, certfile=self.tls[0], keyfile=self.tls[1])
        login = (
            {f"{__name__}.BrokerLogin": {"auth": self.auth}}
            if self.auth is not None
            else {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}}
        )
        return {
            "listeners": {"default": listener},
            "plugins": {**login, f"{__name__}.SessionWatch": {"watch": self._watch}},
        }

    @property
    def running(self) -> Broker:
        return self._broker

    async def rebind(self, host: str, port: int, tls: tuple[str, str] | None) -> None:
        """Stop and listen again on ``host:port`` (with TLS when ``tls`` is given); if that fails,
        listen where it did before and raise ``OSError``."""
        before = (self.host, self.port, self.tls)
        await self.stop()
        self.host, self._port, self.tls = host, port, tls
        try:
            self._broker = _Broker(self._config(), self._watch)
            await self.start()
        except (OSError, ValueError) as err:
            self.host, self._port, self.tls = before
            self._broker = _Broker(self._config(), self._watch)
            await self.start()
            raise OSError(str(err)) from err

    @property
    def sessions(self) -> SessionLog | None:
        return self._watch.log

    @sessions.setter
    def sessions(self, log: SessionLog | None) -> None:
        self._watch.log = log

    def keep_sessions(self, now: Callable[[], float]) -> SessionLog:
        """Log the clients' sessions and this broker's outages from now on, on the clock ``now``."""
        self.sessions = log = SessionLog(now)
        return log

    def successor(self, port: int) -> EmbeddedBroker:
        """A new broker configured as this one (its bind host, authentication, TLS and session
        log) on ``port``: the one that takes over after an outage."""
        return EmbeddedBroker(self.host, port, self.sessions, auth=self.auth, tls=self.tls)

    @property
    def port(self) -> int:
        server = self._broker._servers.get("default")
        if server is None or not getattr(server.instance, "sockets", None):
            return self._port
        return server.instance.sockets[0].getsockname()[1]

    async def start(self) -> None:
        try:
            await self._broker.start()
        except BrokerError as err:
            raise OSError(
                f"MQTT broker: cannot listen on {self.host}:{self._port} ({err.__cause__ or err})"
            ) from err
        if self._watch.log is not None:
            self._watch.log.broker_up()

    async def stop(self) -> None:
        """Stop listening first, then end every session: a client that reconnects at once finds
        the port closed instead of a broker that is still shutting down."""
        if self._watch.log is not None:
            self._watch.log.broker_down()
        for server in self._broker._servers.values():
            if server.instance is not None:
                server.instance.close()
        await self._broker.shutdown()
