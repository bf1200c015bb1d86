"""Event kinds and the event value type published on the world's bus.

Values are stable strings: they name MQTT topics, SSE events and entries of golden traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventKind(StrEnum):
    DEVICE_TELEMETRY = "device.telemetry"
    DEVICE_ONLINE = "device.online"
    DEVICE_OFFLINE = "device.offline"
    DEVICE_COMMAND_RESULT = "device.command_result"
    CAMERA_BOOTED = "camera.booted"
    CAMERA_SESSION_OPENED = "camera.session_opened"
    CAMERA_SESSIONS_DROPPED = "camera.sessions_dropped"
    USER_CREATED = "user.created"
    CLOCK_JUMP = "clock.jump"
    WORLD_RESET = "world.reset"
    DEVICE_METRIC = "device.metric"
    DEVICE_DISCOVERED = "device.discovered"
    CAMERA_POWER_DOWN = "camera.power_down"
    CAMERA_POWER_UP = "camera.power_up"
    CAMERA_PASSWORD_CHANGED = "camera.password_changed"
    CAMERA_TIME_SET = "camera.time_set"
    CAMERA_OTA_STATE = "camera.ota_state"
    CAMERA_OS_UPGRADE_STATE = "camera.os_upgrade_state"
    CAMERA_GPIO_CHANGE = "camera.gpio_change"
    CAMERA_WIEGAND = "camera.wiegand"
    CAMERA_RS485_RX = "camera.rs485_rx"
    CAMERA_DAY_NIGHT = "camera.day_night_switch"
    CAMERA_PTZ_PRESET = "camera.ptz_preset_reached"
    CAMERA_DETECTIONS = "camera.detections"
    AGENT_EXECUTION_STARTED = "agent.execution_started"
    AGENT_EXECUTION_COMPLETED = "agent.execution_completed"
    AGENT_MEMORY_UPDATED = "agent.memory_updated"
    EXTENSION_OUTPUT = "extension.output"
    EXTENSION_COMMAND_COMPLETED = "extension.command_completed"
    DASHBOARD_UPDATED = "dashboard.updated"
    RULE_EVALUATED = "rule.evaluated"
    RULE_TRIGGERED = "rule.triggered"
    RULE_EXECUTED = "rule.executed"
    RULE_AGENT_REQUESTED = "rule.agent_requested"
    MESSAGE_CREATED = "message.created"
    MESSAGE_ACKNOWLEDGED = "message.acknowledged"
    MESSAGE_RESOLVED = "message.resolved"
    CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class Event:
    """Something that happened in the world at sim time ``at`` (seconds since sim time 0)."""

    kind: EventKind
    at: float
    source: str
    data: dict[str, Any] = field(default_factory=dict)

    def trace_line(self) -> str:
        """A canonical one-line form, used to compare traces byte for byte."""
        items = ",".join(f"{k}={self.data[k]!r}" for k in sorted(self.data))
        return f"{self.at:.6f} {self.kind.value} {self.source} {items}"


class Subscription:
    """What a subscriber receives: ``await sub.get()`` yields events; ``dropped`` counts losses.

    Implementations bound their queue and drop the oldest event when it is full.
    """

    dropped: int

    async def get(self) -> Event:  # pragma: no cover - protocol body
        raise NotImplementedError

    def get_nowait(self) -> Event | None:  # pragma: no cover - protocol body
        raise NotImplementedError

    async def ready(self) -> None:  # pragma: no cover - protocol body
        """Return once at least one event is pending."""
        raise NotImplementedError

    def drain(self, limit: int | None = None) -> list[tuple[int, Event]]:  # pragma: no cover
        """Take up to ``limit`` pending events (all when ``None``), oldest first, each with its bus
        sequence number: publish order, unique per bus, the same for every subscriber."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - protocol body
        raise NotImplementedError
