"""The MQTT administration port over the world and the live MQTT side: status, the server's own
client's subscriptions, the embedded broker's configuration, credentials and certificates.

The live side (:class:`~hardware.ports.mqtt.MqttLink`: the server's MQTT client and the embedded
broker it runs) is attached by the composition root; until then a detached link reports a client
that is not connected and a broker that cannot be restarted.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.mqtt import (
    SYSTEM_USER,
    BrokerAuth,
    BrokerConfig,
    ConfigApplied,
    MqttLink,
    MqttStatus,
    MqttSubscription,
    SubscribeResult,
    TlsFiles,
    TlsPems,
)
from twin.automation.mqtt_inbound import topic_covers
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.automation.mqtt_admin import BrokerSettings
    from twin.world import World

MAX_TOPIC = 200


class DetachedLink:
    """No MQTT side (yet): what a bare backend reports."""

    def __init__(self, host: str = "0.0.0.0", port: int = 1883) -> None:
        self.host, self.port = host, port
        self._topics: dict[str, int] = {}

    @property
    def connected(self) -> bool:
        return False

    def address(self) -> tuple[str, int]:
        return self.host, self.port

    def embedded(self) -> bool:
        return False

    def clients(self) -> int | None:
        return None

    def topics(self) -> dict[str, int]:
        return dict(self._topics)

    async def subscribe(self, topic: str, qos: int) -> None:
        self._topics[topic] = qos

    async def unsubscribe(self, topic: str) -> None:
        self._topics.pop(topic, None)

    async def apply(self, config: BrokerConfig, tls: TlsPems | None) -> bool:
        return False

    def use_login(self, login: tuple[str, str] | None) -> None:
        return None


def valid_filter(topic: str) -> bool:
    """MQTT's rules for a topic filter: ``#`` only last and alone in its level, ``+`` alone in its level."""
    parts = topic.split("/")
    for i, part in enumerate(parts):
        if "#" in part and (part != "#" or i != len(parts) - 1):
            return False
        if "+" in part and part != "+":
            return False
    return "\x00" not in topic


class TwinMqtt:
    """Implements :class:`hardware.ports.mqtt.MqttAdmin`."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.link: MqttLink = DetachedLink()
        self.device_filters: dict[str, int] = {}
        """The client's own device topic filters (``device/+/+/uplink``...): kept whatever is asked."""
        self.require_login = False
        """Set by the composition root (``--mqtt-require-login``): the embedded broker asks every
        client for a login (the stored credentials, or the server's own), whatever its stored
        configuration says."""

    def attach(self, link: MqttLink, device_filters: dict[str, int]) -> None:
        self.link, self.device_filters = link, dict(device_filters)
        link.use_login(self.login())

    def login(self) -> tuple[str, str] | None:
        """The server's own client's login on the embedded broker, when the broker asks for one."""
        if self.require_login:
            return SYSTEM_USER, self.settings.system_password()
        return self.settings.system_login()

    @property
    def settings(self) -> BrokerSettings:
        return automation_of(self.world).mqtt_broker

    @property
    def auth(self) -> BrokerAuth:
        """What the embedded broker asks on every connection (the current world's settings)."""
        return _Auth(self)

    def startup(self) -> tuple[BrokerConfig | None, TlsPems | None]:
        """What the embedded broker starts with: the stored configuration (``None``: the settings')
        and its certificate material."""
        return self.settings.stored(), self.settings.pems()

    def current(self) -> BrokerConfig:
        config = self.settings.config(self.link.address())
        return dataclasses.replace(config, auth_enabled=True) if self.require_login else config

    # Status and subscriptions --------------------------------------------------------------------
    def status(self) -> MqttStatus:
        config, devices = self.current(), automation_of(self.world).devices.all_docs()
        clients = self.link.clients()
        return MqttStatus(
            connected=self.link.connected,
            listen_address=config.listen,
            listen_port=config.port,
            tls_enabled=config.tls_enabled,
            subscriptions_count=len(self.device_filters) + len(self.link.topics()),
            devices_count=len(devices),
            clients_count=len(devices) if clients is None else clients,
            external_brokers=tuple(automation_of(self.world).brokers.list_brokers()),
        )

    def subscriptions(self) -> list[MqttSubscription]:
        held = {**self.device_filters, **self.link.topics()}
        subs = [MqttSubscription(topic, qos) for topic, qos in held.items()]
        for doc in automation_of(self.world).devices.all_docs():
            cfg = doc.get("connection_config") or {}
            kind, device_id = doc["device_type"], doc["device_id"]
            uplink = cfg.get("telemetry_topic") or f"device/{kind}/{device_id}/uplink"
            downlink = cfg.get("command_topic") or f"device/{kind}/{device_id}/downlink"
            subs += [MqttSubscription(uplink, 1, device_id), MqttSubscription(downlink, 1, device_id)]
        return subs

    async def subscribe(self, topic: str, qos: int) -> SubscribeResult:
        _check_topic(topic)
        if not 0 <= qos <= 2:
            raise InvalidInput("qos must be between 0 and 2", resource="validation", field="qos")
        held = {**self.device_filters, **self.link.topics()}
        if any(topic_covers(existing, topic) for existing in held):
            return SubscribeResult(True, "Subscribed to topic")  # a broker would deliver it twice
        if not valid_filter(topic):
            return SubscribeResult(False, f"Failed to subscribe: invalid topic filter '{topic}'")
        try:
            await self.link.subscribe(topic, qos)
        except Exception as err:
            return SubscribeResult(False, f"Failed to subscribe: {err}")
        return SubscribeResult(True, "Subscribed to topic")

    async def unsubscribe(self, topic: str) -> SubscribeResult:
        _check_topic(topic)
        if topic in self.link.topics():
            try:
                await self.link.unsubscribe(topic)
            except Exception as err:
                return SubscribeResult(False, f"Failed to unsubscribe: {err}")
        return SubscribeResult(True, "Unsubscribed from topic")

    async def subscribe_device(self, device_id: str) -> None:
        doc = automation_of(self.world).devices.find_doc(device_id)
        if doc is None:
            raise NotFound(f"Device not found: {device_id} not found", resource="mqtt_device")
        topic = (doc.get("connection_config") or {}).get("telemetry_topic")
        if topic and valid_filter(topic):
            await self.subscribe(topic, 1)

    def unsubscribe_device(self, device_id: str) -> None:
        if automation_of(self.world).devices.find_doc(device_id) is None:
            raise NotFound(f"Device not found: {device_id} not found", resource="mqtt_device")

    def inbound(self, topic: str, payload: bytes) -> bool:
        return automation_of(self.world).mqtt_inbound.handle(topic, payload, self.link.topics())

    # The embedded broker ------------------------------------------------------------------------
    def broker_config(self) -> tuple[BrokerConfig, list[str]]:
        return self.current(), self.settings.usernames()

    async def update_broker_config(
        self,
        listen: str | None = None,
        port: int | None = None,
        auth_enabled: bool | None = None,
        tls_enabled: bool | None = None,
    ) -> ConfigApplied:
        before = self.settings.config(self.link.address())  # as stored: the switch is not stored
        config = self.settings.update(before, listen, port, auth_enabled, tls_enabled)
        self.link.use_login(self.login())
        shown = dataclasses.replace(config, auth_enabled=True) if self.require_login else config
        bind = (before.listen, before.port, before.tls_enabled)
        if bind == (config.listen, config.port, config.tls_enabled):
            return ConfigApplied(shown, True)  # authentication is read on every connection
        tls = self.settings.pems() if config.tls_enabled else None
        return ConfigApplied(shown, await self.link.apply(config, tls))

    def upload_tls(self, cert_pem: str, key_pem: str, ca_pem: str | None) -> TlsFiles:
        return self.settings.upload_tls(self.current(), cert_pem, key_pem, ca_pem)

    def generate_tls(self) -> TlsFiles:
        return self.settings.generate_tls(self.current())

    def ca_cert(self) -> str:
        return self.settings.ca_cert(self.current())


def _check_topic(topic: str) -> None:
    trimmed = topic.strip()
    if not trimmed:
        raise InvalidInput("topic is required", resource="validation", field="topic")
    if len(trimmed.encode()) > MAX_TOPIC:
        raise InvalidInput(
            f"topic must be at most {MAX_TOPIC} characters", resource="validation", field="topic"
        )


class _Auth:
    def __init__(self, mqtt: TwinMqtt) -> None:
        self.mqtt = mqtt

    def required(self) -> bool:
        return self.mqtt.require_login or self.mqtt.settings.required()

    def check(self, username: str | None, password: str | None) -> bool:
        return self.mqtt.settings.check(username, password)
