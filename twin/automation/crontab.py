"""Cron expressions for agent schedules: 5 fields (minute hour day month weekday), or 6/7 with a
leading seconds field (and a trailing year, accepted and ignored), evaluated in a timezone.

Fields take ``*``, ``a``, ``a-b``, ``*/n``, ``a-b/n`` and lists of those; months and weekdays also
take three-letter names; weekday 0 and 7 are Sunday. When both day fields are restricted a day
matches either (the classic cron rule).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
SEARCH_DAYS = 366 * 5


def _value(token: str, names: tuple[str, ...], base: int) -> int:
    lowered = token.lower()
    if lowered in names:
        return names.index(lowered) + base
    if not token.isdigit():
        raise ValueError(f"bad value {token!r}")
    return int(token)


def _field(text: str, lo: int, hi: int, names: tuple[str, ...] = (), base: int = 0) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step_text and (not step_text.isdigit() or step < 1):
            raise ValueError(f"bad step in {part!r}")
        if rng in ("*", "?"):
            a, b = lo, hi
        elif "-" in rng:
            a_text, b_text = rng.split("-", 1)
            a, b = _value(a_text, names, base), _value(b_text, names, base)
        else:
            a = _value(rng, names, base)
            b = hi if step_text else a
        if not lo <= a <= hi or not lo <= b <= hi or a > b:
            raise ValueError(f"{part!r} is outside {lo}-{hi}")
        values.update(range(a, b + 1, step))
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class CronExpression:
    text: str
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    day_any: bool
    weekday_any: bool
    zone: ZoneInfo | None

    @classmethod
    def parse(cls, text: str, timezone: str | None = None) -> CronExpression:
        parts = text.split()
        if len(parts) == 5:
            parts = ["0", *parts]
        elif len(parts) == 7:
            parts = parts[:6]
        elif len(parts) != 6:
            raise ValueError(f"expected 5, 6 or 7 fields, got {len(parts)}")
        try:
            zone = ZoneInfo(timezone) if timezone else None
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise ValueError(f"unknown timezone {timezone!r}") from err
        weekdays = _field(parts[5], 0, 7, DAYS)
        return cls(
            text=text,
            seconds=_field(parts[0], 0, 59),
            minutes=_field(parts[1], 0, 59),
            hours=_field(parts[2], 0, 23),
            days=_field(parts[3], 1, 31),
            months=_field(parts[4], 1, 12, MONTHS, 1),
            weekdays=frozenset(d % 7 for d in weekdays),
            day_any=parts[3] in ("*", "?"),
            weekday_any=parts[5] in ("*", "?"),
            zone=zone,
        )

    def _day_ok(self, t: datetime) -> bool:
        dom = t.day in self.days
        dow = (t.weekday() + 1) % 7 in self.weekdays
        if self.day_any or self.weekday_any:
            return dom and dow
        return dom or dow

    def next_after(self, unix: float) -> float:
        """The first matching instant strictly after ``unix`` (Unix seconds)."""
        zone = self.zone or UTC
        t = datetime.fromtimestamp(int(unix) + 1, zone).replace(tzinfo=None)
        limit = t + timedelta(days=SEARCH_DAYS)
        while t < limit:
            if t.month not in self.months:
                t = (t.replace(day=1) + timedelta(days=32)).replace(day=1, hour=0, minute=0, second=0)
            elif not self._day_ok(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0, second=0)
            elif t.hour not in self.hours:
                t = (t + timedelta(hours=1)).replace(minute=0, second=0)
            elif t.minute not in self.minutes:
                t = (t + timedelta(minutes=1)).replace(second=0)
            else:
                later = [s for s in sorted(self.seconds) if s >= t.second]
                if later:
                    return t.replace(second=later[0], tzinfo=zone).timestamp()
                t = (t + timedelta(minutes=1)).replace(second=0)
        raise ValueError(f"{self.text!r} never matches")


def describe(cron: CronExpression) -> str:
    zone = f" ({cron.zone.key})" if cron.zone else " (UTC)"
    return f"cron '{cron.text}'{zone}"
