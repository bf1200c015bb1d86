"""Area dispatch: ~340 routes matched in one linear scan cost ~1 ms a request; grouped by their
first segment after ``/api`` a request tests a few dozen string prefixes, then its own area."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Router
from starlette.types import Receive, Scope, Send


def area_of(path: str) -> str:
    """``/api/devices/{device_id}`` → ``/api/devices``; other paths are their own area."""
    parts = path.split("/", 3)
    return "/".join(parts[:3]) if len(parts) > 2 and parts[1] == "api" else path


class AreaRoutes(BaseRoute):
    """The routes of one area behind one cheap prefix test, in their original order."""

    def __init__(self, prefix: str, routes: Sequence[BaseRoute]) -> None:
        self.prefix = prefix
        self.routes = list(routes)
        self._router = Router(routes=self.routes, redirect_slashes=False)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if path == self.prefix or path.startswith(self.prefix + "/"):
            return Match.FULL, {}
        return Match.NONE, {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._router.app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: str):  # pragma: no cover - names are not used
        return self._router.url_path_for(name, **path_params)


def group_by_area(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    areas: dict[str, list[BaseRoute]] = {}
    for route in routes:
        areas.setdefault(area_of(getattr(route, "path", "")), []).append(route)
    return [AreaRoutes(prefix, members) for prefix, members in areas.items()]
