"""Summaries of the trials: a plain-text table for stdout and a JSON-ready dict, and targets to check."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from bench.loadgen import Result


@dataclass(frozen=True)
class Summary:
    """All trials of one load (one row), plus the server's memory after all loads (None: not shown)."""

    name: str
    trials: list[Result]
    rss_mb: float | None

    @property
    def median_rps(self) -> float:
        return statistics.median(t.rps for t in self.trials) if self.trials else math.nan

    @property
    def median_trial(self) -> Result | None:
        """The trial with the median req/s (the lower one of the middle two for an even count)."""
        if not self.trials:
            return None
        ranked = sorted(self.trials, key=lambda t: t.rps)
        return ranked[(len(ranked) - 1) // 2]

    @property
    def median_per_core_second(self) -> float:
        """Median over the trials of req/s per server core-second (NaN when CPU was not measured)."""
        values = [t.per_core_second for t in self.trials if not math.isnan(t.per_core_second)]
        return statistics.median(values) if values else math.nan

    @property
    def median_cores(self) -> float:
        """Median over the trials of the server's busy cores (CPU time over wall time)."""
        values = [t.server_cores for t in self.trials if not math.isnan(t.server_cores)]
        return statistics.median(values) if values else math.nan

    @property
    def non_200(self) -> int:
        return sum(t.non_200 for t in self.trials)

    @property
    def errors(self) -> int:
        return sum(t.errors for t in self.trials)

    def as_dict(self) -> dict[str, Any]:
        median = self.median_trial
        return {
            "median_rps": round(self.median_rps, 1),
            "trials_rps": [round(t.rps, 1) for t in self.trials],
            "p50_ms": _rounded(median.p50_ms if median else math.nan, 3),
            "p99_ms": _rounded(median.p99_ms if median else math.nan, 3),
            "median_per_core_second": _rounded(self.median_per_core_second, 1),
            "median_server_cores": _rounded(self.median_cores, 3),
            "requests": sum(t.requests for t in self.trials),
            "non_200": self.non_200,
            "errors": self.errors,
            "rss_mb": _rounded(self.rss_mb, 1),
        }


def _rounded(value: float | None, digits: int) -> float | None:
    """``round`` that maps None and NaN to None (JSON has no NaN)."""
    if value is None or math.isnan(value):
        return None
    return round(value, digits)


def ratio(twin: Summary, baseline: Summary) -> float:
    """Twin median req/s over baseline median req/s."""
    return twin.median_rps / baseline.median_rps if baseline.median_rps > 0 else math.nan


def core_ratio(twin: Summary, baseline: Summary) -> float:
    """Twin median req/s per server core-second over the baseline's."""
    base = baseline.median_per_core_second
    return twin.median_per_core_second / base if base > 0 else math.nan


@dataclass(frozen=True)
class Target:
    """A goal for one row: ``value`` (already measured) must be ``>=`` or ``<=`` ``limit``."""

    row: str  # the Summary it belongs to
    what: str  # e.g. "ratio to baseline", "p50 ms"
    value: float
    op: str  # ">=" or "<="
    limit: float
    text: str  # how the goal reads, e.g. "≥ 0.50" or "p50 ≤ 15 ms"

    @property
    def passed(self) -> bool:
        """Whether the goal is met; a missing value (NaN) never is."""
        if math.isnan(self.value):
            return False
        return self.value >= self.limit if self.op == ">=" else self.value <= self.limit

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed else "MISS"

    def as_dict(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "value": _rounded(self.value, 4),
            "op": self.op,
            "limit": self.limit,
            "target": self.text,
            "pass": self.passed,
        }


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None or math.isnan(value) else format(value, fmt)


def table(
    summaries: list[Summary],
    header: str,
    ratios: dict[str, float] | None = None,
    targets: list[Target] | None = None,
    core_ratios: dict[str, float] | None = None,
) -> str:
    """The plain-text table printed by ``python -m bench``: one row per summary, with its ratio to the
    baseline (``ratios``, by row name), req/s per server core-second and its ratio to the baseline's
    (``core_ratios``), and its target and verdict (``targets``) where there are any."""
    ratios, core_ratios = ratios or {}, core_ratios or {}
    by_row: dict[str, list[Target]] = {}
    for goal in targets or []:
        by_row.setdefault(goal.row, []).append(goal)
    width = max([10, *(len(s.name) + 2 for s in summaries)])
    columns = (
        f"{'load':<{width}}{'median req/s':>13}  {'trials req/s':<22}{'p50 ms':>8}{'p99 ms':>8}"
        f"{'non-200':>8}{'errors':>7}{'RSS MB':>7}{'cores':>6}{'req/core-s':>11}{'ratio':>7}{'/core':>7}"
        "  target"
    )
    lines = [header, "", columns, "-" * (len(columns) + 16)]
    for s in summaries:
        median = s.median_trial
        trials = " ".join(f"{t.rps:.0f}" for t in s.trials)
        goals = "; ".join(f"{t.text} {t.verdict}" for t in by_row.get(s.name, []))
        lines.append(
            f"{s.name:<{width}}{_cell(s.median_rps, '.1f'):>13}  {trials:<22}"
            f"{_cell(median.p50_ms if median else None, '.2f'):>8}"
            f"{_cell(median.p99_ms if median else None, '.2f'):>8}"
            f"{s.non_200:>8}{s.errors:>7}{_cell(s.rss_mb, '.1f'):>7}{_cell(s.median_cores, '.2f'):>6}"
            f"{_cell(s.median_per_core_second, '.0f'):>11}"
            f"{_cell(ratios.get(s.name), '.3f'):>7}{_cell(core_ratios.get(s.name), '.3f'):>7}"
            + (f"  {goals}" if goals else "")
        )
    return "\n".join(lines)
