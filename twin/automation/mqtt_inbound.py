"""A message one of the server's MQTT clients received, taken in as the real server's MQTT adapter does
(``handle_mqtt_notification``): the internal client's extra subscriptions and the external brokers'
sessions both come here.

- ``device/{type}/{id}/uplink``: the device's telemetry (an unknown device opens a draft);
- a topic that is a registered device's ``telemetry_topic``: that device's telemetry;
- a status or last-will topic (a ``status`` level, or ending ``online``, ``offline``, ``connected``,
  ``disconnected``, ``lwt``, ``will``): ignored;
- any other topic: auto-onboarding, a draft under the id read off the topic (the second level, or
  the ``+`` at the second level of a matching subscription), else ``mqtt_<hash of the topic>``.

Payloads are JSON objects (an object under ``data`` is the sample); anything else is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import DomainError

if TYPE_CHECKING:
    from twin.automation.ingest import Ingest
    from twin.automation.registry import DeviceRegistry

MAX_DEVICE_ID = 128
MAX_SAMPLE_BYTES = 2 * 1024 * 1024
_STATUS_ENDINGS = frozenset({"online", "offline", "connected", "disconnected", "lwt", "will"})


def topic_covers(covering: str, covered: str) -> bool:
    """Whether every topic the filter ``covered`` matches is matched by ``covering`` too (a ``$``
    topic is never covered by a root wildcard)."""
    if covering == covered:
        return True
    first = covering.split("/", 1)[0]
    if covered.startswith("$") and first in ("#", "+"):
        return False
    outer, inner = covering.split("/"), covered.split("/")
    for i, part in enumerate(outer):
        if part == "#":
            return i == len(outer) - 1
        if i >= len(inner) or inner[i] == "#":
            return False
        if part == "+":
            continue
        if inner[i] == "+" or inner[i] != part:
            return False
    return len(outer) == len(inner)


def normalized(topics: Iterable[str]) -> list[str]:
    """Filters without the ones another already covers (a broker delivers a message once per
    matching subscription)."""
    out: list[str] = []
    for topic in (t.strip() for t in topics):
        if not topic or any(topic_covers(t, topic) for t in out):
            continue
        out = [t for t in out if not topic_covers(topic, t)]
        out.append(topic)
    return out


def _pattern_id(topic: str, pattern: str) -> str | None:
    p_parts, t_parts = pattern.split("/"), topic.split("/")
    if len(p_parts) != len(t_parts):
        return None
    found = None
    for i, (p, t) in enumerate(zip(p_parts, t_parts, strict=True)):
        if p == "+":
            found = t if i == 1 else found
        elif p != "#" and p != t:
            return None
    return found


def device_id_of(topic: str, patterns: Iterable[str] = ()) -> str | None:
    parts = topic.split("/")
    if len(parts) >= 4 and parts[0] == "device":
        return parts[2]
    for pattern in patterns:
        if (found := _pattern_id(topic, pattern)) is not None:
            return found
    return parts[1] if len(parts) >= 2 else None


def _sanitized(device_id: str | None) -> str | None:
    if device_id is None:
        return None
    cleaned = "".join(c for c in device_id if (c.isascii() and c.isalnum()) or c in "-_:.")
    return cleaned if cleaned and len(cleaned) <= MAX_DEVICE_ID else None


def status_topic(topic: str) -> bool:
    parts = topic.split("/")
    return "status" in parts or parts[-1] in _STATUS_ENDINGS


class Inbound:
    def __init__(self, *, ingest: Ingest, devices: DeviceRegistry) -> None:
        self.ingest = ingest
        self.devices = devices

    def handle(self, topic: str, payload: bytes, patterns: Iterable[str] = ()) -> bool:
        """True when the message was taken in (telemetry recorded or a draft fed)."""
        if topic.startswith("$SYS/") or len(payload) > MAX_SAMPLE_BYTES:
            return False
        parts = topic.split("/")
        if len(parts) >= 4 and parts[0] == "device" and parts[3] == "downlink":
            return False  # commands are the device's business
        if len(parts) >= 4 and parts[0] == "device" and parts[3] == "uplink":
            device_id: str | None = parts[2]
        else:
            device_id = self._device_of_topic(topic)
            if device_id is None:
                if status_topic(topic):
                    return False
                device_id = _sanitized(device_id_of(topic, patterns)) or self._hashed(topic)
        data = _sample(payload)
        if data is None or not device_id:
            return False
        try:
            return self.ingest.uplink(device_id, data, topic) is not None
        except DomainError:
            return False

    def _device_of_topic(self, topic: str) -> str | None:
        for doc in self.devices.docs.values():
            if (doc.get("connection_config") or {}).get("telemetry_topic") == topic:
                return doc["device_id"]
        return None

    @staticmethod
    def _hashed(topic: str) -> str:
        return "mqtt_" + hashlib.blake2b(topic.encode(), digest_size=8).hexdigest()


def _sample(payload: bytes) -> Mapping[str, Any] | None:
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("data"), dict):
        body = body["data"]
    return body if isinstance(body, dict) else None
