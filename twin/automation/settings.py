"""Server-wide settings of the automation server, kept in the durable ``settings`` collection.

Keys used here: ``timezone``, ``retention``, ``agent``, ``device`` (``jwt_secret`` and ``auth`` belong
to :mod:`twin.automation.users`). A key that was never written reads as the defaults.
"""

from __future__ import annotations

import dataclasses
import zoneinfo
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from hardware.ports.errors import InvalidInput
from hardware.ports.system import (
    AgentSettings,
    DeviceSettings,
    RetentionPolicy,
    TimezoneOption,
    TimezoneSetting,
)

if TYPE_CHECKING:
    from twin.engine import Engine

DEFAULT_TIMEZONE = "Asia/Shanghai"
MIN_OFFLINE_TIMEOUT_S = 10
HOUR_S = 3600

# The server's short list for pickers (the real server's own display names); any IANA name is accepted.
TIMEZONE_OPTIONS: tuple[TimezoneOption, ...] = tuple(
    TimezoneOption(id_, name)
    for id_, name in (
        ("Asia/Shanghai", "中国 (UTC+8)"),
        ("Asia/Tokyo", "日本 (UTC+9)"),
        ("Asia/Seoul", "韩国 (UTC+9)"),
        ("Asia/Singapore", "新加坡 (UTC+8)"),
        ("Asia/Dubai", "迪拜 (UTC+4)"),
        ("Europe/London", "伦敦 (UTC+0/+1)"),
        ("Europe/Paris", "巴黎 (UTC+1/+2)"),
        ("Europe/Berlin", "柏林 (UTC+1/+2)"),
        ("Europe/Moscow", "莫斯科 (UTC+3)"),
        ("America/New_York", "纽约 (UTC-5/-4)"),
        ("America/Los_Angeles", "洛杉矶 (UTC-8/-7)"),
        ("America/Chicago", "芝加哥 (UTC-6/-5)"),
        ("America/Toronto", "多伦多 (UTC-5/-4)"),
        ("America/Sao_Paulo", "圣保罗 (UTC-3/-2)"),
        ("Australia/Sydney", "悉尼 (UTC+10/+11)"),
        ("Pacific/Auckland", "奥克兰 (UTC+12/+13)"),
        ("UTC", "UTC (UTC+0)"),
    )
)

T = TypeVar("T", AgentSettings, DeviceSettings, RetentionPolicy)


@cache
def iana_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones()) | {o.id for o in TIMEZONE_OPTIONS}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise InvalidInput(f"{field}: {message}", field=field)


def _int_at_least(value: Any, field: str, low: int, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    _check(_is_int(value) and value >= low, field, f"must be an integer >= {low}")


def _apply(current: T, changes: dict[str, Any]) -> T:
    names = {f.name for f in dataclasses.fields(current)}
    unknown = sorted(set(changes) - names)
    _check(not unknown, unknown[0] if unknown else "", "unknown setting")
    return dataclasses.replace(current, **changes)


def _validate_retention(p: RetentionPolicy) -> None:
    _check(isinstance(p.enabled, bool), "enabled", "must be a boolean")
    _int_at_least(p.interval_hours, "interval_hours", 1)
    _int_at_least(p.default_retention, "default_retention", 1, nullable=True)
    _int_at_least(p.image_retention, "image_retention", 1, nullable=True)


def _validate_agent(a: AgentSettings) -> None:
    for name in ("max_rounds", "execution_timeout_secs", "tool_concurrency", "chat_history_depth"):
        _int_at_least(getattr(a, name), name, 1)
    _int_at_least(a.chat_turn_timeout_secs, "chat_turn_timeout_secs", 1)
    t, p = a.default_temperature, a.default_top_p
    _check(_is_number(t) and 0.0 <= t <= 2.0, "default_temperature", "must be between 0.0 and 2.0")
    _check(_is_number(p) and 0.0 < p <= 1.0, "default_top_p", "must be greater than 0.0 and at most 1.0")
    thinking = a.default_thinking_enabled
    _check(thinking is None or isinstance(thinking, bool), "default_thinking_enabled", "must be a boolean")


class ServerSettings:
    """A view over the world's durable settings; cheap to make, so callers make one per call."""

    def __init__(self, world: Engine) -> None:
        self.world = world
        self.docs = world.store.collection("settings")

    def _load(self, key: str, default: T) -> T:
        doc = self.docs.get(key)
        if doc is None:
            return default
        known = {f.name for f in dataclasses.fields(default)}
        return dataclasses.replace(default, **{k: v for k, v in doc.items() if k in known})

    def _save(self, key: str, value: T) -> T:
        self.docs.put(key, dataclasses.asdict(value))
        return value

    # Timezone ----------------------------------------------------------------------------------
    def timezone(self) -> TimezoneSetting:
        tz = (self.docs.get("timezone") or {}).get("timezone", DEFAULT_TIMEZONE)
        return TimezoneSetting(tz, tz == DEFAULT_TIMEZONE)

    def set_timezone(self, timezone: str) -> TimezoneSetting:
        if not isinstance(timezone, str) or timezone not in iana_names():
            raise InvalidInput(
                f"Invalid timezone: '{timezone}'. Expected IANA format like 'Asia/Shanghai'",
                field="timezone",
            )
        self.docs.put("timezone", {"timezone": timezone})
        return self.timezone()

    # Retention ---------------------------------------------------------------------------------
    def retention(self) -> RetentionPolicy:
        return self._load("retention", RetentionPolicy())

    def update_retention(self, **changes: Any) -> RetentionPolicy:
        policy = _apply(self.retention(), changes)
        _validate_retention(policy)
        return self._save("retention", policy)

    # Agent and device defaults -------------------------------------------------------------------
    def agent(self) -> AgentSettings:
        return self._load("agent", AgentSettings())

    def update_agent(self, **changes: Any) -> AgentSettings:
        settings = _apply(self.agent(), changes)
        _validate_agent(settings)
        return self._save("agent", settings)

    def device(self) -> DeviceSettings:
        return self._load("device", DeviceSettings())

    def update_device(self, **changes: Any) -> DeviceSettings:
        settings = _apply(self.device(), changes)
        timeout = settings.default_offline_timeout_secs
        _check(_is_int(timeout), "default_offline_timeout_secs", "must be an integer")
        _check(isinstance(settings.auto_onboard_enabled, bool), "auto_onboard_enabled", "must be a boolean")
        settings = dataclasses.replace(
            settings, default_offline_timeout_secs=max(MIN_OFFLINE_TIMEOUT_S, timeout)
        )
        return self._save("device", settings)


def device_defaults(world: Engine) -> DeviceSettings:
    """The global device defaults (``default_offline_timeout_secs``, ``auto_onboard_enabled``)."""
    return ServerSettings(world).device()
