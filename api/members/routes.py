"""The simulated app's route table, for an app that serves a member in its place (a passthrough, a
replay): each request is named by the route the simulated app would have matched, so the journal
and the scenario verdicts read it alike."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import Scope

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
