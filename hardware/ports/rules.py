"""The automation backend's rules, messages (with notification channels) and data push areas.

Rules are JSON documents (never a DSL): the backend validates and normalises them and hands back
:class:`Rule` values whose ``trigger``/``condition``/``actions`` are the normalised JSON. Messages
and push targets leave the process for real (HTTP, SMTP, MQTT); their retries run on the world
clock. Timestamps are Unix seconds on the backend's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

SEVERITIES = ("info", "warning", "critical", "emergency")
MESSAGE_CATEGORIES = ("alert", "system", "business")
MESSAGE_STATUSES = ("active", "acknowledged", "resolved", "archived")
CHANNEL_KINDS = ("webhook", "email", "telegram", "wecom", "dingtalk", "slack", "feishu")
PUSH_TARGET_TYPES = ("webhook", "mqtt")
PUSH_LOG_STATUSES = ("pending", "success", "failed", "retrying")


# Rules ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    name: str
    enabled: bool
    trigger: Mapping[str, Any]
    """Normalised: ``trigger_type`` plus ``sources`` (data_change) or ``cron`` (schedule)."""
    condition: Mapping[str, Any]
    """Normalised: operators in symbol form; ``{"condition_type": "none"}`` when there is none."""
    actions: tuple[Mapping[str, Any], ...]
    cooldown_ms: int
    for_duration_ms: int | None
    trigger_count: int
    last_triggered: float | None
    created_at: float
    updated_at: float
    description: str | None = None
    tags: tuple[str, ...] = ()
    source: Any = None
    """Free-form UI state stored with the rule."""


@dataclass(frozen=True, slots=True)
class RuleExecution:
    rule_id: str
    rule_name: str
    success: bool
    actions_executed: tuple[str, ...]
    error: str | None
    duration_ms: int
    triggered_at: float


@dataclass(frozen=True, slots=True)
class RuleTest:
    """The answer of a dry run: what the rule would do with the value it would see."""

    rule_id: str
    rule_name: str
    condition_met: bool
    value_used: Any
    value_source: str
    """``input`` (given in the request), ``current``, ``historical`` (a stored sample) or ``none``."""
    operator: str
    threshold: Any = None
    range_min: float | None = None
    range_max: float | None = None
    executed: bool | None = None
    """Only when the caller asked to execute: whether the actions ran."""
    execution: RuleExecution | None = None


@dataclass(frozen=True, slots=True)
class RuleImport:
    imported: int
    skipped: int
    errors: tuple[str, ...]


@runtime_checkable
class AutomationRules(Protocol):
    """Unknown ids raise ``NotFound(resource="rule")``; an id that is not a UUID ``InvalidInput``;
    a rule the server cannot accept ``InvalidInput(resource="rule", hint=...)``."""

    def list_rules(self) -> list[Rule]: ...

    def create_rule(self, definition: object) -> Rule: ...

    def get_rule(self, rule_id: str) -> Rule: ...

    def update_rule(self, rule_id: str, definition: object) -> Rule: ...

    def delete_rule(self, rule_id: str) -> None: ...

    def enable_rule(self, rule_id: str, enabled: bool) -> Rule: ...

    def test_rule(self, rule_id: str, value: Any = None, execute: bool = False) -> RuleTest:
        """A dry run: evaluates the condition with ``value`` (or the source's current value) and
        performs nothing unless ``execute`` is true and the condition holds."""

    def trigger_rule(self, rule_id: str) -> RuleExecution:
        """Run the actions now, whatever the condition says."""

    def rule_history(self, rule_id: str) -> list[RuleExecution]:
        """Newest first."""

    def validate_rule(self, definition: object) -> list[str]:
        """What is wrong with a definition (empty when it would be accepted); stores nothing."""

    def import_rules(self, definitions: list[Any]) -> RuleImport:
        """Create each rule; a definition whose ``id`` names an existing rule is skipped."""


# Messages and channels ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Message:
    id: str
    category: str
    severity: str
    title: str
    message: str
    source: str
    source_type: str
    timestamp: float
    status: str
    metadata: Mapping[str, Any] | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MessagePage:
    messages: tuple[Message, ...]
    total: int
    limit: int
    offset: int


@dataclass(frozen=True, slots=True)
class MessageStats:
    total: int
    by_severity: Mapping[str, int]
    by_status: Mapping[str, int]
    by_category: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class NewMessage:
    category: str
    severity: str
    title: str
    message: str
    source: str | None = None
    source_type: str | None = None
    metadata: Mapping[str, Any] | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelKind:
    id: str
    name: str
    name_zh: str
    description: str
    description_zh: str
    icon: str
    category: str = "external"


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """One real delivery (or the last attempt of one): what the far end said."""

    success: bool
    message: str
    duration_ms: int
    attempts: int = 1
    status_code: int | None = None
    at: float | None = None
    message_zh: str | None = None
    """The message in Chinese, where the vendor gives one (a channel test)."""


@dataclass(frozen=True, slots=True)
class DeliveryStats:
    """How one delivery owner (a push target, a channel) is doing: the twin's own figures, for its
    metrics (the vendor's API has no field for them). ``failed`` counts every delivery that was
    given up, ``dropped`` those of them that were never attempted (too many waiting while the
    circuit was open)."""

    owner_kind: str
    owner_id: str
    circuit: str = "closed"
    """``closed``, ``open`` (deliveries wait) or ``half_open`` (one probe goes out)."""
    consecutive_failures: int = 0
    pending: int = 0
    """Deliveries not finished yet, waiting ones included."""
    waiting: int = 0
    """Deliveries held back by the open circuit."""
    attempts: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0


@dataclass(frozen=True, slots=True)
class Channel:
    name: str
    channel_type: str
    enabled: bool
    config: Mapping[str, Any]
    recipients: tuple[str, ...] = ()
    sent: int = 0
    failed: int = 0
    last_result: DeliveryResult | None = None


@runtime_checkable
class AutomationMessages(Protocol):
    """Unknown ids/names raise ``NotFound(resource="message"|"channel")``."""

    def list_messages(
        self,
        limit: int = 50,
        offset: int = 0,
        severity: str | None = None,
        status: str | None = None,
        category: str | None = None,
    ) -> MessagePage: ...

    def send_message(self, new: NewMessage) -> Message:
        """Store the message and deliver it to every enabled channel (retries on the world clock)."""

    def get_message(self, message_id: str) -> Message: ...

    def delete_message(self, message_id: str) -> None: ...

    def set_message_status(self, message_id: str, status: str) -> Message: ...

    def set_messages_status(self, message_ids: list[str], status: str) -> int:
        """Bulk status change; unknown ids are skipped. The number changed."""

    def delete_messages(self, message_ids: list[str]) -> int: ...

    def cleanup_messages(self, older_than_days: int) -> int:
        """Delete resolved and archived messages older than that; the number deleted."""

    def message_stats(self) -> MessageStats: ...

    def channel_schema(self, kind: str) -> Mapping[str, Any]:
        """A JSON schema of the configuration a channel kind takes; ``NotFound`` for an unknown kind."""

    def add_recipient(self, name: str, email: str) -> Channel: ...

    def remove_recipient(self, name: str, email: str) -> Channel: ...

    def channel_kinds(self) -> tuple[ChannelKind, ...]: ...

    def list_channels(self) -> list[Channel]: ...

    def get_channel(self, name: str) -> Channel: ...

    def create_channel(
        self, name: str, channel_type: str, config: Mapping[str, Any], enabled: bool = True
    ) -> Channel:
        """``Conflict`` when the name is taken; ``InvalidInput`` for an unknown kind or config."""

    def update_channel(
        self, name: str, config: Mapping[str, Any] | None = None, enabled: bool | None = None
    ) -> Channel: ...

    def delete_channel(self, name: str) -> None: ...

    async def test_channel(self, name: str) -> DeliveryResult:
        """Deliver a test message now, for real; the result is recorded on the channel."""

    def delivery_stats(self) -> list[DeliveryStats]:
        """Per channel."""


# Data push ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PushTarget:
    id: str
    name: str
    target_type: str
    config: Mapping[str, Any]
    schedule: Mapping[str, Any]
    data_filter: Mapping[str, Any]
    retry_config: Mapping[str, Any]
    batch_config: Mapping[str, Any]
    enabled: bool
    created_at: float
    updated_at: float
    template: str | None = None
    pushed: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class PushLog:
    id: str
    target_id: str
    status: str
    data_source_id: str | None
    payload_sent: str
    response: str | None
    attempts: int
    created_at: float
    completed_at: float | None
    error: str | None


@runtime_checkable
class AutomationPush(Protocol):
    """Unknown ids raise ``NotFound(resource="push_target")``; bad settings ``InvalidInput``."""

    def list_targets(self) -> list[PushTarget]: ...

    def create_target(self, spec: Mapping[str, Any]) -> PushTarget: ...

    def get_target(self, target_id: str) -> PushTarget: ...

    def update_target(self, target_id: str, changes: Mapping[str, Any]) -> PushTarget: ...

    def delete_target(self, target_id: str) -> None: ...

    def start_target(self, target_id: str) -> PushTarget: ...

    def stop_target(self, target_id: str) -> PushTarget: ...

    async def test_target(self, target_id: str) -> PushLog:
        """Push one test payload now, for real (no retries); logged like any delivery."""

    def target_logs(self, target_id: str, limit: int = 100) -> list[PushLog]:
        """Newest first."""

    def delivery_stats(self) -> list[DeliveryStats]:
        """Per target."""
