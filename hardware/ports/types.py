"""Frozen value types that cross the port boundary. No vendor JSON here: API layers map them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ClockMode(StrEnum):
    REALTIME = "realtime"
    STEP = "step"


@dataclass(frozen=True, slots=True)
class ClockState:
    mode: ClockMode
    speed: float
    paused: bool
    sim_time: float
    """Seconds since sim time 0."""
    epoch: float
    """Unix time that sim time 0 maps to."""

    @property
    def unix_time(self) -> float:
        return self.epoch + self.sim_time


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    id: str
    sim_time: float
    seed: int
    label: str = ""
    """What the user called it when taking it (empty if nothing)."""


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str
    role: str
    created_at: int
    """Unix seconds on the world clock."""


@dataclass(frozen=True, slots=True)
class Login:
    token: str
    user: User


@dataclass(frozen=True, slots=True)
class Readiness:
    database: bool
    mqtt: bool
    llm: bool
    notes: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.database and self.llm


@dataclass(frozen=True, slots=True)
class PublicKey:
    pem: str
    algorithm: str
    unix_timestamp: int


@dataclass(frozen=True, slots=True)
class GatewayInfo:
    version: str
    services: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    name: str
    created_at: int
    permissions: tuple[str, ...]
    """``*`` or ``<area>`` / ``<area>:read`` / ``<area>:write`` (area = first path segment after /api)."""
    active: bool = True
    expires_at: int | None = None
    preview: str = ""

    def allows(self, area: str, write: bool) -> bool:
        wanted = f"{area}:{'write' if write else 'read'}"
        return any(p in ("*", area, wanted) for p in self.permissions)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who made a request: a user by JWT, or an API key."""

    method: str  # "jwt" | "api_key"
    user: User | None = None
    key: ApiKey | None = None

    @property
    def is_admin(self) -> bool:
        if self.user is not None:
            return self.user.role == "admin"
        return self.key is not None and "*" in self.key.permissions


@dataclass(frozen=True, slots=True)
class TimezoneInfo:
    name: str
    country: str
    offset_s: int
    """Offset from UTC in seconds."""


@dataclass(frozen=True, slots=True)
class DeviceTime:
    """The device's own clock: world time plus whatever offset was set on the device."""

    unix: float
    timezone: str
    offset_s: int
    """The timezone's offset from UTC in seconds, at ``unix``."""
    uptime_s: int


@dataclass(frozen=True, slots=True)
class TimeConfig:
    timezone: str
    time_format: str
    sync_mode: str
    ntp_enabled: bool
    ntp_server: str
    ntp_interval: int
    ntp_synced: bool
    last_sync: str
    fallback_servers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ClientTimeSync:
    synced: bool
    diff_s: int


@dataclass(frozen=True, slots=True)
class AcceleratorStats:
    """The AI runtime's ``SystemStats``: accelerator utilisation, temperature and memory."""

    device_utilization: float
    device_temperature: float
    total_memory_bytes: int
    used_memory_bytes: int


@dataclass(frozen=True, slots=True)
class SystemStats:
    unix_timestamp: int
    ai_runtime: AcceleratorStats | None


@dataclass(frozen=True, slots=True)
class OtaStatus:
    status: str
    progress: int
    message: str
    current_step: str
    version: str
    start_time: int
    error: str
    reboot_needed: bool
    current_boot_id: str = ""
    job_id: str = ""
    finished_at: int = 0
    reboot_confirmed: bool = False
    boot_id: str = ""
    log_path: str = ""
    log_tail: str = ""
