"""The stream expectation: a WebSocket, Server-Sent Events or MQTT stream that went away is
reconnected in time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from twin.scenario.expect_base import Expect, RunRecord, Verdict


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


class ReconnectsStream(Expect):
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
            return self.not_exercised(f"no {self._kinds()} stream was dropped")
        plural = "s" if drops != 1 else ""
        return self.verdict(True, f"reconnected after {drops} dropped {self._kinds()} stream{plural}")

    def _kinds(self) -> str:
        return "WS/SSE/MQTT" if self.transport == "any" else self.transport.upper()
