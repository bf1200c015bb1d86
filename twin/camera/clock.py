"""A camera's own clock: world time plus an offset, with its timezone and NTP settings.

The world clock is the only time source; the device clock never reads the wall. Setting the time
on the device only moves its offset, and an NTP sync (or enabling NTP) puts it back on world time,
as ``systemd-timesyncd`` would against a correct server.

Everything in the time area is durable, as on the device (its RTC and ``/etc`` survive a reboot):
one document per camera in the store holds the offset, timezone, format, sync mode and NTP
settings, written by every change and read back when the camera is built.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, TypeVar, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from hardware.ports.errors import InvalidInput
from hardware.ports.events import EventKind
from hardware.ports.types import ClientTimeSync, DeviceTime, TimeConfig, TimezoneInfo

if TYPE_CHECKING:
    from twin.engine import Engine

DEFAULT_TIMEZONE = "UTC"
DEFAULT_NTP_SERVER = "pool.ntp.org"
DEFAULT_NTP_INTERVAL_S = 3600
FALLBACK_NTP_SERVERS = ("0.pool.ntp.org", "1.pool.ntp.org", "2.pool.ntp.org", "3.pool.ntp.org")
CLIENT_SYNC_THRESHOLD_S = 30
"""``sync-from-client`` only moves the clock when the client is further off than this."""
CLOCK_KIND = "camera_clock"
"""Durable: one document per camera, keyed by its id (see :meth:`DeviceClock.state`)."""

# The device's own fallback list (name, country, standard offset); a fixed list keeps the twin
# independent of the host's tz database for validation.
TIMEZONES: tuple[TimezoneInfo, ...] = tuple(
    TimezoneInfo(name, country, offset)
    for name, country, offset in (
        ("UTC", "Universal", 0),
        ("Asia/Shanghai", "China", 28800),
        ("Asia/Tokyo", "Japan", 32400),
        ("Asia/Seoul", "Korea", 32400),
        ("Asia/Singapore", "Singapore", 28800),
        ("Asia/Hong_Kong", "Hong Kong", 28800),
        ("Asia/Taipei", "Taiwan", 28800),
        ("Asia/Dubai", "UAE", 14400),
        ("Europe/London", "UK", 0),
        ("Europe/Paris", "France", 3600),
        ("Europe/Berlin", "Germany", 3600),
        ("Europe/Moscow", "Russia", 10800),
        ("America/New_York", "USA", -18000),
        ("America/Los_Angeles", "USA", -28800),
        ("America/Chicago", "USA", -21600),
        ("Australia/Sydney", "Australia", 36000),
    )
)
_BY_NAME = {tz.name: tz for tz in TIMEZONES}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def parse_rfc3339_wall(value: str) -> datetime:
    """The wall-clock fields of an RFC 3339 string (its offset is required but then dropped:
    the device formats the parsed time in the given offset and hands it to ``timedatectl
    set-time``, which reads it in the device's own timezone)."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        raise ValueError(value)
    parsed = datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    return parsed.replace(tzinfo=None, microsecond=0)


_Change = TypeVar("_Change", bound=Callable[..., Any])


def _durable(change: _Change) -> _Change:
    """Write the clock's state to the store after ``change``, even when it fails part-way, so the
    store always holds what the device now has."""

    @functools.wraps(change)
    def wrapper(clock: DeviceClock, *args: Any, **kwargs: Any) -> Any:
        try:
            return change(clock, *args, **kwargs)
        finally:
            clock.save()

    return cast(_Change, wrapper)


class DeviceClock:
    def __init__(self, world: Engine, owner: str) -> None:
        self.world = world
        self.owner = owner
        self.offset = 0.0
        self.timezone = DEFAULT_TIMEZONE
        self.time_format = "24h"
        self.sync_mode = ""
        self.ntp_enabled = True
        self.ntp_server = DEFAULT_NTP_SERVER
        self.ntp_interval = DEFAULT_NTP_INTERVAL_S
        self.last_sync: float | None = self.now()
        self._docs = world.store.collection(CLOCK_KIND)
        self._apply(self._docs.get(owner) or {})

    # Reading -------------------------------------------------------------------------------
    def now(self) -> float:
        """Unix seconds on the device's clock."""
        return self.world.now() + self.offset

    def _zone(self) -> timezone | ZoneInfo:
        try:
            return ZoneInfo(self.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            return timezone(timedelta(seconds=_BY_NAME[self.timezone].offset_s))

    def local(self, unix: float | None = None) -> datetime:
        return datetime.fromtimestamp(int(self.now() if unix is None else unix), UTC).astimezone(self._zone())

    def read(self, uptime_s: float) -> DeviceTime:
        local = self.local()
        offset = local.utcoffset() or timedelta()
        return DeviceTime(self.now(), self.timezone, int(offset.total_seconds()), int(uptime_s))

    def config(self) -> TimeConfig:
        last = self.local(self.last_sync).strftime("%a %Y-%m-%d %H:%M:%S %Z") if self.last_sync else ""
        return TimeConfig(
            timezone=self.timezone,
            time_format=self.time_format or "24h",
            sync_mode=self.sync_mode or ("ntp" if self.ntp_enabled else "manual"),
            ntp_enabled=self.ntp_enabled,
            ntp_server=self.ntp_server,
            ntp_interval=self.ntp_interval if self.ntp_interval > 0 else DEFAULT_NTP_INTERVAL_S,
            ntp_synced=self.ntp_enabled and self.offset == 0.0,
            last_sync=last,
            fallback_servers=FALLBACK_NTP_SERVERS,
        )

    @staticmethod
    def timezones() -> tuple[TimezoneInfo, ...]:
        return TIMEZONES

    # Changing ------------------------------------------------------------------------------
    def _jump(self, unix: float, reason: str) -> None:
        before = self.now()
        self.offset = unix - self.world.now()
        self.world.emit(EventKind.CAMERA_TIME_SET, self.owner, reason=reason, jump_s=round(unix - before, 3))

    @_durable
    def set_time(self, datetime_: str) -> None:
        try:
            wall = parse_rfc3339_wall(datetime_)
        except ValueError as err:
            raise InvalidInput(
                "Invalid datetime format, use RFC3339 format (e.g., 2024-01-01T12:00:00Z)"
            ) from err
        if self.ntp_enabled:
            raise InvalidInput("Cannot set time manually while NTP is enabled. Disable NTP first.")
        self._jump(wall.replace(tzinfo=self._zone()).timestamp(), "manual_set")

    @_durable
    def sync_from_client(self, client_timestamp: int) -> ClientTimeSync:
        diff = abs(client_timestamp - int(self.now()))
        if diff <= CLIENT_SYNC_THRESHOLD_S:
            return ClientTimeSync(False, diff)
        self._jump(float(client_timestamp), "client_sync")
        return ClientTimeSync(True, diff)

    @_durable
    def set_timezone(self, name: str) -> None:
        if name not in _BY_NAME:
            raise InvalidInput(f"Invalid timezone: {name}")
        self.timezone = name

    @_durable
    def set_ntp(self, enabled: bool | None, server: str, interval: int) -> None:
        if interval < 0:
            raise InvalidInput("interval must be non-negative")
        desired = self.ntp_enabled if enabled is None else enabled
        if desired:
            if server:
                self.ntp_server = server
            self.ntp_enabled = True
            self.sync_ntp()
        else:
            self.ntp_enabled = False
        self.sync_mode = "ntp" if desired else "manual"
        if interval > 0:
            self.ntp_interval = interval

    @_durable
    def sync_ntp(self) -> None:
        """Enable NTP and step the clock back onto world time."""
        self.ntp_enabled = True
        if self.offset != 0.0:
            self._jump(self.world.now(), "ntp_sync")
        self.last_sync = self.now()

    @_durable
    def save_config(
        self,
        timezone_: str,
        time_format: str,
        sync_mode: str,
        ntp_server: str,
        ntp_interval: int,
        manual: str,
    ) -> None:
        if timezone_ not in _BY_NAME:
            raise InvalidInput(f"Invalid timezone: {timezone_}")
        self.timezone = timezone_
        interval = ntp_interval if ntp_interval > 0 else DEFAULT_NTP_INTERVAL_S
        if sync_mode != "manual":
            if ntp_server:
                self.ntp_server = ntp_server
            self.sync_ntp()
        else:
            self.ntp_enabled = False
            if manual:
                try:
                    wall = parse_rfc3339_wall(manual)
                except ValueError as err:
                    raise InvalidInput("Invalid datetime format, use RFC3339") from err
                self._jump(wall.replace(tzinfo=self._zone()).timestamp(), "config_manual_set")
        self.time_format, self.sync_mode, self.ntp_interval = time_format, sync_mode, interval

    # Snapshot ------------------------------------------------------------------------------
    _FIELDS = ("offset", "timezone", "time_format", "sync_mode", "ntp_enabled", "ntp_server", "ntp_interval")

    def state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in (*self._FIELDS, "last_sync")}

    @_durable
    def set_state(self, state: dict[str, Any]) -> None:
        self._apply(state)

    def _apply(self, state: dict[str, Any]) -> None:
        for name in (*self._FIELDS, "last_sync"):
            if name in state:
                setattr(self, name, state[name])

    def save(self) -> None:
        self._docs.put(self.owner, self.state())
