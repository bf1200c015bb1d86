"""The automation backend's MQTT administration: the broker its devices talk to (the embedded one, or an
external one given at start), its own client's subscriptions, and the external brokers it connects to.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock. The live side
(the server's MQTT client and the embedded broker it may run) is handed to the backend by whoever
starts the servers, as a :class:`MqttLink`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

SYSTEM_USER = "__neomind_internal__"
"""The server's own broker login once authentication is on; names starting ``__neomind`` are reserved."""
MASK = "*****"
"""What a stored secret (a password, a client key) reads as; an update that sends it back keeps it."""


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """The embedded broker's configuration, as the server stores it."""

    listen: str
    port: int
    max_connections: int = 1000
    max_payload_size: int = 268_435_456
    dynamic_filters: bool = True
    auth_enabled: bool = False
    tls_enabled: bool = False
    tls_cert_path: str | None = None
    tls_key_path: str | None = None
    tls_ca_path: str | None = None


@dataclass(frozen=True, slots=True)
class TlsPems:
    """The embedded broker's certificate material (PEM text)."""

    cert: str
    key: str
    ca: str | None = None


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert_path: str
    key_path: str
    ca_path: str | None


@dataclass(frozen=True, slots=True)
class ConfigApplied:
    config: BrokerConfig
    applied: bool
    """False when the change needed the broker to restart and the restart failed (the change is kept)."""


@dataclass(frozen=True, slots=True)
class MqttSubscription:
    topic: str
    qos: int
    device_id: str | None = None


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    success: bool
    message: str


@dataclass(frozen=True, slots=True)
class ExternalBroker:
    id: str
    name: str
    broker: str
    """Host name or address."""
    port: int
    tls: bool
    username: str | None
    has_password: bool
    ca_cert: str | None
    client_cert: str | None
    has_client_key: bool
    client_id: str | None
    enabled: bool
    connected: bool
    last_error: str | None
    updated_at: int
    subscribe_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    """A create or update request; ``None`` keeps (update) or defaults (create)."""

    name: str
    broker: str
    port: int = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = None
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    client_id: str | None = None
    enabled: bool = True
    subscribe_topics: tuple[str, ...] | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class SecurityWarning:
    level: str
    """``Low``, ``Medium``, ``High`` or ``Critical``."""
    message: str
    recommendation: str


@dataclass(frozen=True, slots=True)
class BrokerSaved:
    broker: ExternalBroker
    connected: bool | None
    """The connection attempt's outcome; ``None`` when the broker is disabled (no attempt)."""
    warnings: tuple[SecurityWarning, ...] = ()


@dataclass(frozen=True, slots=True)
class BrokerTest:
    success: bool
    message: str
    broker: ExternalBroker
    """As stored after the test (as before it when no attempt was made)."""
    attempted: bool = True
    """False when the settings were refused before any connection (empty host, port 0)."""


@dataclass(frozen=True, slots=True)
class MqttStatus:
    connected: bool
    listen_address: str
    listen_port: int
    tls_enabled: bool
    subscriptions_count: int
    devices_count: int
    clients_count: int
    external_brokers: tuple[ExternalBroker, ...]


class MqttLink(Protocol):
    """The server's own MQTT client and the embedded broker it runs (if any)."""

    @property
    def connected(self) -> bool: ...

    def address(self) -> tuple[str, int]:
        """Host and port of the broker in use: the embedded broker's bind, or the external one's."""
        ...

    def embedded(self) -> bool:
        """Whether the broker is the server's own (an external one cannot be reconfigured)."""
        ...

    def clients(self) -> int | None:
        """Clients connected to the embedded broker other than the server's own; ``None`` if unknown."""
        ...

    def topics(self) -> dict[str, int]:
        """The extra topic filters the client holds (beyond the device topics), with their QoS."""
        ...

    async def subscribe(self, topic: str, qos: int) -> None: ...

    async def unsubscribe(self, topic: str) -> None: ...

    async def apply(self, config: BrokerConfig, tls: TlsPems | None) -> bool:
        """Restart the embedded broker on the configuration's bind (TLS when ``tls`` is given);
        False when it could not (no embedded broker, the port is taken...)."""
        ...

    def use_login(self, login: tuple[str, str] | None) -> None:
        """The credentials the client presents from its next connection on."""
        ...


class BrokerAuth(Protocol):
    """What the embedded broker asks on every connection."""

    def required(self) -> bool: ...

    def check(self, username: str | None, password: str | None) -> bool: ...


@runtime_checkable
class MqttCredentials(Protocol):
    """The user credentials the embedded broker accepts once authentication is on."""

    def add_credential(self, username: str, password: str) -> None: ...

    def delete_credential(self, username: str) -> None: ...


@runtime_checkable
class MqttAdmin(Protocol):
    def status(self) -> MqttStatus: ...

    def subscriptions(self) -> list[MqttSubscription]: ...

    async def subscribe(self, topic: str, qos: int) -> SubscribeResult:
        """``InvalidInput`` (resource ``validation``) for an empty or too long topic or a QoS past 2."""
        ...

    async def unsubscribe(self, topic: str) -> SubscribeResult: ...

    async def subscribe_device(self, device_id: str) -> None:
        """``NotFound`` for an unknown device."""
        ...

    def unsubscribe_device(self, device_id: str) -> None: ...

    def broker_config(self) -> tuple[BrokerConfig, list[str]]:
        """The embedded broker's configuration and the usernames of the user credentials."""
        ...

    async def update_broker_config(
        self,
        listen: str | None = None,
        port: int | None = None,
        auth_enabled: bool | None = None,
        tls_enabled: bool | None = None,
    ) -> ConfigApplied: ...

    def upload_tls(self, cert_pem: str, key_pem: str, ca_pem: str | None) -> TlsFiles: ...

    def generate_tls(self) -> TlsFiles: ...

    def ca_cert(self) -> str:
        """The CA certificate (PEM); ``NotFound`` when none is configured."""
        ...

    def inbound(self, topic: str, payload: bytes) -> bool:
        """A message the server's own client received on a topic outside the device topics (one of
        its extra subscriptions): handled as the server handles it. True when it was taken in."""
        ...


@runtime_checkable
class ExternalBrokers(Protocol):
    """Unknown ids raise ``NotFound`` (resource ``broker``)."""

    def list_brokers(self) -> list[ExternalBroker]: ...

    def get_broker(self, broker_id: str) -> ExternalBroker: ...

    async def create_broker(self, spec: BrokerSpec) -> BrokerSaved: ...

    async def update_broker(self, broker_id: str, spec: BrokerSpec) -> BrokerSaved: ...

    async def delete_broker(self, broker_id: str) -> None: ...

    async def test_broker(self, broker_id: str) -> BrokerTest:
        """A real MQTT CONNECT/CONNACK with the broker's settings; the outcome is stored."""
        ...
