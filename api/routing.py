"""Routing shared by the vendor apps: vendor path syntax, flat mounting, the vendors' matching
order, and area dispatch.

Both vendors' routers (axum, gin) prefer a literal segment over a parameter; FastAPI takes the
first registered match, so routes are sorted by :func:`specificity`. Matching hundreds of routes
in one linear scan costs about 1 ms a request; grouped by area (``/api/devices``,
``/api/v1/system``) a request tests a few dozen string prefixes, then its own area.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Receive, Scope, Send


# Vendor path syntax (``/devices/:id``, wildcard ``*path``) <-> FastAPI (``{id}``, ``{path:path}``) --
def shape_of(path: str) -> str:
    """A path with every parameter blanked, in vendor or FastAPI syntax: ``/api/devices/{}``."""
    path = re.sub(r"\{[^}/]+:path\}|\*[A-Za-z_]+", "{*}", path)
    return re.sub(r"(?<=/):[A-Za-z_]+|\{[^}/*]+\}", "{}", path)


def to_fastapi(path: str) -> str:
    path = re.sub(r"\*([A-Za-z_]+)", r"{\1:path}", path)
    return re.sub(r"(?<=/):([A-Za-z_]+)", r"{\1}", path)


def to_vendor(path: str) -> str:
    path = re.sub(r"\{([A-Za-z_]+):path\}", r"*\1", path)
    return re.sub(r"\{([A-Za-z_]+)\}", r":\1", path)


# Mounting and order ----------------------------------------------------------------------------
def mount(app: FastAPI, router: APIRouter, prefix: str = "") -> None:
    """Add ``router``'s routes to ``app`` as plain routes under ``prefix``, router-level dependencies
    included, so every route is a plain ``APIRoute`` (for route tables, OpenAPI and matching order)."""
    for route in router.routes:
        if isinstance(route, APIRoute):
            extra = [d for d in route.dependencies if d not in router.dependencies]
            app.add_api_route(
                prefix + route.path,
                route.endpoint,
                methods=sorted(route.methods),
                dependencies=[*router.dependencies, *extra],
                status_code=route.status_code,
                tags=route.tags or router.tags,
                summary=route.summary,
                description=route.description,
                response_class=route.response_class,
                include_in_schema=route.include_in_schema,
                name=route.name,
            )
        elif isinstance(route, APIWebSocketRoute):
            app.add_api_websocket_route(
                prefix + route.path,
                route.endpoint,
                name=route.name,
                dependencies=[*router.dependencies, *route.dependencies],
            )
        else:
            raise TypeError(f"cannot mount {route!r}")


def specificity(path: str) -> tuple[int, ...]:
    """Sort key giving the vendors' matching order: at each segment a literal beats a parameter,
    which beats a wildcard."""
    ranks = []
    for segment in path.strip("/").split("/"):
        if segment.endswith(":path}"):
            ranks.append(2)
        elif segment.startswith("{"):
            ranks.append(1)
        else:
            ranks.append(0)
    return (*ranks, -len(ranks))


def finish(app: FastAPI, area_depth: int) -> None:
    """Sort every route into the vendor's matching order, keep the flat list on
    ``app.state.routes`` and dispatch by area (the first ``area_depth`` path segments)."""
    app.router.routes.sort(key=lambda route: specificity(getattr(route, "path", "")))
    app.state.routes = tuple(app.router.routes)
    app.router.routes[:] = group_by_area(app.state.routes, area_depth)


# Area dispatch -----------------------------------------------------------------------------------
def area_of(path: str, depth: int) -> str:
    """``area_of("/api/devices/{id}", 2)`` → ``/api/devices``; shorter paths are their own area."""
    parts = path.split("/")
    return "/".join(parts[: depth + 1]) if len(parts) > depth + 1 else path


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


def group_by_area(routes: Sequence[BaseRoute], depth: int) -> list[BaseRoute]:
    areas: dict[str, list[BaseRoute]] = {}
    for route in routes:
        areas.setdefault(area_of(getattr(route, "path", ""), depth), []).append(route)
    return [AreaRoutes(prefix, members) for prefix, members in areas.items()]


# Routes the twin does not simulate yet ---------------------------------------------------------
def served(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path shape) of every HTTP route ``app`` serves so far."""
    return {(m, shape_of(r.path)) for r in app.routes if isinstance(r, APIRoute) for m in r.methods}


def fallback_routes(
    app: FastAPI, routes: Sequence[tuple[str, tuple[str, ...], list, bool]], endpoint, prefix: str = ""
) -> list[APIRoute]:
    """One ``endpoint`` route per catalogued ``(vendor path, methods, dependencies, in_schema)`` that
    ``app`` does not serve yet (``prefix`` + vendor path); add them after every real router. Each is
    built once, with its full path, and added as it is."""
    done = served(app)
    out = []
    for path, methods, dependencies, in_schema in routes:
        full = prefix + path
        shape = shape_of(full)
        missing = [m for m in methods if (m, shape) not in done]
        if missing:
            route = APIRoute(
                to_fastapi(full),
                endpoint,
                methods=missing,
                dependencies=dependencies,
                include_in_schema=in_schema,
                name=f"not_simulated:{path}",
                tags=["not simulated"],
            )
            out.append(route)
            done.update((m, shape) for m in missing)
    return out
