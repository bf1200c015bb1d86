"""The simulated app's route table, for an app that serves a member in its place (a passthrough, a
replay): each request is named by the route the simulated app would have matched, so the journal
and the scenario verdicts read it alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Scope, Send

MATCHED_PATHS = 4096
"""Paths whose matching route is kept; past it the cache starts again."""


class RouteNames:
    def __init__(self, routes: Sequence[BaseRoute] = ()) -> None:
        self.routes = tuple(routes)
        self._matched: dict[tuple[str, str, str], BaseRoute | None] = {}

    def name(self, scope: Scope) -> None:
        """Leave the matching route in the scope (for the journal's template), found once per kind,
        method and path rather than trying every route's pattern on every request."""
        key = (scope["type"], scope.get("method", ""), scope["path"])
        try:
            route = self._matched[key]
        except KeyError:
            route = self._find(scope)
            if len(self._matched) >= MATCHED_PATHS:
                self._matched.clear()
            self._matched[key] = route
        if route is not None:
            scope["route"] = route

    def _find(self, scope: Scope) -> BaseRoute | None:
        partial = None
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route
            if match is Match.PARTIAL and partial is None:
                partial = route
        return partial


class StandIn:
    """An app that serves a member in place of its simulated app (a passthrough, a replay). The
    twin's layers wrap it as they wrap a simulated app: ``add_middleware`` composes them around it,
    the last added outermost, as in Starlette. Each HTTP request or WebSocket is named by its route
    in ``routes`` (the simulated app's), then answered by ``_http`` or ``_websocket``."""

    def __init__(self, routes: Sequence[BaseRoute] = ()) -> None:
        self.routes = RouteNames(routes)
        self._stack: ASGIApp = self._serve

    def add_middleware(self, middleware: Any, **options: Any) -> None:
        self._stack = middleware(self._stack, **options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._stack(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return
        self.routes.name(scope)
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self._http(scope, receive, send)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError
