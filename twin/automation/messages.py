"""Messages (alerts, system and business notices) and the notification channels they go out on.

Messages and channels are durable documents. Creating a message emits ``MESSAGE_CREATED`` and
queues one real delivery per enabled channel in the outbox (``twin.automation.delivery``): a
``webhook`` channel gets the message as a JSON POST, ``email`` goes over SMTP to the configured
server, and the chat kinds POST their platform's text-message body to their configured URL.
Every attempt's outcome is kept in the delivery records (the newest :data:`MAX_DELIVERY_RECORDS`);
a delivery is counted on the channel as ``sent`` or, once its retries are spent or it is given up
while the channel's circuit is open, ``failed``. Retries follow :data:`RETRY`.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import Conflict, InvalidInput, NotFound
from hardware.ports.events import EventKind
from hardware.ports.rules import (
    CHANNEL_KINDS,
    MESSAGE_CATEGORIES,
    MESSAGE_STATUSES,
    SEVERITIES,
    Channel,
    ChannelKind,
    DeliveryResult,
    DeliveryStats,
    Message,
    MessagePage,
    MessageStats,
    NewMessage,
)
from twin.automation.channel_kinds import (
    KINDS,
    OPTIONAL,
    REQUIRED,
    body,
    check_config,
    destination,
    test_words,
)
from twin.automation.delivery import Outbox, RetryPolicy
from twin.automation.message_filter import accepts

if TYPE_CHECKING:
    from twin.engine import Engine

MAX_LIMIT = 200
MAX_DELIVERY_RECORDS = 1000
RETRY = RetryPolicy(jitter=0.1)
"""Channels have no retry settings of their own: the default backoff, spread so that the retries of
one message on several channels do not all go out at the same instant."""


class MessageCenter:
    def __init__(self, world: Engine, *, outbox: Outbox) -> None:
        self.world = world
        self.outbox = outbox
        self.messages = world.store.collection("messages")
        self.channels = world.store.collection("channels")
        self.deliveries = world.store.collection("message_deliveries")
        self._record_ids: dict[str, None] | None = None
        """The delivery records' ids, oldest first (read from the store on first use)."""
        outbox.register("channel", self._delivered, self._where)

    def _uuid(self) -> str:
        return str(uuid.UUID(bytes=self.world.streams.get("automation.messages").bytes(16), version=4))

    # Messages --------------------------------------------------------------------------------
    def send_message(self, new: NewMessage, channels: list[str] | None = None) -> Message:
        """``channels``: deliver only to these (by name; a rule's notify action may name them)."""
        if new.category not in MESSAGE_CATEGORIES:
            raise InvalidInput(f"Invalid category '{new.category}'", field="category")
        if new.severity not in SEVERITIES:
            raise InvalidInput(f"Invalid severity '{new.severity}'", field="severity")
        if not new.title:
            raise InvalidInput("title is required", field="title")
        doc: dict[str, Any] = {
            "id": self._uuid(),
            "category": new.category,
            "severity": new.severity,
            "title": new.title,
            "message": new.message,
            "source": new.source or "api",
            "source_type": new.source_type or "manual",
            "timestamp": self.world.now(),
            "status": "active",
            "metadata": dict(new.metadata) if new.metadata is not None else None,
            "tags": list(new.tags),
        }
        self.messages.put(doc["id"], doc)
        self.world.emit(
            EventKind.MESSAGE_CREATED,
            doc["source"],
            message_id=doc["id"],
            title=doc["title"],
            severity=doc["severity"],
            message=doc["message"],
            timestamp=int(doc["timestamp"]),
        )
        for channel in self.channels.values():
            wanted = channels is None or channel["name"] in channels
            if channel["enabled"] and wanted and accepts(channel.get("filter"), doc):
                self._enqueue(channel, doc)
        return _message(doc)

    def _enqueue(self, channel: dict[str, Any], msg: dict[str, Any]) -> None:
        transport, config = destination(channel)
        self.outbox.enqueue(
            "channel", channel["name"], transport, config, body(channel, msg), RETRY, ref=msg["id"]
        )

    def _where(self, job: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """Where a message goes now: the channel's current settings."""
        channel = self.channels.get(job["owner_id"])
        return None if channel is None else destination(channel)

    def _delivered(self, job: dict[str, Any], result: DeliveryResult, final: bool) -> None:
        record = {
            "id": job["id"],
            "channel": job["owner_id"],
            "message_id": job["ref"],
            "status": "success" if result.success else ("failed" if final else "retrying"),
            "attempts": result.attempts,
            "response": result.message if result.success else None,
            "error": None if result.success else result.message,
            "at": result.at,
        }
        self.deliveries.put(job["id"], record)
        ids = self._record_ids
        if ids is None:
            ids = self._record_ids = {d["id"]: None for d in self.deliveries.values()}
        ids[job["id"]] = None
        while len(ids) > MAX_DELIVERY_RECORDS:
            oldest = next(iter(ids))
            del ids[oldest]
            self.deliveries.delete(oldest)
        channel = self.channels.get(job["owner_id"])
        if channel is not None and (result.success or final):
            key = "sent" if result.success else "failed"
            channel[key] = channel.get(key, 0) + 1
            channel["last_result"] = dataclasses.asdict(result)
            self.channels.put(channel["name"], channel)

    def delivery_records(self, message_id: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.deliveries.values() if message_id is None or r["message_id"] == message_id]

    def list_messages(
        self,
        limit: int = 50,
        offset: int = 0,
        severity: str | None = None,
        status: str | None = None,
        category: str | None = None,
    ) -> MessagePage:
        limit = min(max(1, limit), MAX_LIMIT)
        offset = max(0, offset)
        docs = [
            d
            for d in reversed(self.messages.values())
            if (severity is None or d["severity"] == severity)
            and (status is None or d["status"] == status)
            and (category is None or d["category"] == category)
        ]
        page = tuple(_message(d) for d in docs[offset : offset + limit])
        return MessagePage(page, len(docs), limit, offset)

    def doc(self, message_id: str) -> dict[str, Any]:
        doc = self.messages.get(message_id)
        if doc is None:
            raise NotFound(f"Message {message_id} not found", resource="message")
        return doc

    def get_message(self, message_id: str) -> Message:
        return _message(self.doc(message_id))

    def delete_message(self, message_id: str) -> None:
        self.doc(message_id)
        self.messages.delete(message_id)

    def set_message_status(self, message_id: str, status: str) -> Message:
        if status not in MESSAGE_STATUSES:
            raise InvalidInput(f"Invalid status '{status}'", field="status")
        doc = {**self.doc(message_id), "status": status}
        self.messages.put(message_id, doc)
        kind = {"acknowledged": EventKind.MESSAGE_ACKNOWLEDGED, "resolved": EventKind.MESSAGE_RESOLVED}.get(
            status
        )
        if kind is not None:
            self.world.emit(kind, doc["source"], message_id=message_id, timestamp=int(self.world.now()))
        return _message(doc)

    def set_messages_status(self, message_ids: list[str], status: str) -> int:
        changed = 0
        for message_id in dict.fromkeys(message_ids):
            if self.messages.get(message_id) is not None:
                self.set_message_status(message_id, status)
                changed += 1
        return changed

    def delete_messages(self, message_ids: list[str]) -> int:
        return sum(self.messages.delete(m) for m in dict.fromkeys(message_ids))

    def cleanup_messages(self, older_than_days: int) -> int:
        if older_than_days < 0:
            raise InvalidInput("older_than_days must not be negative", field="older_than_days")
        cutoff = self.world.now() - older_than_days * 86_400
        done = [
            d["id"]
            for d in self.messages.values()
            if d["status"] in ("resolved", "archived") and d["timestamp"] < cutoff
        ]
        return self.delete_messages(done)

    def message_stats(self) -> MessageStats:
        docs = self.messages.values()

        def count(key: str, values: tuple[str, ...]) -> dict[str, int]:
            return {v: sum(1 for d in docs if d[key] == v) for v in values}

        return MessageStats(
            len(docs),
            count("severity", SEVERITIES),
            count("status", MESSAGE_STATUSES),
            count("category", MESSAGE_CATEGORIES),
        )

    # Channels --------------------------------------------------------------------------------
    def channel_schema(self, kind: str) -> dict[str, Any]:
        if kind not in CHANNEL_KINDS:
            raise NotFound(f"Channel type {kind} not found", resource="channel_type")
        properties: dict[str, Any] = {name: {"type": "string"} for name in REQUIRED[kind] + OPTIONAL[kind]}
        for name in ("smtp_port",):
            if name in properties:
                properties[name] = {"type": "integer", "default": 25}
        for name in ("use_tls", "use_ssl"):
            if name in properties:
                properties[name] = {"type": "boolean", "default": False}
        if "headers" in properties:
            properties["headers"] = {"type": "object", "additionalProperties": {"type": "string"}}
        if "recipients" in properties:
            properties["recipients"] = {"type": "array", "items": {"type": "string", "format": "email"}}
        return {"type": "object", "required": list(REQUIRED[kind]), "properties": properties}

    def add_recipient(self, name: str, email: str) -> Channel:
        doc = self.channel_doc(name)
        if "@" not in email.strip("@"):
            raise InvalidInput(f"Invalid email address '{email}'", field="email")
        if email not in doc["recipients"]:
            doc["recipients"].append(email)
            self.channels.put(name, doc)
        return _channel(doc)

    def remove_recipient(self, name: str, email: str) -> Channel:
        doc = self.channel_doc(name)
        if email not in doc["recipients"]:
            raise NotFound(f"Recipient {email} not found", resource="recipient")
        doc["recipients"].remove(email)
        self.channels.put(name, doc)
        return _channel(doc)

    def channel_doc(self, name: str) -> dict[str, Any]:
        doc = self.channels.get(name)
        if doc is None:
            raise NotFound(f"Channel {name} not found", resource="channel")
        return doc

    def channel_kinds(self) -> tuple[ChannelKind, ...]:
        return KINDS

    def get_channel(self, name: str) -> Channel:
        return _channel(self.channel_doc(name))

    def create_channel(
        self, name: str, channel_type: str, config: Mapping[str, Any], enabled: bool = True
    ) -> Channel:
        if not name:
            raise InvalidInput("name is required", field="name")
        if channel_type not in CHANNEL_KINDS:
            raise InvalidInput(f"Unknown channel type '{channel_type}'", field="channel_type")
        if self.channels.get(name) is not None:
            raise Conflict(f"Channel '{name}' already exists", resource="channel")
        config = dict(config)
        check_config(channel_type, config)
        recipients = [str(r) for r in config.pop("recipients", None) or []]
        doc = {
            "name": name,
            "channel_type": channel_type,
            "enabled": enabled,
            "config": config,
            "recipients": recipients,
            "sent": 0,
            "failed": 0,
            "last_result": None,
        }
        self.channels.put(name, doc)
        return _channel(doc)

    def update_channel(
        self, name: str, config: Mapping[str, Any] | None = None, enabled: bool | None = None
    ) -> Channel:
        doc = self.channel_doc(name)
        before = doc["config"]
        if config is not None:
            merged = {**doc["config"], **config}
            if "recipients" in merged:
                doc["recipients"] = [str(r) for r in merged.pop("recipients") or []]
            check_config(doc["channel_type"], merged)
            doc["config"] = merged
        if enabled is not None:
            doc["enabled"] = enabled
        self.channels.put(name, doc)
        if doc["config"] != before:
            self.outbox.retarget("channel", name)
        return _channel(doc)

    def delete_channel(self, name: str) -> None:
        self.channel_doc(name)
        self.channels.delete(name)
        self.outbox.cancel_owner("channel", name)

    async def test_channel(self, name: str) -> DeliveryResult:
        doc = self.channel_doc(name)
        msg = {
            "id": "test",
            "category": "system",
            "severity": "info",
            "title": "Test message",
            "message": f"Test delivery to channel '{name}'",
            "source": "channel-test",
            "source_type": "system",
            "timestamp": self.world.now(),
            "metadata": None,
        }
        transport, config = destination(doc)
        outcome = await self.outbox.send_now("channel", name, transport, config, body(doc, msg))
        words, words_zh = test_words(doc["channel_type"], outcome)
        result = DeliveryResult(
            outcome.success, words, outcome.duration_ms, 1, outcome.status_code, self.world.now(), words_zh
        )
        current = self.channels.get(name)
        if current is not None:  # recorded on the channel (unless it was deleted while the test ran)
            current["last_result"] = dataclasses.asdict(result)
            self.channels.put(name, current)
        return result

    def list_channels(self) -> list[Channel]:
        return [_channel(d) for d in self.channels.values()]

    def delivery_stats(self) -> list[DeliveryStats]:
        return self.outbox.stats("channel", [d["name"] for d in self.channels.values()])


def _message(d: dict[str, Any]) -> Message:
    return Message(
        d["id"],
        d["category"],
        d["severity"],
        d["title"],
        d["message"],
        d["source"],
        d["source_type"],
        d["timestamp"],
        d["status"],
        d.get("metadata"),
        tuple(d.get("tags") or ()),
    )


def _channel(d: dict[str, Any]) -> Channel:
    last = d.get("last_result")
    return Channel(
        d["name"],
        d["channel_type"],
        d["enabled"],
        d["config"],
        tuple(d.get("recipients") or ()),
        d.get("sent", 0),
        d.get("failed", 0),
        DeliveryResult(**last) if last else None,
    )
