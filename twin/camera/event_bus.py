"""The camera's own event bus (the device's ``event-bus`` service), distinct from the world's bus.

Topics are ``/``-separated; empty segments are dropped. Patterns: a bare ``*`` or ``**`` matches
everything; inside a longer pattern ``*`` is one segment and ``**`` zero or more.

- The API publishes only ``app/<app_id>/<event>`` topics with a JSON object payload; the device's
  own services (AI runtime, app manager) publish their topics through :meth:`emit`.
- The platform relay holds one upstream ``*`` subscription (id ``websocket-stream``) and broadcasts
  every event to each stream client (256-message buffer per client, the newest dropped when full).
- ``stop()`` takes the service down: publishing fails (``Unavailable``) and stream clients are cut
  off; ``start()`` brings it back. Killing its process does the same.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, Unavailable
from hardware.ports.gateway_apps import BusEvent, TopicInfo
from twin.feed import Feed

if TYPE_CHECKING:
    from twin.engine import Engine

RELAY_ID = "websocket-stream"
CLIENT_BUFFER = 256
APP_TOPIC = re.compile(r"^app/[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def segments(topic: str) -> list[str]:
    return [s for s in topic.split("/") if s]


def topic_matches(pattern: str, topic: str) -> bool:
    pat = segments(pattern)
    if pat in (["*"], ["**"]):
        return True
    return _match(pat, segments(topic))


def _match(pat: list[str], parts: list[str]) -> bool:
    if not pat:
        return not parts
    head, rest = pat[0], pat[1:]
    if head == "**":
        return any(_match(rest, parts[i:]) for i in range(len(parts) + 1))
    if not parts:
        return False
    return (head == "*" or head == parts[0]) and _match(rest, parts[1:])


def covered(topic: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """True if a declared permission pattern covers ``topic`` (itself a topic or a pattern)."""
    return any(p == topic or topic_matches(p, topic) for p in patterns)


class StreamClient(Feed[BusEvent]):
    """One relay client: a bounded buffer (the newest dropped when full); ``next()`` returns None
    once cut off."""

    def __init__(self, bus: DeviceEventBus) -> None:
        super().__init__(CLIENT_BUFFER, drop_oldest=False, on_close=lambda: bus.clients.discard(self))


@dataclass
class _Topic:
    subscribers: set[str]
    total_messages: int = 0
    last_message_ts: int = 0


class DeviceEventBus:
    def __init__(self, world: Engine, camera_id: str) -> None:
        self.world = world
        self.camera_id = camera_id
        self.running = True
        self.clients: set[StreamClient] = set()
        self._topics: dict[str, _Topic] = {"*": _Topic({RELAY_ID})}
        self._seq = 0
        self.history: deque[BusEvent] = deque(maxlen=1000)

    # Service -------------------------------------------------------------------------------
    def stop(self, reason: str = "stopped") -> None:
        """Take the bus down: publishing fails and every stream client is cut off."""
        self.running = False
        for client in list(self.clients):
            client.end()
        self.clients.clear()

    def start(self) -> None:
        self.running = True

    def _require_running(self) -> None:
        if not self.running:
            raise Unavailable(
                "rpc error: code = Unavailable desc = connection error: event-bus is not running",
                resource="event_bus",
            )

    # Subscriptions -------------------------------------------------------------------------
    def subscribe(self, subscriber_id: str, pattern: str) -> None:
        self._require_running()
        self._topics.setdefault(pattern, _Topic(set())).subscribers.add(subscriber_id)

    def unsubscribe(self, subscriber_id: str, pattern: str | None = None) -> None:
        for name, topic in list(self._topics.items()):
            if pattern in (None, name):
                topic.subscribers.discard(subscriber_id)
                if not topic.subscribers and name != "*":
                    del self._topics[name]

    def topics(self) -> tuple[TopicInfo, ...]:
        return tuple(
            TopicInfo(name, len(t.subscribers), t.total_messages, t.last_message_ts)
            for name, t in self._topics.items()
            if t.subscribers
        )

    def stream(self) -> StreamClient:
        self._require_running()
        client = StreamClient(self)
        self.clients.add(client)
        return client

    # Publishing ----------------------------------------------------------------------------
    def publish(self, topic: str, payload: object) -> str:
        """The API's publish: an ``app/<app_id>/<event>`` topic and a JSON object payload."""
        if not isinstance(topic, str) or not topic:
            raise InvalidInput("Topic is required")
        if not isinstance(payload, dict):
            raise InvalidInput("Payload must be a JSON object")
        if not APP_TOPIC.match(topic):
            raise InvalidInput(f"invalid topic {topic!r}: expected app/<app_id>/<event>")
        return self.emit(topic, payload, source="")

    def emit(self, topic: str, payload: object, source: str) -> str:
        """Any publisher on the device (services, apps): no topic-format rule."""
        self._require_running()
        now_ns = int(self.world.now() * 1e9)
        self._seq += 1
        event_id = f"evt-{now_ns // 1_000_000}-{self._seq}"
        event = BusEvent(topic, json.dumps(payload), "json", now_ns, source, event_id)
        self.history.append(event)
        for name, t in self._topics.items():
            if t.subscribers and topic_matches(name, topic) and name != "*":
                t.total_messages += 1
                t.last_message_ts = now_ns
        for client in list(self.clients):
            client.offer(event)
        return event_id
