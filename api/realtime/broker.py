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

from amqtt.broker import Broker
from amqtt.errors import BrokerError
from amqtt.mqtt.disconnect import DisconnectPacket
from amqtt.plugins.base import BaseAuthPlugin, BasePlugin

from hardware.ports.mqtt import BrokerAuth

BRIDGE_CLIENT_ID = "twin-bridge"
"""The twin's own bridge's client id: its sessions are the twin's, not a client's, and are not logged."""
MAX_SESSIONS = 10_000
MAX_OUTAGES = 1000
"""Broker outages a :class:`SessionLog` keeps (the oldest go first), like its sessions."""


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
