"""The MQTT bridge between the broker and the automation backend, on the device topics
(:mod:`hardware.ports.device_topics`).

Simulated sensors behave like devices on the broker: their samples are published on their uplink
topics, and a command published on a simulated sensor's downlink topic (``{"command", "params"?}``)
is carried out by it; the result is a ``DeviceCommandResult`` event on the realtime channels.

The bridge is the live MQTT side the automation backend administers (:class:`hardware.ports.mqtt.MqttLink`):
its own client, and the embedded broker (:mod:`api.realtime.broker`) when the twin runs one. The broker
starts on the stored configuration when there is one (its bind, TLS, and the backend's authentication on
every connection), else on the settings' bind. A configuration change restarts it on the new bind; the
bridge follows (its next connection goes to the new address, over TLS when the broker listens with TLS,
with the server's system login once authentication is on). The certificate material is written for the
broker to a private directory of this process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from amqtt.client import MQTTClient

from api.realtime.broker import BRIDGE_CLIENT_ID, EmbeddedBroker
from api.tasks import first_failure
from hardware.ports.automation import AutomationBackend
from hardware.ports.device_topics import (
    DOWNLINK_FILTER,
    UPLINK_FILTER,
    command_of,
    device_of,
    device_of_uplink,
    downlink_payload,
    uplink_payload,
    uplink_topic,
)
from hardware.ports.errors import DomainError
from hardware.ports.events import EventKind, Subscription
from hardware.ports.mqtt import BrokerAuth, BrokerConfig, TlsPems

log = logging.getLogger(__name__)


YIELD_EVERY = 64
"""Messages the bridge publishes before it lets other tasks run (about a millisecond of work)."""
DEVICE_FILTERS = {UPLINK_FILTER: 0, DOWNLINK_FILTER: 1}
"""The bridge's own subscriptions and their QoS."""
WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class MqttBridge:
    """The automation backend's side of the broker, and the embedded broker it runs, if any.

    Out: world telemetry as uplink messages, and commands for real devices on their downlink
    topics (QoS 1, not retained). In: uplinks on ``device/+/+/uplink`` (an unknown device becomes a
    draft; the simulated sensors' own uplinks are not ingested twice), and commands on
    ``device/+/+/downlink`` for simulated sensors, which carry them out (a real device's downlink
    traffic, the bridge's own publications included, is that device's business). Reconnects with a short
    backoff when the broker goes away; outgoing events wait meanwhile in the bounded subscription
    queue (the oldest are dropped and counted).

    ``listen`` is where the embedded broker listens without a stored configuration; ``external_url``
    the broker in use when it is not the twin's own.
    """

    def __init__(
        self,
        backend: AutomationBackend,
        url: str,
        *,
        queue: int = 10_000,
        listen: tuple[str, int] = ("0.0.0.0", 1883),
        external_url: str | None = None,
    ) -> None:
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
        self.listen = listen
        self.external = urlsplit(external_url) if external_url else None
        self._broker: EmbeddedBroker | None = None
        self.current: Callable[[], EmbeddedBroker | None] = lambda: self._broker
        """The broker now running (whoever replaces it says so here)."""
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    async def run(self) -> None:
        kinds = frozenset({EventKind.DEVICE_TELEMETRY, EventKind.DEVICE_COMMAND_RESULT})
        sub = self.backend.bus.subscribe(kinds, maxlen=self.queue)
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

    # The embedded broker --------------------------------------------------------------------------
    async def start_broker(
        self, stored: BrokerConfig | None, tls: TlsPems | None, auth: BrokerAuth
    ) -> EmbeddedBroker:
        host, port = (stored.listen, stored.port) if stored else self.listen
        files = self._files(tls) if stored and stored.tls_enabled and tls else None
        self._broker = broker = EmbeddedBroker(host, port, auth=auth, tls=files)
        await broker.start()
        self._point_at(broker)
        return broker

    def _point_at(self, broker: EmbeddedBroker) -> None:
        host = WILDCARDS.get(broker.host, broker.host)
        host = f"[{host}]" if ":" in host else host
        self.url = f"{'mqtts' if broker.tls else 'mqtt'}://{host}:{broker.port}"

    def _files(self, tls: TlsPems) -> tuple[str, str]:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="twin-mqtt-tls-")
        cert, key = Path(self._dir.name) / "mqtt-server.crt", Path(self._dir.name) / "mqtt-server.key"
        cert.write_text(tls.cert)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(tls.key)
        return str(cert), str(key)

    def address(self) -> tuple[str, int]:
        if self.external is not None:
            return self.external.hostname or "127.0.0.1", self.external.port or 1883
        broker = self.current()
        return (broker.host, broker.port) if broker is not None else self.listen

    def embedded(self) -> bool:
        return self.current() is not None

    def clients(self) -> int | None:
        broker = self.current()
        if broker is None:
            return None
        sessions = getattr(broker.running, "_sessions", {})
        return sum(
            1
            for client_id, (session, _) in list(sessions.items())
            if client_id != BRIDGE_CLIENT_ID and session.transitions.is_connected()
        )

    def topics(self) -> dict[str, int]:
        return dict(self.extra)

    async def apply(self, config: BrokerConfig, tls: TlsPems | None) -> bool:
        broker = self.current()
        if broker is None:
            return False
        try:
            await broker.rebind(config.listen, config.port, self._files(tls) if tls else None)
        except OSError:
            return False
        finally:
            self._point_at(broker)
        return True

    def use_login(self, login: tuple[str, str] | None) -> None:
        self.login = login

    # Traffic --------------------------------------------------------------------------------------
    async def _send(self, client: MQTTClient, sub: Subscription) -> None:
        sent = 0
        while True:
            event = await sub.get()
            sent += 1
            if sent % YIELD_EVERY == 0:  # a tick of a big fleet is queued at once, and neither get()
                await asyncio.sleep(0)  # nor a QoS 0 publish waits: let the loop breathe between runs
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
                if self.backend.ingest.uplink(device_id, data, message.topic) is not None:
                    self.received += 1
            except DomainError:
                self.rejected += 1

    def _command(self, device_id: str, payload: bytes) -> None:
        """A command on a downlink topic: a simulated sensor carries it out (the world emits its
        result); other devices' downlinks are left alone."""
        try:
            simulated = self.backend.devices.detail(device_id).device.simulated
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
