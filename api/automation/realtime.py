"""World events as the automation backend's realtime envelopes, shared by WS and SSE.

Envelope (reference §9): ``{"id", "type", "timestamp", "source", "data"}``. An event is encoded
once however many connections carry it: the encoder caches the envelopes of recent events by the
bus sequence number, and derives each envelope's id from that number, so the same change has the
same id on every channel (and a re-encoded event gets its old id back).

World event kinds map to the vendor's type names by spelling (``rule.triggered`` →
``RuleTriggered``); kinds the server has no type for (cameras, users, the clock) are not carried.
One world telemetry sample of a device is one ``DeviceMetric`` envelope per metric.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import DomainError, Forbidden, Unauthenticated
from hardware.ports.events import Event, EventKind
from hardware.ports.types import Principal

API_KEY_PREFIX = "nmk_"
SUBSCRIPTION_QUEUE = 16_384
"""Bus events a connection may fall behind by before the oldest are dropped (and counted)."""

TYPE_NAMES = frozenset(
    {
        "DeviceOnline", "DeviceOffline", "DeviceTransportOnline", "DeviceTransportOffline",
        "DeviceMetric", "DeviceCommandResult", "DeviceDiscovered",
        "RuleEvaluated", "RuleTriggered", "RuleExecuted",
        "AlertCreated", "AlertAcknowledged", "MessageCreated", "MessageAcknowledged", "MessageResolved",
        "ImMessageReceived",
        "AgentExecutionStarted", "AgentThinking", "AgentDecision", "AgentProgress",
        "AgentExecutionCompleted", "AgentMemoryUpdated",
        "PeriodicReviewTriggered", "LlmDecisionProposed", "LlmDecisionExecuted",
        "UserMessage", "LlmResponse", "ToolExecutionStart", "ToolExecutionSuccess", "ToolExecutionFailure",
        "ExtensionOutput", "ExtensionLifecycle", "ExtensionCommandStarted", "ExtensionCommandCompleted",
        "ExtensionCommandFailed",
        "DashboardUpdated", "Custom", "AgentStreamChunk", "AgentStreamEnd",
    }
)  # fmt: skip

_AGENT = frozenset(
    {"AgentExecutionStarted", "AgentThinking", "AgentDecision", "AgentProgress",
     "AgentExecutionCompleted", "AgentMemoryUpdated"}
)  # fmt: skip
_TOOL = frozenset({"ToolExecutionStart", "ToolExecutionSuccess", "ToolExecutionFailure"})
CATEGORIES: dict[str, frozenset[str]] = {
    "device": frozenset({"DeviceOnline", "DeviceOffline", "DeviceMetric", "DeviceCommandResult"}),
    "rule": frozenset({"RuleEvaluated", "RuleTriggered", "RuleExecuted"}),
    "workflow": frozenset(),
    "agent": _AGENT,
    "llm": _AGENT
    | _TOOL
    | {"PeriodicReviewTriggered", "LlmDecisionProposed", "LlmDecisionExecuted", "UserMessage", "LlmResponse"},
    "alert": frozenset({"AlertCreated", "AlertAcknowledged"}),
    "extension": frozenset(
        {
            "ExtensionOutput",
            "ExtensionLifecycle",
            "ExtensionCommandStarted",
            "ExtensionCommandCompleted",
            "ExtensionCommandFailed",
        }
    ),
    "tool": _TOOL,
}
"""``?category=``: anything else (``all``, unknown values, none) means every type."""

IMMEDIATE = frozenset({"AgentExecutionCompleted", "AlertCreated"})
"""Types the WebSocket sends at once as bare envelopes instead of in a batch."""

_SPELLED = {EventKind.DEVICE_TELEMETRY: "DeviceMetric"}


def type_name(kind: EventKind) -> str | None:
    """The vendor's type name of a world event kind, or ``None`` when the server has no such type."""
    name = _SPELLED.get(kind) or "".join(p.capitalize() for p in re.split(r"[._]", kind.value) if p)
    return name if name in TYPE_NAMES else None


@dataclass(frozen=True, slots=True)
class EventFilter:
    """``?category=`` and repeated ``?event_type=``, as both channels read them."""

    category: str | None = None
    event_types: frozenset[str] = frozenset()

    @classmethod
    def of(cls, category: str | None, event_types: Iterable[str]) -> EventFilter:
        return cls(category, frozenset(event_types))

    def accepts(self, name: str) -> bool:
        allowed = CATEGORIES.get(self.category or "all")
        if allowed is not None and name not in allowed:
            return False
        return not self.event_types or name in self.event_types

    def kinds(self) -> frozenset[EventKind]:
        """The world event kinds worth subscribing to for this filter."""
        return frozenset(k for k in EventKind if (n := type_name(k)) is not None and self.accepts(n))

    def accepted(self) -> frozenset[str] | None:
        """The type names that pass, or ``None`` when every type does (no per-envelope check needed)."""
        if self.category not in CATEGORIES and not self.event_types:
            return None
        return frozenset(n for n in TYPE_NAMES if self.accepts(n))


@dataclass(frozen=True, slots=True)
class Envelope:
    type: str
    json: str
    """The envelope as compact JSON text."""
    sse: bytes
    """The same as one Server-Sent Events message: the type as the event name, the envelope as data."""

    @classmethod
    def of(cls, name: str, text: str) -> Envelope:
        return cls(name, text, b"event: " + name.encode() + b"\ndata: " + text.encode() + b"\n\n")


def _dumps(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY, default=str).decode()


def envelope_id(seq: int, index: int) -> str:
    """A UUID (version 4 layout) derived from the bus sequence number and the envelope's index."""
    h = hashlib.blake2b(f"{seq}.{index}".encode(), digest_size=16, person=b"twin-events").hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def _metric_value(value: Any) -> Any:
    # ``value`` is untagged; a JSON object value is sent as a string (reference §9).
    return _dumps(value) if isinstance(value, dict) else value


CACHE_EVENTS = 8192
CACHE_SECONDS = 30.0
"""The encoder keeps an event's envelopes for the other connections that carry it for at most
this long (wall time), and at most :data:`CACHE_EVENTS` events: enough for a tick of a large
fleet to reach every connection, while a quiet stream of events does not fill the cache (a few
KB an event) over hours. A connection that falls further behind encodes again (same ids)."""


class EventEncoder:
    """Encodes each bus event once; recent events' envelopes are kept for the other connections
    that carry the same event (the last ``cache`` events encoded within ``max_age`` seconds)."""

    def __init__(
        self,
        epoch: Callable[[], float],
        cache: int = CACHE_EVENTS,
        max_age: float = CACHE_SECONDS,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._epoch = epoch
        self._size = cache
        self._max_age = max_age
        self._now = now
        self._cache: dict[int, tuple[Envelope, ...]] = {}
        self._born: deque[tuple[float, int]] = deque()
        """(when encoded, seq) of every cached event, in the cache's order."""
        self.encoded = 0

    def __len__(self) -> int:
        """Events cached now."""
        return len(self._cache)

    def many(self, items: list[tuple[int, Event]]) -> list[Envelope]:
        """The envelopes of drained bus items, in order (cache hits cost a dict lookup each)."""
        get, encode = self._cache.get, self.envelopes
        return [env for seq, event in items for env in (get(seq) or encode(seq, event))]

    def envelopes(self, seq: int, event: Event) -> tuple[Envelope, ...]:
        found = self._cache.get(seq)
        if found is not None:
            return found
        found = self._encode(seq, event)
        self.encoded += 1
        cache, born, now = self._cache, self._born, self._now()
        cache[seq] = found
        born.append((now, seq))
        while len(born) > self._size or born[0][0] < now - self._max_age:
            del cache[born.popleft()[1]]
        return found

    def _stamp(self, event: Event) -> int:
        ts = event.data.get("timestamp")
        if isinstance(ts, int | float) and not isinstance(ts, bool):
            return int(ts)
        return int(self._epoch() + event.at)

    def _encode(self, seq: int, event: Event) -> tuple[Envelope, ...]:
        name = type_name(event.kind)
        if name is None:
            return ()
        ts = self._stamp(event)
        data = event.data
        if event.kind is EventKind.DEVICE_TELEMETRY:
            source = f"adapter:mqtt:{event.source}"
            return tuple(
                self._envelope(
                    seq,
                    i,
                    name,
                    ts,
                    source,
                    {
                        "device_id": event.source,
                        "metric": metric,
                        "value": _metric_value(value),
                        "timestamp": ts,
                        "quality": None,
                    },
                )
                for i, (metric, value) in enumerate(data["metrics"].items())
            )
        if event.kind is EventKind.DEVICE_METRIC:
            body = {
                "device_id": event.source,
                "metric": data.get("metric"),
                "value": _metric_value(data.get("value")),
                "timestamp": ts,
                "quality": data.get("quality"),
            }
            if data.get("is_virtual"):
                body["is_virtual"] = True
            return (self._envelope(seq, 0, name, ts, f"adapter:{event.source}", body),)
        return (self._envelope(seq, 0, name, ts, self._source(event), self._body(name, event, ts)),)

    @staticmethod
    def _source(event: Event) -> str:
        if event.kind.value.startswith("device."):
            return f"adapter:{event.source}"
        return event.source

    @staticmethod
    def _body(name: str, event: Event, ts: int) -> dict[str, Any]:
        data = event.data
        if name == "DeviceOnline":
            return {"device_id": event.source, "device_type": data.get("device_type"), "timestamp": ts}
        if name == "DeviceOffline":
            return {"device_id": event.source, "reason": data.get("reason"), "timestamp": ts}
        if name == "Custom":
            return {"custom_type": data.get("custom_type"), "data": data.get("data")}
        if name == "DeviceCommandResult":
            body: dict[str, Any] = {
                "type": name,
                "device_id": event.source,
                "command": data.get("command"),
                "success": data.get("status") in ("success", "sent"),
                "timestamp": ts,
            }
            if data.get("result") is not None:
                body["result"] = data["result"]
            return body
        # Every other type: the full event, its own ``type`` field included (reference §9).
        body = {"type": name}
        if name.startswith("Device"):
            body["device_id"] = event.source
        body.update({k: v for k, v in data.items() if k != "downlink_topic"})
        body["timestamp"] = ts
        return body

    @staticmethod
    def _envelope(seq: int, index: int, name: str, ts: int, source: str, data: dict[str, Any]) -> Envelope:
        doc = {"id": envelope_id(seq, index), "type": name, "timestamp": ts, "source": source, "data": data}
        return Envelope.of(name, _dumps(doc))


def encoder_of(state: Any, backend: AutomationBackend) -> EventEncoder:
    """The app's one encoder (made on first use)."""
    encoder = getattr(state, "event_encoder", None)
    if encoder is None:
        encoder = state.event_encoder = EventEncoder(lambda: backend.clock.state().epoch)
    return encoder


def authenticate(backend: AutomationBackend, token: str | None, api_key: str | None) -> Principal:
    """A realtime client's credentials: a session token (an ``nmk_`` token is an API key), or an API
    key, which needs read access to the ``events`` area. Raises ``Unauthenticated``/``Forbidden``."""
    if token and not token.startswith(API_KEY_PREFIX):
        return Principal("jwt", user=backend.users.authenticate(token))
    key = api_key or token
    if not key:
        raise Unauthenticated("Authentication required")
    found = backend.api_keys.authenticate(key)
    if not found.allows("events", False):
        raise Forbidden("API key lacks permission 'events:read'")
    return Principal("api_key", key=found)


def try_authenticate(backend: AutomationBackend, token: str | None, api_key: str | None) -> Principal | None:
    try:
        return authenticate(backend, token, api_key)
    except DomainError:
        return None
