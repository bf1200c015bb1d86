"""Expectations: verdicts on the client under test, judged from the request journal and world events.

Each expectation is a strict model (``expect: <kind>`` selects it) with a ``judge`` method that
reads a :class:`RunRecord` and returns a :class:`Verdict`. An expectation whose trigger never
happened (no 429 answered, no stream dropped, no request to its server at all) is inconclusive,
"not exercised": never a pass. When no client ran, every expectation is inconclusive.

The request and journal kinds are here; the firmware and OS-upgrade kinds are in
:mod:`twin.scenario.expect_upgrades`, the stream kind in :mod:`twin.scenario.expect_streams`, and
what they share in :mod:`twin.scenario.expect_base`. This module gathers them into the
:data:`Expectation` union.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from pydantic import Field

from twin.journal import JournalEntry
from twin.scenario.expect_base import Expect, Outcome, RunRecord, Verdict, fmt_entry
from twin.scenario.expect_streams import ReconnectsStream
from twin.scenario.expect_upgrades import PollsOsUpgradeToTerminal, PollsOtaToTerminal

__all__ = [
    "ClientSucceeds",
    "Expectation",
    "HandlesDeletedDevice",
    "HonoursRetryAfter",
    "JournalCount",
    "NoUnknownRoutes",
    "Outcome",
    "PagesComplete",
    "PollsOsUpgradeToTerminal",
    "PollsOtaToTerminal",
    "ReconnectsStream",
    "ReloginAfterSessionsDropped",
    "RequestRate",
    "ResumesWithin",
    "RunRecord",
    "StopsAtNullCursor",
    "Verdict",
    "judge_all",
]


def _query(e: JournalEntry) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(e.query).items()} if e.query else {}


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


class HonoursRetryAfter(Expect):
    """After a 429 with ``Retry-After: N``, the same client's next request to that server comes at
    least N world seconds after the 429 was sent."""

    expect: Literal["honours_retry_after"]
    tolerance: float = Field(default=0.0, ge=0)

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        limited = 0
        for i, e in enumerate(entries):
            if e.status != 429 or e.retry_after is None:
                continue
            limited += 1
            wait = float(e.retry_after)
            nxt = next((n for n in entries[i + 1 :] if n.client == e.client), None)
            if nxt is not None and nxt.at + self.tolerance < e.end + wait:
                early = [n for n in entries[i + 1 :] if n.client == e.client and n.at < e.end + wait]
                return self.verdict(
                    False,
                    f"{fmt_entry(nxt)} came {nxt.at - e.end:g} s after a 429 with "
                    f"Retry-After: {e.retry_after} ({fmt_entry(e)})",
                    early,
                )
        if not limited:
            return self.not_exercised("no 429 with Retry-After was answered")
        return self.verdict(True, f"waited out every Retry-After ({limited} responses with 429)")


class StopsAtNullCursor(Expect):
    """After a telemetry page whose ``next_cursor`` is ``null``, the client does not ask the same
    device for a further page with a ``cursor``."""

    expect: Literal["stops_paging_at_null_cursor"]

    def judge(self, run: RunRecord) -> Verdict:
        last: dict[tuple[str, str], JournalEntry] = {}
        ends = 0
        for e in self.entries(run):
            if not e.route.endswith("/telemetry"):
                continue
            key = (e.client, e.path)
            prev = last.get(key)
            if prev is not None and prev.status == 200 and prev.next_cursor is None and "cursor" in _query(e):
                return self.verdict(False, f"{fmt_entry(e)} asked for another page after a null cursor", [e])
            if e.status == 200 and e.next_cursor is None:
                ends += 1
            last[key] = e
        if not ends:
            return self.not_exercised("no page ended with a null cursor")
        return self.verdict(True, f"stopped at every null cursor ({ends} last pages)")


class PagesComplete(Expect):
    """Every cursor the client sends is the ``next_cursor`` of its previous page of that device, so no
    telemetry point is missed or read twice across pages."""

    expect: Literal["telemetry_pages_complete"]

    def judge(self, run: RunRecord) -> Verdict:
        last: dict[tuple[str, str], JournalEntry] = {}
        chained = 0
        for e in self.entries(run):
            if not e.route.endswith("/telemetry"):
                continue
            key = (e.client, e.path)
            prev = last.get(key)
            cursor = _query(e).get("cursor")
            if cursor is not None:
                expected = prev.next_cursor if prev is not None and prev.status == 200 else None
                if expected is None or not _same(cursor, expected):
                    return self.verdict(
                        False,
                        f"{fmt_entry(e)} sent cursor {cursor} where the previous page said next_cursor "
                        f"{expected!r}: points are missed or read twice",
                        [e],
                    )
                chained += 1
            if e.status == 200:
                last[key] = e
        if not chained:
            return self.not_exercised("no page was requested with a cursor")
        return self.verdict(True, f"{chained} pages chained on next_cursor")


class HandlesDeletedDevice(Expect):
    """Once the device answered 404 (deleted mid-poll), the client stops polling it, or switches to
    ``history=true``; ``max_repeats`` plain requests are tolerated."""

    expect: Literal["handles_deleted_device"]
    device: str
    max_repeats: int = Field(default=0, ge=0)

    def judge(self, run: RunRecord) -> Verdict:
        marker = f"/devices/{self.device}"
        seen_404: JournalEntry | None = None
        repeats: list[JournalEntry] = []
        for e in self.entries(run):
            if marker + "/" not in e.path + "/":
                continue
            if seen_404 is None:
                if e.status == 404:
                    seen_404 = e
                continue
            if _query(e).get("history", "").lower() not in ("true", "1"):
                repeats.append(e)
        if seen_404 is None:
            return self.not_exercised(f"{self.device} never answered 404")
        if len(repeats) > self.max_repeats:
            return self.verdict(
                False,
                f"{len(repeats)} requests for {self.device} after its 404 at t={seen_404.at:g} "
                f"(allowed {self.max_repeats}); first: {fmt_entry(repeats[0])}",
                repeats,
            )
        return self.verdict(True, f"stopped polling {self.device} after its 404 (or asked for history)")


class ReloginAfterSessionsDropped(Expect):
    """After a 401 the client logs in again: at most ``max_unauthorized`` 401s in a row, and the
    last 401 is followed by a login."""

    expect: Literal["relogin_after_sessions_dropped"]
    max_unauthorized: int = Field(default=1, ge=1)

    def judge(self, run: RunRecord) -> Verdict:
        streak: dict[str, int] = defaultdict(int)
        pending: dict[str, JournalEntry] = {}
        seen = 0
        for e in self.entries(run):
            if "login" in e.path:
                streak[e.client] = 0
                pending.pop(e.client, None)
                continue
            if e.status == 401:
                seen += 1
                streak[e.client] += 1
                pending.setdefault(e.client, e)
                if streak[e.client] > self.max_unauthorized:
                    return self.verdict(
                        False,
                        f"{streak[e.client]} 401s in a row without logging in again; last: {fmt_entry(e)}",
                        [e],
                    )
        if pending:
            e = next(iter(pending.values()))
            return self.verdict(False, f"never logged in again after {fmt_entry(e)}", [e])
        if not seen:
            return self.not_exercised("no request was refused with 401")
        return self.verdict(True, f"logged in again after each of {seen} 401 responses")


class ResumesWithin(Expect):
    """After each world event of ``after`` (default: a camera powering up), the client gets a
    successful answer from the server within ``seconds``."""

    expect: Literal["resumes_within"]
    seconds: float = Field(gt=0)
    after: str = "camera.power_up"

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        triggers = [ev.at for ev in run.events if ev.kind.value == self.after]
        for t in triggers:
            ok = any(t <= e.at <= t + self.seconds and 200 <= e.status < 300 for e in entries)
            if not ok and t + self.seconds <= run.end:
                return self.verdict(False, f"no successful request within {self.seconds:g} s of t={t:g}")
        if not triggers:
            return self.not_exercised(f"no {self.after} event")
        return self.verdict(True, f"resumed within {self.seconds:g} s after {len(triggers)} {self.after}")


class NoUnknownRoutes(Expect):
    """The client calls no path that the vendor API does not have."""

    expect: Literal["no_unknown_routes"]
    server: str | None = None

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        if not entries:
            return self.not_exercised(f"no request to {self.server or 'any server'}")
        bad = [e for e in entries if e.route == "unmatched" and e.fault is None]
        if bad:
            first = fmt_entry(bad[0])
            return self.verdict(False, f"{len(bad)} requests to unknown routes; first: {first}", bad)
        return self.verdict(True, f"each of {len(entries)} requests matched a vendor route")


class RequestRate(Expect):
    """At most ``max`` requests in any window of ``per`` world seconds."""

    expect: Literal["request_rate"]
    max: int = Field(ge=1)
    per: float = Field(default=1.0, gt=0)

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        times = [e.at for e in entries]
        if not times:
            return self.not_exercised(f"no request to {self.server or 'any server'}")
        lo, peak, at, window = 0, 0, 0.0, (0, 0)
        for hi, t in enumerate(times):
            while times[lo] <= t - self.per:
                lo += 1
            if hi - lo + 1 > peak:
                peak, at, window = hi - lo + 1, t, (lo, hi + 1)
        if peak > self.max:
            busiest = entries[window[0] : window[1]]
            message = f"{peak} requests in {self.per:g} s at t={at:g} (bound {self.max})"
            return self.verdict(False, message, busiest)
        return self.verdict(True, f"peak {peak} requests per {self.per:g} s (bound {self.max})")


class JournalCount(Expect):
    """A generic journal assertion: the number of matching requests is within [min, max]. With
    ``min`` 0 it is not exercised while the client sent nothing to ``server``: a bound on what a
    client did needs a client that did something there."""

    expect: Literal["journal"]
    server: str | None = None
    method: str | None = None
    route: str | None = None
    path_prefix: str | None = None
    status: int | None = None
    between: tuple[float, float] | None = Field(default=None, description="[from, to] sim seconds")
    min: int = Field(default=0, ge=0)
    max: int | None = Field(default=None, ge=0)

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        if not entries and self.min == 0:
            return self.not_exercised(f"no request to {self.server or 'any server'}")
        count = 0
        for e in entries:
            if self.method is not None and e.method != self.method.upper():
                continue
            if self.route is not None and e.route != self.route:
                continue
            if self.path_prefix is not None and not e.path.startswith(self.path_prefix):
                continue
            if self.status is not None and e.status != self.status:
                continue
            if self.between is not None and not self.between[0] <= e.at <= self.between[1]:
                continue
            count += 1
        ok = count >= self.min and (self.max is None or count <= self.max)
        bound = f"[{self.min}, {'inf' if self.max is None else self.max}]"
        return self.verdict(ok, f"{count} matching requests (expected {bound})")


class ClientSucceeds(Expect):
    """The client under test exits with status 0 on its own before the run ends: stricter than the
    scenario's ``client.expect_exit``, which lets a client still running at the stop time be."""

    expect: Literal["client_succeeds"]

    def judge(self, run: RunRecord) -> Verdict:
        if run.client_exit is None:
            return self.not_exercised("no client ran")
        if run.client_stopped:
            return self.verdict(False, "the client was still running at the stop time")
        return self.verdict(run.client_exit == 0, f"client exit status {run.client_exit}")


Expectation = Annotated[
    HonoursRetryAfter
    | StopsAtNullCursor
    | PagesComplete
    | HandlesDeletedDevice
    | ReloginAfterSessionsDropped
    | ResumesWithin
    | NoUnknownRoutes
    | RequestRate
    | JournalCount
    | PollsOtaToTerminal
    | PollsOsUpgradeToTerminal
    | ReconnectsStream
    | ClientSucceeds,
    Field(discriminator="expect"),
]


def judge_all(expectations: list[Any], run: RunRecord) -> list[Verdict]:
    if not run.client_ran:
        return [exp.not_exercised("no client ran") for exp in expectations]
    return [exp.judge(run) for exp in expectations]
