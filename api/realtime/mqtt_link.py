"""The live MQTT side the automation backend administers (:class:`hardware.ports.mqtt.MqttLink`): the
bridge (the server's own MQTT client) and the embedded broker, when the twin runs one.

The broker starts on the stored configuration when there is one (its bind, TLS, and the backend's
authentication on every connection), else on the settings' bind. A configuration change restarts
it on the new bind; the bridge follows (its next connection goes to the new address, over TLS when
the broker listens with TLS, with the server's system login once authentication is on). The
certificate material is written for the broker to a private directory of this process.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from api.realtime.broker import BRIDGE_CLIENT_ID, EmbeddedBroker
from api.realtime.mqtt import MqttBridge
from hardware.ports.mqtt import BrokerAuth, BrokerConfig, TlsPems

WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


class BridgeLink:
    def __init__(self, bridge: MqttBridge, host: str, port: int, external_url: str | None = None) -> None:
        self.bridge = bridge
        self.host, self.port = host, port
        self.external = urlsplit(external_url) if external_url else None
        self._broker: EmbeddedBroker | None = None
        self.current: Callable[[], EmbeddedBroker | None] = lambda: self._broker
        """The broker now running (whoever replaces it says so here)."""
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    # Starting ------------------------------------------------------------------------------------
    async def start_broker(
        self, stored: BrokerConfig | None, tls: TlsPems | None, auth: BrokerAuth
    ) -> EmbeddedBroker:
        host, port = (stored.listen, stored.port) if stored else (self.host, self.port)
        files = self._files(tls) if stored and stored.tls_enabled and tls else None
        self._broker = broker = EmbeddedBroker(host, port, auth=auth, tls=files)
        await broker.start()
        self._point_bridge(broker)
        return broker

    def _point_bridge(self, broker: EmbeddedBroker) -> None:
        host = WILDCARDS.get(broker.host, broker.host)
        host = f"[{host}]" if ":" in host else host
        self.bridge.url = f"{'mqtts' if broker.tls else 'mqtt'}://{host}:{broker.port}"

    def _files(self, tls: TlsPems) -> tuple[str, str]:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="twin-mqtt-tls-")
        cert, key = Path(self._dir.name) / "mqtt-server.crt", Path(self._dir.name) / "mqtt-server.key"
        cert.write_text(tls.cert)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(tls.key)
        return str(cert), str(key)

    # MqttLink ------------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.bridge.connected

    def address(self) -> tuple[str, int]:
        if self.external is not None:
            return self.external.hostname or "127.0.0.1", self.external.port or 1883
        broker = self.current()
        return (broker.host, broker.port) if broker is not None else (self.host, self.port)

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
        return dict(self.bridge.extra)

    async def subscribe(self, topic: str, qos: int) -> None:
        await self.bridge.subscribe(topic, qos)

    async def unsubscribe(self, topic: str) -> None:
        await self.bridge.unsubscribe(topic)

    async def apply(self, config: BrokerConfig, tls: TlsPems | None) -> bool:
        broker = self.current()
        if broker is None:
            return False
        try:
            await broker.rebind(config.listen, config.port, self._files(tls) if tls else None)
        except OSError:
            return False
        finally:
            self._point_bridge(broker)
        return True

    def use_login(self, login: tuple[str, str] | None) -> None:
        self.bridge.login = login
