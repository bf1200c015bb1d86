"""External MQTT brokers the server connects to: durable settings (the ``external_brokers`` collection,
stored as the real server stores them) and a live session per enabled broker
(:class:`~twin.automation.broker_links.BrokerSession`), whose state is the broker's ``connected`` and
``last_error``. Messages from a broker are taken in like the server's own broker's
(:mod:`twin.automation.mqtt_inbound`).

Saving an enabled broker (re)connects it for real and answers with the outcome; a disabled one is
disconnected. The sessions are (re)opened when the server starts (:meth:`reconnect`) and closed when
the world stops or is rebuilt (:meth:`aclose`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import uuid
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.mqtt import MASK, BrokerSaved, BrokerSpec, BrokerTest, ExternalBroker, SecurityWarning
from twin.automation.broker_links import BrokerSession, test_connection

if TYPE_CHECKING:
    from twin.automation.mqtt_inbound import Inbound
    from twin.engine import Engine

log = logging.getLogger(__name__)

DEFAULT_TOPICS = ("sensor/#", "device/#", "tele/#")


def _view(doc: dict[str, Any]) -> ExternalBroker:
    return ExternalBroker(
        id=doc["id"],
        name=doc["name"],
        broker=doc["broker"],
        port=doc["port"],
        tls=doc["tls"],
        username=doc.get("username"),
        has_password=doc.get("password") is not None,
        ca_cert=doc.get("ca_cert"),
        client_cert=doc.get("client_cert"),
        has_client_key=doc.get("client_key") is not None,
        client_id=doc.get("client_id"),
        enabled=doc["enabled"],
        connected=doc["connected"],
        last_error=doc.get("last_error"),
        updated_at=doc["updated_at"],
        subscribe_topics=tuple(doc["subscribe_topics"]),
    )


def _public(host: str) -> bool:
    if host in ("localhost", "127.0.0.1", "::1"):
        return False
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        lower = host.lower()
        local = (".local", ".localhost")
        return "." in host and not (lower.endswith(local) or "home." in lower or "lan." in lower)
    private = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "fe80::/10")
    return not any(
        addr in ipaddress.ip_network(net)
        for net in private
        if ipaddress.ip_network(net).version == addr.version
    )


def security_warnings(doc: dict[str, Any]) -> tuple[SecurityWarning, ...]:
    has_auth = doc.get("username") is not None and doc.get("password") is not None
    out = []
    if _public(doc["broker"]) and not doc["tls"]:
        msg = "Connecting to public broker without TLS is insecure"
        out.append(SecurityWarning("High", msg, "Enable TLS for this broker connection"))
    if has_auth and not doc["tls"]:
        msg = "Authentication credentials sent over unencrypted connection"
        out.append(SecurityWarning("Medium", msg, "Enable TLS to protect credentials in transit"))
    if not has_auth:
        msg, advice = (
            "Broker connection has no authentication",
            "Configure username and password for the broker",
        )
        out.append(SecurityWarning("Low", msg, advice))
    return tuple(out)


def _given(value: str | None) -> bool:
    """An update's secret field that replaces the stored one (not empty, not the mask)."""
    return value is not None and value != "" and value != MASK


class ExternalBrokerRegistry:
    def __init__(self, world: Engine, *, inbound: Inbound) -> None:
        self.world = world
        self.env = world.env
        self.inbound = inbound
        self.docs = world.store.collection("external_brokers")
        self.sessions: dict[str, BrokerSession] = {}

    @property
    def stale(self) -> bool:
        """The world was rebuilt since: nothing of this registry may write any more."""
        return self.world.env is not self.env

    def _doc(self, broker_id: str) -> dict[str, Any]:
        doc = self.docs.get(broker_id)
        if doc is None:
            raise NotFound(f"Broker not found: {broker_id} not found", resource="broker")
        return doc

    def list_brokers(self) -> list[ExternalBroker]:
        return [_view(d) for d in sorted(self.docs.values(), key=lambda d: d["id"])]

    def get_broker(self, broker_id: str) -> ExternalBroker:
        return _view(self._doc(broker_id))

    async def create_broker(self, spec: BrokerSpec) -> BrokerSaved:
        broker_id = (
            spec.id
            or "broker_"
            + str(uuid.UUID(bytes=self.world.streams.get("automation.brokers").bytes(16), version=4))[:8]
        )
        if broker_id in self.docs:
            raise InvalidInput(f"Broker already exists: {broker_id}", field="id")
        doc = {
            "id": broker_id,
            "name": spec.name,
            "broker": spec.broker,
            "port": spec.port,
            "tls": spec.tls,
            "username": spec.username,
            "password": spec.password,
            "ca_cert": spec.ca_cert,
            "client_cert": spec.client_cert,
            "client_key": spec.client_key,
            "client_id": spec.client_id,
            "enabled": spec.enabled,
            "connected": False,
            "last_error": None,
            "updated_at": int(self.world.now()),
            "subscribe_topics": list(spec.subscribe_topics or DEFAULT_TOPICS),
        }
        self.docs.put(broker_id, doc)
        warnings = security_warnings(doc)
        if not doc["enabled"]:
            return BrokerSaved(_view(doc), None, warnings)
        connected = await self._connect(doc)
        return BrokerSaved(self.get_broker(broker_id), connected, warnings)

    async def update_broker(self, broker_id: str, spec: BrokerSpec) -> BrokerSaved:
        doc = self._doc(broker_id)
        doc.update(name=spec.name, broker=spec.broker, port=spec.port, tls=spec.tls, username=spec.username)
        for field in ("password", "ca_cert", "client_cert"):
            if _given(getattr(spec, field)):
                doc[field] = getattr(spec, field)
        if spec.client_key is None:
            doc["client_key"] = None  # the server clears the key when none is sent
        elif _given(spec.client_key):
            doc["client_key"] = spec.client_key
        doc.update(enabled=spec.enabled, client_id=spec.client_id, updated_at=int(self.world.now()))
        if spec.subscribe_topics:
            doc["subscribe_topics"] = list(spec.subscribe_topics)
        self.docs.put(broker_id, doc)
        if not doc["enabled"]:
            await self._disconnect(broker_id)
            doc.update(connected=False, last_error=None)
            self.docs.put(broker_id, doc)
            return BrokerSaved(_view(doc), None)
        connected = await self._connect(doc)
        return BrokerSaved(self.get_broker(broker_id), connected)

    async def delete_broker(self, broker_id: str) -> None:
        await self._disconnect(broker_id)
        if not self.docs.delete(broker_id):
            raise NotFound(f"Broker not found: {broker_id} not found", resource="broker")

    async def test_broker(self, broker_id: str) -> BrokerTest:
        doc = self._doc(broker_id)
        if not doc["broker"]:
            return BrokerTest(False, "Invalid broker configuration: empty host", _view(doc), attempted=False)
        if doc["port"] == 0:
            return BrokerTest(
                False, "Invalid broker configuration: port cannot be 0", _view(doc), attempted=False
            )
        success, message = await test_connection(doc)
        after = self.docs.get(broker_id)
        if after is not None and not self.stale:
            after.update(connected=success, last_error=None if success else message)
            after["updated_at"] = int(self.world.now())
            self.docs.put(broker_id, after)
            doc = after
        return BrokerTest(success, message, _view(doc))

    # Sessions ------------------------------------------------------------------------------------
    async def _connect(self, doc: dict[str, Any]) -> bool:
        await self._disconnect(doc["id"])
        session = BrokerSession(doc, self._message, lambda up, error: self._state(doc["id"], up, error))
        self.sessions[doc["id"]] = session
        return await session.start() is None

    def _message(self, topic: str, payload: bytes, patterns: tuple[str, ...]) -> None:
        if not self.stale:
            self.inbound.handle(topic, payload, patterns)

    def _state(self, broker_id: str, connected: bool, error: str | None) -> None:
        doc = self.docs.get(broker_id) if not self.stale else None
        if doc is None or (doc["connected"], doc.get("last_error")) == (connected, error):
            return
        doc.update(connected=connected, last_error=error)
        self.docs.put(broker_id, doc)

    async def _disconnect(self, broker_id: str) -> None:
        session = self.sessions.pop(broker_id, None)
        if session is not None:
            await session.aclose()

    async def reconnect(self) -> None:
        """Open a session for every enabled broker that has none (the server starting)."""
        wanted = [d for d in self.docs.values() if d["enabled"] and d["id"] not in self.sessions]
        if wanted:
            await asyncio.gather(*(self._connect(d) for d in wanted))

    async def aclose(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            await session.aclose()
