"""Wire shapes of messages and notification channels (release 0.9.24)."""

from __future__ import annotations

from typing import Any, Literal, overload

from pydantic import BaseModel, ConfigDict, Field

from api.automation.schemas.rules import rfc3339
from hardware.ports.rules import (
    Channel,
    ChannelKind,
    DeliveryResult,
    Message,
    MessagePage,
    MessageStats,
    NewMessage,
)


class MessageRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    category: Literal["alert", "system", "business"]
    severity: Literal["info", "warning", "critical", "emergency"]
    title: str = Field(min_length=1)
    message: str
    source: str | None = None
    source_type: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] = Field(default_factory=list)

    def to_port(self) -> NewMessage:
        return NewMessage(
            self.category,
            self.severity,
            self.title,
            self.message,
            self.source,
            self.source_type,
            self.metadata,
            tuple(self.tags),
        )


class ChannelRequest(BaseModel):
    """``{name, channel_type, ...config}``: every other field is the channel's configuration."""

    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    channel_type: str
    enabled: bool = True

    def config(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class MessageIds(BaseModel):
    model_config = ConfigDict(extra="ignore")
    message_ids: list[str]


class CleanupRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    older_than_days: int = 30


class RecipientRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    email: str


class FilterRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    source_types: list[str]
    categories: list[str]
    min_severity: str | None = None


class EnabledRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    enabled: bool


class ChannelUpdate(BaseModel):
    model_config = ConfigDict(extra="allow")
    enabled: bool | None = None

    def config(self) -> dict[str, Any] | None:
        extra = {k: v for k, v in (self.model_extra or {}).items() if k not in ("name", "channel_type")}
        return extra or None


def message(m: Message) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": m.id,
        "category": m.category,
        "severity": m.severity,
        "title": m.title,
        "message": m.message,
        "source": m.source,
        "source_type": m.source_type,
        "timestamp": rfc3339(m.timestamp),
        "status": m.status,
        "tags": list(m.tags),
    }
    if m.metadata is not None:
        body["metadata"] = dict(m.metadata)
    return body


def message_page(page: MessagePage) -> dict[str, Any]:
    return {
        "messages": [message(m) for m in page.messages],
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
    }


def created(m: Message) -> dict[str, Any]:
    return {"id": m.id, "message": "Message created", "message_zh": "消息已创建"}


def kind(k: ChannelKind) -> dict[str, Any]:
    return {
        "id": k.id,
        "name": k.name,
        "name_zh": k.name_zh,
        "description": k.description,
        "description_zh": k.description_zh,
        "icon": k.icon,
        "category": k.category,
    }


@overload
def result(r: DeliveryResult) -> dict[str, Any]: ...
@overload
def result(r: None) -> None: ...
def result(r: DeliveryResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "success": r.success,
        "message": r.message,
        **({"message_zh": r.message_zh} if r.message_zh is not None else {}),
        "duration_ms": r.duration_ms,
        "attempts": r.attempts,
        "status_code": r.status_code,
        "timestamp": None if r.at is None else int(r.at),
    }


def channel(c: Channel, secrets_masked: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": c.name,
        "channel_type": c.channel_type,
        "enabled": c.enabled,
        "config": secrets_masked,
        "recipients": list(c.recipients),
        "stats": {"sent": c.sent, "failed": c.failed},
        "last_result": result(c.last_result),
    }


SECRET_MARKERS = ("password", "token", "secret", "api_key")


def masked(config: dict[str, Any]) -> dict[str, Any]:
    """Secrets in a channel's configuration are never echoed back."""
    return {k: ("***" if v and any(s in k for s in SECRET_MARKERS) else v) for k, v in config.items()}


def channel_view(c: Channel) -> dict[str, Any]:
    return channel(c, masked(dict(c.config)))


def stats(s: MessageStats) -> dict[str, Any]:
    return {
        "total": s.total,
        "by_severity": dict(s.by_severity),
        "by_status": dict(s.by_status),
        "by_category": dict(s.by_category),
        "active": s.by_status.get("active", 0),
    }


def recipients(c: Channel) -> dict[str, Any]:
    return {"name": c.name, "recipients": list(c.recipients), "count": len(c.recipients)}
