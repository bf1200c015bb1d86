"""MQTT: the embedded broker (amqtt, a real broker on a real port) and the bridge that publishes
world telemetry as devices do, flat JSON on ``device/{device_type}/{device_id}/uplink``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

from amqtt.broker import Broker
from amqtt.client import MQTTClient
from amqtt.errors import BrokerError

from hardware.ports.automation import AutomationBackend
from hardware.ports.events import Event, EventKind

log = logging.getLogger(__name__)


def uplink_topic(device_type: str, device_id: str) -> str:
    return f"device/{device_type}/{device_id}/uplink"


def uplink_payload(event: Event) -> bytes:
    body = dict(event.data["metrics"])
    body["timestamp"] = int(event.data["timestamp"])
    return json.dumps(body, separators=(",", ":")).encode()


class EmbeddedBroker:
    """An amqtt broker on ``host:port`` (port 0 picks a free one; :attr:`port` tells which)."""

    def __init__(self, host: str = "0.0.0.0", port: int = 1883) -> None:
        self.host = host
        self._port = port
        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"{host}:{port}"}},
            "plugins": {"amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}},
        }
        self._broker = Broker(config)

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

    async def stop(self) -> None:
        await self._broker.shutdown()


class TelemetryBridge:
    """Subscribes to the backend's telemetry events and publishes each as an uplink message.

    Reconnects with a short backoff when the broker goes away; events that arrive meanwhile wait
    in the bounded subscription queue (the oldest are dropped and counted).
    """

    def __init__(self, backend: AutomationBackend, url: str, *, queue: int = 10_000) -> None:
        self.backend = backend
        self.url = url
        self.queue = queue
        self.connected = False
        self.published = 0

    async def run(self) -> None:
        sub = self.backend.subscribe(frozenset({EventKind.DEVICE_TELEMETRY}), maxlen=self.queue)
        try:
            while True:
                client = MQTTClient(client_id="twin-bridge", config={"auto_reconnect": False})
                try:
                    await client.connect(self.url)
                    self.connected = True
                    while True:
                        event = await sub.get()
                        topic = uplink_topic(event.data["device_type"], event.source)
                        await client.publish(topic, uplink_payload(event), qos=0)
                        self.published += 1
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # broker down or connection lost: retry
                    log.warning("MQTT bridge disconnected (%s); retrying", type(err).__name__)
                finally:
                    self.connected = False
                    with contextlib.suppress(Exception):
                        await asyncio.shield(client.disconnect())
                await asyncio.sleep(1.0)
        finally:
            sub.close()
