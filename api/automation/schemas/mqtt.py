"""Wire shapes of the MQTT administration and the external brokers (both releases): request bodies as
serde reads them (strict types, unknown fields ignored, ``u8``/``u16`` ranges), responses as the
handlers' DTOs serialise them (``None`` fields the DTO skips are left out)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.mqtt import (
    MASK,
    BrokerConfig,
    BrokerSaved,
    BrokerSpec,
    BrokerTest,
    ExternalBroker,
    MqttStatus,
    MqttSubscription,
    SubscribeResult,
    TlsFiles,
)

U8 = Annotated[int, Field(ge=0, le=255)]
U16 = Annotated[int, Field(ge=0, le=65535)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class SubscribeRequest(_Body):
    topic: str
    qos: U8 = 1


class UnsubscribeRequest(_Body):
    topic: str


class BrokerRequest(_Body):
    id: str | None = None
    name: str
    broker: str
    port: U16 = 1883
    tls: bool = False
    username: str | None = None
    password: str | None = None
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    client_id: str | None = None
    enabled: bool = True
    subscribe_topics: list[str] | None = None

    def spec(self) -> BrokerSpec:
        fields = self.model_dump(exclude={"subscribe_topics"})
        topics = tuple(self.subscribe_topics) if self.subscribe_topics else None
        return BrokerSpec(**fields, subscribe_topics=topics)


class BrokerConfigRequest(_Body):
    listen: str | None = None
    port: U16 | None = None
    auth_enabled: bool | None = None
    tls_enabled: bool | None = None


class CredentialRequest(_Body):
    username: str
    password: str


class TlsRequest(_Body):
    cert_pem: str
    key_pem: str
    ca_pem: str | None = None


def _skip_none(body: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        if body.get(key) is None:
            body.pop(key, None)
    return body


def broker(b: ExternalBroker) -> dict[str, Any]:
    body = {
        "id": b.id,
        "name": b.name,
        "broker": b.broker,
        "port": b.port,
        "tls": b.tls,
        "username": b.username,
        "password": MASK if b.has_password else None,
        "ca_cert": b.ca_cert,
        "client_cert": b.client_cert,
        "client_key": MASK if b.has_client_key else None,
        "client_id": b.client_id,
        "enabled": b.enabled,
        "connected": b.connected,
        "last_error": b.last_error,
        "updated_at": b.updated_at,
        "subscribe_topics": list(b.subscribe_topics),
    }
    return _skip_none(body, "password", "ca_cert", "client_cert", "client_key", "client_id", "last_error")


def brokers(items: list[ExternalBroker]) -> dict[str, Any]:
    return {"brokers": [broker(b) for b in items], "count": len(items)}


CREATED = ("External broker created successfully", "External broker created and MQTT connection established "
           "successfully", "External broker created but MQTT connection failed")  # fmt: skip
UPDATED = ("External broker updated successfully", "External broker updated and MQTT adapter restarted "
           "successfully", "External broker updated but MQTT restart failed")  # fmt: skip


def saved(s: BrokerSaved, messages: tuple[str, str, str]) -> dict[str, Any]:
    """Create and update: an enabled broker's answer tells how its connection went; a disabled
    one's (on create) lists the security warnings, if any."""
    if s.connected is not None:
        return {"broker": broker(s.broker), "message": messages[1] if s.connected else messages[2]}
    body: dict[str, Any] = {"broker": broker(s.broker), "message": messages[0]}
    if s.warnings and messages is CREATED:
        body["security_warnings"] = [dataclasses.asdict(w) for w in s.warnings]
    return body


def tested(t: BrokerTest) -> dict[str, Any]:
    url = f"{t.broker.broker}:{t.broker.port}"
    if not t.attempted:
        return {"success": False, "message": t.message, "broker_url": url}
    return {
        "success": t.success,
        "message": t.message,
        "broker_url": url,
        "host": t.broker.broker,
        "port": t.broker.port,
        "tls": t.broker.tls,
        "validation_only": False,
        "broker": broker(t.broker),
    }


def status(s: MqttStatus, server_ip: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "connected": s.connected,
        "listen_address": s.listen_address,
        "subscriptions_count": s.subscriptions_count,
        "devices_count": s.devices_count,
        "clients_count": s.clients_count,
        "server_ip": server_ip,
        "listen_port": s.listen_port,
        "tls_enabled": s.tls_enabled,
    }
    if s.external_brokers:
        body["external_brokers"] = [
            _skip_none(
                {
                    "id": b.id,
                    "name": b.name,
                    "broker": b.broker,
                    "port": b.port,
                    "tls": b.tls,
                    "connected": b.connected,
                    "enabled": b.enabled,
                    "last_error": b.last_error,
                },
                "last_error",
            )
            for b in s.external_brokers
        ]
    body["last_error"] = None if s.connected else "Disconnected"
    return {"status": body}


def subscriptions(subs: list[MqttSubscription]) -> dict[str, Any]:
    items = [{"topic": s.topic, "qos": s.qos, "device_id": s.device_id} for s in subs]
    return {"subscriptions": items, "count": len(items)}


def subscribed(r: SubscribeResult, topic: str, qos: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"success": r.success, "message": r.message, "topic": topic}
    if r.success and qos is not None:
        body["qos"] = qos
    return body


def config(c: BrokerConfig) -> dict[str, Any]:
    """The stored configuration as the update answers it (every field, ``null`` included)."""
    return dataclasses.asdict(c)


def config_view(c: BrokerConfig, usernames: list[str]) -> dict[str, Any]:
    body = _skip_none(config(c), "tls_cert_path", "tls_key_path", "tls_ca_path")
    body["credentials"] = [{"username": u, "password": MASK} for u in usernames]
    return {"config": body}


def tls_files(f: TlsFiles, message: str, *, generated: bool) -> dict[str, Any]:
    if generated:
        return {"message": message, "ca_path": f.ca_path, "cert_path": f.cert_path, "key_path": f.key_path}
    return {"message": message, "cert_path": f.cert_path, "key_path": f.key_path, "ca_path": f.ca_path}
