"""The automation backend's system area: settings, capabilities, tools, network info, statistics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


# Self-description ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ToolParameter:
    name: str
    type: str
    """A JSON-schema type: ``string``, ``number``, ``integer``, ``boolean``, ``object``, ``array``."""
    description: str
    required: bool = False
    enum: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Tool:
    """Something an agent can call."""

    name: str
    category: str
    description: str
    parameters: tuple[ToolParameter, ...] = ()


@dataclass(frozen=True, slots=True)
class Capability:
    """A group of related things the server offers, with the tools that expose it."""

    name: str
    display_name: str
    description: str
    tools: tuple[str, ...] = ()


# Settings --------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TimezoneOption:
    id: str
    """IANA name, e.g. ``Asia/Shanghai``."""
    name: str
    """Display name."""


@dataclass(frozen=True, slots=True)
class TimezoneSetting:
    timezone: str
    is_default: bool


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    enabled: bool = True
    interval_hours: int = 1
    """Hours between automatic cleanups; at least 1."""
    default_retention: int | None = 720
    """Hours numeric metrics are kept; ``None`` keeps them forever."""
    image_retention: int | None = 72
    """Hours image-like metrics (``image``, ``frame``, ``snapshot``...) are kept; ``None`` = forever."""


@dataclass(frozen=True, slots=True)
class RetentionCleanup:
    ran_at: float
    """Unix seconds on the world clock."""
    default_cutoff: float | None
    """Stored samples of numeric metrics older than this are removed (``None``: kept forever)."""
    image_cutoff: float | None
    """The same for image-like metrics (``image``, ``frame``, ``snapshot``...)."""
    deleted: int = 0
    """Stored (pushed) samples removed by this run."""


@dataclass(frozen=True, slots=True)
class AgentSettings:
    max_rounds: int = 30
    execution_timeout_secs: int = 300
    tool_concurrency: int = 6
    default_temperature: float = 0.3
    default_top_p: float = 0.7
    default_thinking_enabled: bool | None = None
    """``None``: use the model backend's default."""
    chat_history_depth: int = 50
    chat_turn_timeout_secs: int = 1800


@dataclass(frozen=True, slots=True)
class DeviceSettings:
    default_offline_timeout_secs: int = 300
    """The global default; a device's own or its type's timeout wins over it."""
    auto_onboard_enabled: bool = True


# Transport configuration and statistics ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NetworkInfo:
    """The server's own addresses: transport configuration handed to the API by the composition root."""

    ip: str = "127.0.0.1"
    """The address clients use to reach this host (a public host name when configured)."""
    port: int = 9375
    server_url: str | None = None
    """A configured public base URL (no ``/api``); ``None`` derives it per request."""
    mqtt_url: str | None = None
    """The broker devices connect to; ``None`` means ``mqtt://<ip>:<mqtt_port>``."""
    mqtt_port: int = 1883
    ssid: str | None = None

    @property
    def broker_url(self) -> str:
        if self.mqtt_url:
            return self.mqtt_url
        return f"mqtt://{_host(self.ip)}:{self.mqtt_port}"

    @property
    def fallback_url(self) -> str:
        return f"http://{_host(self.ip)}:{self.port}"


def _host(ip: str) -> str:
    return f"[{ip}]" if ":" in ip and not ip.startswith("[") else ip


@dataclass(frozen=True, slots=True)
class BusStats:
    published: int
    """Events published on the event bus since the process started."""
    dropped: int
    """Events dropped because a subscriber's bounded queue was full (oldest dropped)."""


@dataclass(frozen=True, slots=True)
class HostStats:
    """The machine the server runs on (simulated in the twin)."""

    platform: str
    arch: str
    cpu_count: int
    total_memory: int
    used_memory: int
    free_memory: int
    available_memory: int
    cpu_usage: float
    """Percent, 0..100."""
    counts: tuple[tuple[str, int], ...] = ()
    """Server-level counts (devices, users...)."""


@runtime_checkable
class AutomationSystem(Protocol):
    """Server-wide settings and self-description that are not tied to one resource."""

    # Self-description
    def capabilities(self) -> list[Capability]: ...

    def capability(self, name: str) -> Capability:
        """``NotFound`` (resource ``capability``) for an unknown name."""

    def tools(self) -> list[Tool]: ...

    def tool(self, name: str) -> Tool:
        """``NotFound`` (resource ``tool``) for an unknown name."""

    # Settings
    def timezone(self) -> TimezoneSetting: ...

    def set_timezone(self, timezone: str) -> TimezoneSetting:
        """``InvalidInput`` (field ``timezone``) unless it is an IANA time zone name."""

    def timezones(self) -> list[TimezoneOption]: ...

    def retention(self) -> RetentionPolicy: ...

    def update_retention(self, **changes: Any) -> RetentionPolicy:
        """Apply the given fields of :class:`RetentionPolicy`; ``InvalidInput`` for a bad value."""

    def cleanup_retention(self) -> RetentionCleanup:
        """Run the retention cleanup now: delete stored samples older than the retention."""

    def agent_settings(self) -> AgentSettings: ...

    def update_agent_settings(self, **changes: Any) -> AgentSettings:
        """Apply the given fields of :class:`AgentSettings`; ``InvalidInput`` for a bad value."""

    def device_settings(self) -> DeviceSettings: ...

    def update_device_settings(self, **changes: Any) -> DeviceSettings:
        """Apply the given fields; the offline timeout is clamped to at least 10 s."""

    # Statistics
    def event_bus(self) -> BusStats: ...

    def host_stats(self) -> HostStats: ...
