"""MQTT: the embedded broker (amqtt, a real broker on a real port) and the bridge between the broker
and the automation backend: device topics ``device/{device_type}/{device_id}/uplink`` and ``.../downlink``.

Simulated sensors behave like devices on the broker: their samples are published on their uplink
topics, and a command published on a simulated sensor's downlink topic (``{"command", "params"?}``)
is carried out by it; the result is a ``DeviceCommandResult`` event on the realtime channels.

The broker can keep a :class:`SessionLog`: each client's connection and its end (on a clock the
owner passes in, the world's in a scenario run), whether the client said goodbye (``DISCONNECT``)
or was cut off, and when the broker itself was down, so that scenario expectations can judge
whether a client reconnected after a drop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import orjson
from amqtt.broker import Broker
from amqtt.client import MQTTClient
from amqtt.errors import BrokerError
from amqtt.mqtt.disconnect import DisconnectPacket
from amqtt.plugins.base import BaseAuthPlugin, BasePlugin

from api.tasks import first_failure
from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import DomainError
from hardware.ports.events import Event, EventKind, Subscription
from hardware.ports.mqtt import BrokerAuth

log = logging.getLogger(__name__)


UPLINK_FILTER = "device/+/+/uplink"
DOWNLINK_FILTER = "device/+/+/downlink"
DEVICE_FILTERS = {UPLINK_FILTER: 0, DOWNLINK_FILTER: 1}
"""The bridge's own subscriptions and their QoS."""
BRIDGE_CLIENT_ID = "twin-bridge"
"""The bridge's own client id: its sessions are the twin's, not a client's, and are not logged."""
MAX_SESSIONS = 10_000
MAX_OUTAGES = 1000
"""Broker outages a :class:`SessionLog` keeps (the oldest go first), like its sessions."""


def uplink_topic(device_type: str, device_id: str) -> str:
    return f"device/{device_type}/{device_id}/uplink"


def uplink_payload(event: Event) -> bytes:
    body = dict(event.data["metrics"])
    body["timestamp"] = int(event.data["timestamp"])
    return orjson.dumps(body)


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


def device_of_uplink(topic: str) -> str | None:
    """``device/{type}/{id}/uplink`` → the device id; anything else → ``None``."""
    return device_of(topic, "uplink")


def device_of(topic: str, direction: str) -> str | None:
    """``device/{type}/{id}/{direction}`` → the device id; anything else → ``None``."""
    parts = topic.split("/")
    if len(parts) == 4 and parts[0] == "device" and parts[3] == direction and parts[1] and parts[2]:
        return parts[2]
    return None


def command_of(payload: bytes) -> tuple[str, dict] | None:
    """A downlink payload ``{"command": str, "params"?: object}`` → (command, params), else ``None``."""
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    command, params = body.get("command"), body.get("params", {})
    if not isinstance(command, str) or not command or not isinstance(params, dict):
        return None
    return command, params


def downlink_payload(event: Event) -> bytes:
    """What a real device receives: the command's rendered ``payload_template`` when the world
    rendered one, else ``{"command", "params", "request_id"}``."""
    if isinstance(payload := event.data.get("payload"), str):
        return payload.encode()
    body = {
        "command": event.data["command"],
        "params": event.data["params"],
        "request_id": event.data["command_id"],
    }
    return json.dumps(body, separators=(",", ":")).encode()


class MqttBridge:
    """The automation backend's side of the broker.

    Out: world telemetry as uplink messages, and commands for real devices on their downlink
    topics (QoS 1, not retained). In: uplinks on ``device/+/+/uplink`` (an unknown device becomes a
    draft; the simulated sensors' own uplinks are not ingested twice), and commands on
    ``device/+/+/downlink`` for simulated sensors, which carry them out (a real device's downlink
    traffic, the bridge's own publications included, is that device's business). Reconnects with a short
    backoff when the broker goes away; outgoing events wait meanwhile in the bounded subscription
    queue (the oldest are dropped and counted).
    """

    def __init__(self, backend: AutomationBackend, url: str, *, queue: int = 10_000) -> None:
        self.backend = backend
        self.url = url
        self.queue = queue
        self.connected = False
        self.published = 0
        self.received = 0
        self.rejected = 0
        self.commands = 0
        self._sensors: set[str] = set()
        """Devices whose uplinks the bridge publishes itself: their echo from the broker is skipped."""
        self.extra: dict[str, int] = {}
        """Topic filters subscribed on request beyond the device topics (with their QoS), held across
        reconnections; their messages are the backend's (:meth:`MqttAdmin.inbound`)."""
        self.login: tuple[str, str] | None = None
        """The username and password presented on the next connection (none: anonymous)."""
        self._client: MQTTClient | None = None

    async def run(self) -> None:
        kinds = frozenset({EventKind.DEVICE_TELEMETRY, EventKind.DEVICE_COMMAND_RESULT})
        sub = self.backend.subscribe(kinds, maxlen=self.queue)
        try:
            while True:
                # No client plugins: amqtt's default packet logger schedules a task for every packet.
                config: dict[str, Any] = {"auto_reconnect": False, "plugins": {}}
                if self.url.startswith("mqtts://"):  # its own broker's certificate, whoever signed it
                    config.update(check_hostname=False, verify_cert=False)
                client = MQTTClient(client_id=BRIDGE_CLIENT_ID, config=config)
                try:
                    await client.connect(self._login_url())
                    await client.subscribe([*DEVICE_FILTERS.items(), *self.extra.items()])
                    self.connected, self._client = True, client
                    await first_failure(self._send(client, sub), self._receive(client))
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # broker down or connection lost: retry
                    log.warning("MQTT bridge disconnected (%s); retrying", type(err).__name__)
                finally:
                    self.connected, self._client = False, None
                    with contextlib.suppress(Exception):
                        await asyncio.shield(client.disconnect())
                await asyncio.sleep(1.0)
        finally:
            sub.close()

    def _login_url(self) -> str:
        if self.login is None:
            return self.url
        scheme, _, rest = self.url.partition("://")
        user, password = (quote(part, safe="") for part in self.login)
        return f"{scheme}://{user}:{password}@{rest.rpartition('@')[2]}"

    async def subscribe(self, topic: str, qos: int) -> None:
        """Hold ``topic`` from now on (at once when connected); raises when the broker refuses it."""
        client = self._client
        if client is not None and self.connected:
            codes = await client.subscribe([(topic, qos)])
            if codes and codes[0] == 0x80:
                raise ValueError(f"the broker refused the subscription to {topic}")
        self.extra[topic] = qos

    async def unsubscribe(self, topic: str) -> None:
        self.extra.pop(topic, None)
        client = self._client
        if client is not None and self.connected:
            await client.unsubscribe([topic])

    async def _send(self, client: MQTTClient, sub: Subscription) -> None:
        while True:
            event = await sub.get()
            if event.kind is EventKind.DEVICE_TELEMETRY:
                topic = uplink_topic(event.data["device_type"], event.source)
                self._sensors.add(event.source)
                await client.publish(topic, uplink_payload(event), qos=0)
            elif event.data.get("downlink_topic"):
                await client.publish(event.data["downlink_topic"], downlink_payload(event), qos=1)
            else:
                continue
            self.published += 1

    async def _receive(self, client: MQTTClient) -> None:
        while True:
            message = await client.deliver_message()
            if message is None:
                continue
            if (target := device_of(message.topic, "downlink")) is not None:
                self._command(target, bytes(message.data))
                continue
            device_id = device_of_uplink(message.topic)
            if device_id is None:  # one of the extra subscriptions
                taken = self.backend.mqtt.inbound(message.topic, bytes(message.data or b""))
                self.received, self.rejected = self.received + taken, self.rejected + (not taken)
                continue
            if device_id in self._sensors:  # a simulated sensor's own sample coming back: not ingested
                continue
            try:
                data = json.loads(bytes(message.data)) if device_id else None
            except ValueError:
                data = None
            if not isinstance(data, dict):
                self.rejected += 1
                continue
            try:
                if self.backend.devices.mqtt_uplink(device_id, data, message.topic) is not None:
                    self.received += 1
            except DomainError:
                self.rejected += 1

    def _command(self, device_id: str, payload: bytes) -> None:
        """A command on a downlink topic: a simulated sensor carries it out (the world emits its
        result); other devices' downlinks are left alone."""
        try:
            simulated = self.backend.devices.get_device(device_id).device.simulated
        except DomainError:
            self.rejected += 1
            return
        if not simulated:
            return
        parsed = command_of(payload)
        if parsed is None:
            self.rejected += 1
            return
        try:
            self.backend.devices.send_command(device_id, *parsed)
        except DomainError:
            self.rejected += 1
            return
        self.commands += 1
