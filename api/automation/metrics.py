"""HTTP request counters for ``/api/metrics``: a pure ASGI middleware over the automation app.

Requests are counted by method, matched route *template* (``/api/devices/{device_id}``, never the raw
path, so cardinality stays bounded) and response status. Unmatched paths share one label value.
"""

from __future__ import annotations

from collections import Counter

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"


class HttpCounters:
    """``(method, route, status) -> count``; owned by one app."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, int]] = Counter()

    def inc(self, method: str, route: str, status: int) -> None:
        self._counts[(method, route, status)] += 1

    def items(self) -> list[tuple[tuple[str, str, int], int]]:
        return sorted(self._counts.items())

    def total(self) -> int:
        return sum(self._counts.values())


def counters_of(app: FastAPI) -> HttpCounters:
    """The app's counters, made on first use and kept on ``app.state``."""
    counters = getattr(app.state, "http_counters", None)
    if counters is None:
        counters = app.state.http_counters = HttpCounters()
    return counters


class RequestMetrics:
    def __init__(self, app: ASGIApp, counters: HttpCounters) -> None:
        self.app = app
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # an exception escaping the app becomes a 500 further out

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self.counters.inc(scope["method"], route_template(scope), status)


def route_template(scope: Scope) -> str:
    """The matched route's template, which the router leaves in the (shared) scope dict.

    A route reached through an included router carries its path without the router's prefix; the
    prefix is then the leading segments of the raw path that the template does not cover.
    """
    template = getattr(scope.get("route"), "path", None)
    if not template:
        return UNMATCHED
    raw = scope.get("path", "")
    missing = raw.count("/") - template.count("/")
    if missing > 0 and ":path}" not in template:
        return "/".join(raw.split("/")[: missing + 1]) + template
    return template
