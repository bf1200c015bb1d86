"""Expectations: verdicts on the client under test, judged from the request journal and world events.

Each expectation is a strict model (``expect: <kind>`` selects it) with a ``judge`` method that
reads a :class:`RunRecord` and returns a :class:`Verdict`. An expectation whose trigger never
happened passes, and says so ("not exercised"), so a report never hides a vacuous pass.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field

from api.realtime.mqtt import MqttSession
from hardware.ports.events import Event
from twin.journal import JournalEntry


@dataclass(frozen=True, slots=True)
class RunRecord:
    journal: list[JournalEntry]
    events: list[Event]
    end: float
    client_exit: int | None = None
    actions: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    mqtt: list[MqttSession] = field(default_factory=list)
    """Client sessions on the embedded MQTT broker (the twin's own bridge left out)."""
    broker_outages: list[tuple[float, float | None]] = field(default_factory=list)
    """``(down, up)`` per time the embedded broker went away (``up`` ``None``: not back)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    passed: bool
    message: str


def _fmt(e: JournalEntry) -> str:
    query = f"?{e.query}" if e.query else ""
    return f"t={e.at:g} {e.method} {e.path}{query} -> {e.status or 'closed'}"


def _query(e: JournalEntry) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(e.query).items()} if e.query else {}


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


class _Expect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="shown in reports; default: the kind")
    server: str | None = Field(default="automation", description="'automation', a camera id, or null for all")

    @property
    def label(self) -> str:
        return self.name or self.expect  # type: ignore[attr-defined]

    def entries(self, run: RunRecord) -> list[JournalEntry]:
        return [e for e in run.journal if self.server is None or e.server == self.server]

    def verdict(self, passed: bool, message: str) -> Verdict:
        return Verdict(self.label, passed, message)


class HonoursRetryAfter(_Expect):
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
                return self.verdict(
                    False,
                    f"{_fmt(nxt)} came {nxt.at - e.end:g} s after a 429 with Retry-After: {e.retry_after} "
                    f"({_fmt(e)})",
                )
        if not limited:
            return self.verdict(True, "not exercised: no 429 with Retry-After was answered")
        return self.verdict(True, f"waited out every Retry-After ({limited} responses with 429)")


class StopsAtNullCursor(_Expect):
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
                return self.verdict(False, f"{_fmt(e)} asked for another page after a null cursor")
            if e.status == 200 and e.next_cursor is None:
                ends += 1
            last[key] = e
        if not ends:
            return self.verdict(True, "not exercised: no page ended with a null cursor")
        return self.verdict(True, f"stopped at every null cursor ({ends} last pages)")


class PagesComplete(_Expect):
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
                        f"{_fmt(e)} sent cursor {cursor} where the previous page said next_cursor "
                        f"{expected!r}: points are missed or read twice",
                    )
                chained += 1
            if e.status == 200:
                last[key] = e
        if not chained:
            return self.verdict(True, "not exercised: no page was requested with a cursor")
        return self.verdict(True, f"{chained} pages chained on next_cursor")


class HandlesDeletedDevice(_Expect):
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
            return self.verdict(True, f"not exercised: {self.device} never answered 404")
        if len(repeats) > self.max_repeats:
            return self.verdict(
                False,
                f"{len(repeats)} requests for {self.device} after its 404 at t={seen_404.at:g} "
                f"(allowed {self.max_repeats}); first: {_fmt(repeats[0])}",
            )
        return self.verdict(True, f"stopped polling {self.device} after its 404 (or asked for history)")


class ReloginAfterSessionsDropped(_Expect):
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
                        False, f"{streak[e.client]} 401s in a row without logging in again; last: {_fmt(e)}"
                    )
        if pending:
            e = next(iter(pending.values()))
            return self.verdict(False, f"never logged in again after {_fmt(e)}")
        if not seen:
            return self.verdict(True, "not exercised: no request was refused with 401")
        return self.verdict(True, f"logged in again after each of {seen} 401 responses")


class ResumesWithin(_Expect):
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
            return self.verdict(True, f"not exercised: no {self.after} event")
        return self.verdict(True, f"resumed within {self.seconds:g} s after {len(triggers)} {self.after}")


class NoUnknownRoutes(_Expect):
    """The client calls no path that the vendor API does not have."""

    expect: Literal["no_unknown_routes"]
    server: str | None = None

    def judge(self, run: RunRecord) -> Verdict:
        bad = [e for e in self.entries(run) if e.route == "unmatched" and e.fault is None]
        if bad:
            return self.verdict(False, f"{len(bad)} requests to unknown routes; first: {_fmt(bad[0])}")
        return self.verdict(True, "every request matched a vendor route")


class RequestRate(_Expect):
    """At most ``max`` requests in any window of ``per`` world seconds."""

    expect: Literal["request_rate"]
    max: int = Field(ge=1)
    per: float = Field(default=1.0, gt=0)

    def judge(self, run: RunRecord) -> Verdict:
        times = [e.at for e in self.entries(run)]
        lo, peak, at = 0, 0, 0.0
        for hi, t in enumerate(times):
            while times[lo] <= t - self.per:
                lo += 1
            if hi - lo + 1 > peak:
                peak, at = hi - lo + 1, t
        if peak > self.max:
            return self.verdict(False, f"{peak} requests in {self.per:g} s at t={at:g} (bound {self.max})")
        return self.verdict(True, f"peak {peak} requests per {self.per:g} s (bound {self.max})")


class JournalCount(_Expect):
    """A generic journal assertion: the number of matching requests is within [min, max]."""

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
        if run.client_exit is None and not run.journal:
            return self.verdict(True, "not exercised: no client ran")
        count = 0
        for e in self.entries(run):
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


class PollsOtaToTerminal(_Expect):
    """After starting a firmware install, the client polls ``ota/status`` until a terminal state
    (``failed``, or ``reboot_confirmed`` after the reboot a successful install ends with): its last
    poll after the last install it started saw one."""

    expect: Literal["polls_ota_to_terminal"]
    server: str | None = "cam-01"
    terminal: tuple[str, ...] = ("failed", "reboot_confirmed")

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        starts = [
            i
            for i, e in enumerate(entries)
            if e.method == "POST" and "/ota/install" in e.path and 200 <= e.status < 300
        ]
        if not starts:
            return self.verdict(True, "not exercised: no OTA install was started")
        polls = [e for e in entries[starts[-1] + 1 :] if e.route.endswith("/ota/status") and e.status == 200]
        if not polls:
            return self.verdict(False, "never polled ota/status after starting the install")
        last = polls[-1]
        if last.state not in self.terminal:
            return self.verdict(
                False,
                f"stopped polling while the install was {last.state!r} ({_fmt(last)}); "
                f"terminal: {', '.join(self.terminal)}",
            )
        return self.verdict(True, f"polled to {last.state!r} in {len(polls)} polls")


class PollsOsUpgradeToTerminal(_Expect):
    """After starting an OS-upgrade install, the client follows the job through its reboot to a
    terminal state (``success``, ``rollback``, ``failed`` or ``cancelled``): its last
    ``os-upgrade/status`` poll after the last install it started saw one. When the camera
    rebooted meanwhile, the client came back: it got a successful answer from the camera after
    it powered up again (within ``reconnect_within`` seconds, when given)."""

    expect: Literal["polls_os_upgrade_to_terminal"]
    server: str | None = "cam-01"
    terminal: tuple[str, ...] = ("success", "rollback", "failed", "cancelled")
    reconnect_within: float | None = Field(default=None, gt=0, description="seconds after the camera is back")

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        starts = [
            i
            for i, e in enumerate(entries)
            if e.method == "POST" and e.route.endswith("/os-upgrade/install") and 200 <= e.status < 300
        ]
        if not starts:
            return self.verdict(True, "not exercised: no OS-upgrade install was started")
        start = entries[starts[-1]]
        after = entries[starts[-1] + 1 :]
        ups = [
            ev.at
            for ev in run.events
            if ev.kind.value == "camera.power_up"
            and ev.at >= start.at
            and (self.server is None or ev.source == self.server)
        ]
        for up in ups:
            deadline = run.end if self.reconnect_within is None else up + self.reconnect_within
            if deadline > run.end:
                continue  # came back too late in the run to judge
            back = next((e for e in after if e.at >= up and 200 <= e.status < 300), None)
            if back is None:
                return self.verdict(False, f"no successful request after the camera came back at t={up:g}")
            if back.at > deadline:
                return self.verdict(
                    False,
                    f"first successful request {back.at - up:g} s after the camera came back at t={up:g} "
                    f"(allowed {self.reconnect_within:g}): {_fmt(back)}",
                )
        polls = [e for e in after if e.route.endswith("/os-upgrade/status") and e.status == 200]
        if not polls:
            return self.verdict(False, "never polled os-upgrade/status after starting the install")
        last = polls[-1]
        if last.state not in self.terminal:
            return self.verdict(
                False,
                f"stopped polling while the upgrade was {last.state!r} ({_fmt(last)}); "
                f"terminal: {', '.join(self.terminal)}",
            )
        rebooted = f", back after {len(ups)} reboot{'s' if len(ups) != 1 else ''}" if ups else ""
        return self.verdict(True, f"polled to {last.state!r} in {len(polls)} polls{rebooted}")


@dataclass(frozen=True, slots=True)
class _Stream:
    """One stream the client had, whatever its transport, as reconnect judging sees it."""

    transport: str
    key: str
    """What a reconnect must match: the route (WS, SSE) or the MQTT client id."""
    at: float
    end: float | None
    opened: bool
    """The server took it (WS 101, an SSE response, an MQTT session)."""
    dropped: bool
    """It ended without the client choosing to (MQTT only tells; WS and SSE ends all count)."""
    ready: float | None = None
    """When reconnecting became possible again (the broker back after an outage); ``None``: never."""


class ReconnectsStream(_Expect):
    """A stream the client had open that went away is followed by a new attempt within ``seconds``,
    and the client has a stream again before the run ends (unless the drop came too late to
    judge). ``transport`` picks what is judged: WebSockets (journal method ``WS``), Server-Sent
    Events (journalled event-stream responses) on ``server``, MQTT sessions on the embedded broker
    (every client but the twin's own bridge; ``server`` does not apply), or all three. For WS and
    SSE every end counts as a drop, and an attempt is any request to the same route; an MQTT
    session counts only if the client did not disconnect itself, the attempt is a new connection
    with the same client id, and after a broker outage the ``seconds`` run from the broker's
    return. Streams still open when the run ended are not drops."""

    expect: Literal["reconnects_stream"]
    server: str | None = "cam-01"
    seconds: float = Field(default=10.0, gt=0)
    route_suffix: str = Field(default="", description="only WS/SSE streams whose route ends with this")
    transport: Literal["ws", "sse", "mqtt", "any"] = Field(
        default="any", description="which streams are judged"
    )

    def _streams(self, run: RunRecord) -> list[_Stream]:
        """Every stream and every attempt at one, oldest first."""
        out: list[_Stream] = []
        if self.transport != "mqtt":
            entries = [e for e in self.entries(run) if e.route.endswith(self.route_suffix)]
            sse = {e.route for e in entries if e.stream} if self.transport != "ws" else set()
            for e in entries:
                if e.method == "WS" and self.transport != "sse":
                    out.append(_Stream("WS", e.route, e.at, e.end, e.status == 101, True, e.end))
                elif e.method == "GET" and e.route in sse:
                    out.append(_Stream("SSE", e.route, e.at, e.end, e.stream, True, e.end))
        if self.transport in ("mqtt", "any"):
            for m in run.mqtt:
                ready = m.end
                for down, up in run.broker_outages:
                    if m.end is not None and down <= m.end and (up is None or m.end <= up):
                        ready = up
                out.append(_Stream("MQTT", m.client_id, m.at, m.end, True, m.clean is False, ready))
        return out

    def judge(self, run: RunRecord) -> Verdict:
        streams = self._streams(run)
        drops = 0
        for s in streams:
            if not s.opened or not s.dropped or s.end is None or s.ready is None:
                continue  # refused, closed by the client, still open, or nothing to reconnect to
            if s.ready + self.seconds > run.end:
                continue
            drops += 1
            attempts = [
                n
                for n in streams
                if n is not s and (n.transport, n.key) == (s.transport, s.key) and n.at >= s.end
            ]
            if not attempts or min(n.at for n in attempts) > s.ready + self.seconds:
                since = f"the drop at t={s.end:g}"
                if s.ready > s.end:
                    since += f" (possible again from t={s.ready:g})"
                why = f"no new {s.transport} connection within {self.seconds:g} s of {since}"
                return self.verdict(False, why)
            if not any(n.opened for n in attempts):
                why = f"never had its {s.transport} stream back after the drop at t={s.end:g}"
                return self.verdict(False, why)
        if not drops:
            return self.verdict(True, f"not exercised: no {self._kinds()} stream was dropped")
        plural = "s" if drops != 1 else ""
        return self.verdict(True, f"reconnected after {drops} dropped {self._kinds()} stream{plural}")

    def _kinds(self) -> str:
        return "WS/SSE/MQTT" if self.transport == "any" else self.transport.upper()


class ClientSucceeds(_Expect):
    """The client under test exits with status 0 (not killed at the stop time)."""

    expect: Literal["client_succeeds"]

    def judge(self, run: RunRecord) -> Verdict:
        if run.client_exit is None:
            return self.verdict(True, "not exercised: no client ran")
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
    return [exp.judge(run) for exp in expectations]
