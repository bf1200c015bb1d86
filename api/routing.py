"""Routing shared by the vendor apps: vendor path syntax, flat mounting, the vendors' matching
order, and area dispatch.

Both vendors' routers (axum, gin) prefer a literal segment over a parameter; FastAPI takes the
first registered match, so routes are sorted by :func:`specificity`. Matching hundreds of routes
in one linear scan costs about 1 ms a request; grouped by area (``/api/devices``,
``/api/v1/system``) a request finds its area with one dict lookup, then scans only that area.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, get_args

from fastapi import APIRouter, FastAPI, params
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute, APIWebSocketRoute
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Router, request_response
from starlette.types import Receive, Scope, Send

from api import json_input

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False}
"""FastAPI's OpenTelemetry hooks, off: the twin does not export traces, and checking on every request
whether a provider was configured costs a few percent of a device lookup."""


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
            app.router.add_api_route(
                prefix + route.path,
                route.endpoint,
                methods=sorted(route.methods or ()),
                dependencies=[*router.dependencies, *extra],
                status_code=route.status_code,
                tags=route.tags or router.tags,
                summary=route.summary,
                description=route.description,
                response_class=route.response_class,
                include_in_schema=route.include_in_schema,
                name=route.name,
                route_class_override=LeanRoute,
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


# Lean operations -----------------------------------------------------------------------------
class LeanRoute(APIRoute):
    """An ``APIRoute`` that calls a simple operation directly instead of through FastAPI's general
    request handler (body parsing, parameter validation, dependency solving), which costs more
    than the twin's whole device lookup.

    Simple means: no body, query, header or cookie parameters; path parameters typed ``str`` (so
    there is nothing to validate); ``async def`` dependencies (no ``yield``, no thread pool) that
    take only the request, ``str`` path parameters and other simple dependencies. Those are called
    in FastAPI's order (router-level dependencies first), each once per request, like FastAPI's
    dependency cache. Anything else keeps FastAPI's handler. OpenAPI is built from the same
    ``dependant`` either way.

    A JSON body (an operation with a body parameter) is decoded by the app's JSON policy
    (``app.state.json_policy``, :mod:`api.json_input`) before FastAPI validates it.
    """

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.lean = (
            self.body_field is None and self.status_code in (None, 200, 201) and _simple(self.dependant)
        )
        if self.lean:
            self.lean_handler = self._lean_handler()
            self.app = request_response(self.lean_handler)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None or isinstance(self.body_field.field_info, params.Form):
            return handler
        declared = _declared_fields(self.body_field.field_info.annotation)

        async def decoded(request: Request) -> Response:
            policy = getattr(request.app.state, "json_policy", None)
            if policy is not None and json_input.is_json_type(request.headers.get("content-type", "")):
                await _decode_json(request, policy, declared)
            return await handler(request)

        return decoded

    def _lean_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        dependant, status_code = self.dependant, self.status_code or 200
        response_class = self.response_class
        if isinstance(response_class, DefaultPlaceholder):
            response_class = response_class.value

        call = _plan(dependant)

        async def handler(request: Request) -> Response:
            result = await call(request)
            if isinstance(result, Response):
                return result
            return response_class(jsonable_encoder(result), status_code=status_code)

        return handler


def _declared_fields(annotation: Any) -> frozenset[str]:
    """The top-level fields (names and aliases) of a body model, or of each model in a union."""
    models = [a for a in (get_args(annotation) or (annotation,)) if isinstance(a, type)]
    return frozenset(
        key
        for model in models
        if issubclass(model, BaseModel)
        for name, field in model.model_fields.items()
        for key in (name, field.alias or name)
    )


async def _decode_json(request: Request, policy: json_input.JsonPolicy, declared: frozenset[str]) -> None:
    """Decode the body by ``policy`` and leave the value where ``Request.json()`` finds it, so
    FastAPI validates it instead of decoding the body again. A refusal is FastAPI's own
    ``json_invalid``; a declared field repeated at the top level, serde's ``duplicate field``."""
    raw = await request.body()
    if not raw:
        return
    try:
        value = json_input.loads(raw, policy)
    except ValueError as err:
        error = {"type": "json_invalid", "loc": ("body", 0), "msg": "JSON decode error", "input": {}}
        raise RequestValidationError([{**error, "ctx": {"error": str(err)}}]) from err
    if policy.refuses_repeated_fields and declared and isinstance(value, dict):
        repeated = json_input.top_level_repeats(raw, declared)
        if repeated:
            name = min(repeated)
            error = {"type": "duplicate_field", "loc": ("body", name), "msg": f"duplicate field `{name}`"}
            raise RequestValidationError([{**error, "input": None}])
    request._json = value  # Starlette's cache of Request.json()


def _simple(dependant: Dependant) -> bool:
    return (
        not (dependant.query_params or dependant.header_params or dependant.cookie_params)
        and not dependant.body_params
        and all(p.field_info.annotation is str for p in dependant.path_params)
        and not (
            dependant.websocket_param_name
            or dependant.http_connection_param_name
            or dependant.response_param_name
            or dependant.background_tasks_param_name
            or dependant.security_scopes_param_name
        )
        and dependant.use_cache
        and inspect.iscoroutinefunction(dependant.call)
        and all(_simple(sub) for sub in dependant.dependencies)
    )


def _plan(dependant: Dependant) -> Callable[[Request], Coroutine[Any, Any, Any]]:
    """The operation as one flat list of calls: each distinct dependency once, after the ones it
    takes, in the order FastAPI solves them (depth first, router-level dependencies first), the
    operation last. A value is reused wherever the same dependency is asked for again, as
    FastAPI's per-request dependency cache does."""
    steps: list[tuple[Any, tuple[tuple[str, int], ...], str | None, tuple[tuple[str, str], ...]]] = []
    index: dict[Any, int] = {}

    def add(d: Dependant) -> None:
        for sub in d.dependencies:
            if sub.call not in index:
                add(sub)
        takes = tuple((sub.name, index[sub.call]) for sub in d.dependencies if sub.name is not None)
        paths = tuple((p.name, p.alias) for p in d.path_params)
        index[d.call] = len(steps)
        steps.append((d.call, takes, d.request_param_name, paths))

    add(dependant)

    async def run(request: Request) -> Any:
        values: list[Any] = []
        for call, takes, request_name, paths in steps:
            kwargs = {name: values[i] for name, i in takes}
            if request_name:
                kwargs[request_name] = request
            if paths:
                given = request.path_params
                for name, alias in paths:
                    kwargs[name] = given[alias]
            values.append(await call(**kwargs))
        return values[-1]

    return run


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
    app.router.routes[:] = [AreaIndex(app.state.routes, area_depth)]


# Route tables built once per process -----------------------------------------------------------
_TABLES: dict[object, tuple[tuple[BaseRoute, ...], list[BaseRoute]]] = {}


def reuse_routes(app: FastAPI, key: object) -> bool:
    """Give ``app`` the finished route table of the first app built under ``key`` (a vendor and
    release); False if there is none yet. A table depends on code only, never on a backend (routes
    reach theirs through ``request.app``), and building one costs about a second of FastAPI
    signature analysis: every world a test or a scenario run builds would pay it again."""
    table = _TABLES.get(key)
    if table is None:
        return False
    app.state.routes = table[0]
    app.router.routes[:] = table[1]
    return True


def remember_routes(app: FastAPI, key: object) -> None:
    """Keep ``app``'s finished route table for :func:`reuse_routes`."""
    _TABLES[key] = (app.state.routes, list(app.router.routes))


# Area dispatch -----------------------------------------------------------------------------------
def area_of(path: str, depth: int) -> str:
    """``area_of("/api/devices/{id}", 2)`` → ``/api/devices``; shorter paths are their own area."""
    parts = path.split("/")
    return "/".join(parts[: depth + 1]) if len(parts) > depth + 1 else path


class AreaRoutes(BaseRoute):
    """The routes of one area, in their original order. A route without a wildcard only matches
    paths with as many slashes as its template, and a literal route only its own path, so a
    request is tested against the literal routes of its exact path (one dict lookup), then the
    parameter and wildcard routes of its slash count: one router per case, each keeping the
    original order."""

    def __init__(self, prefix: str, routes: Sequence[BaseRoute]) -> None:
        self.prefix = prefix
        self.routes = list(routes)

        paths = [getattr(r, "path", "") for r in self.routes]
        wild = [":path}" in p for p in paths]
        literal = ["{" not in p for p in paths]

        def router(keep: Callable[[int], bool]) -> Router:
            kept = [r for i, r in enumerate(self.routes) if wild[i] or keep(i)]
            return Router(routes=kept, redirect_slashes=False)

        def param(i: int, slashes: int) -> bool:
            return not literal[i] and paths[i].count("/") == slashes

        def exact(i: int, path: str) -> bool:
            return paths[i] == path or param(i, path.count("/"))

        counts = {p.count("/") for i, p in enumerate(paths) if not wild[i]}
        self._by_slashes = {n: router(partial(param, slashes=n)) for n in counts}
        self._exact = {p: router(partial(exact, path=p)) for k, p in enumerate(paths) if literal[k]}
        self._other = router(lambda i: False)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        path = scope.get("path", "")
        if path == self.prefix or path.startswith(self.prefix + "/"):
            return Match.FULL, {}
        return Match.NONE, {}

    def router_for(self, path: str) -> Router:
        """The routes ``path`` can match, in their original order."""
        return self._exact.get(path) or self._by_slashes.get(path.count("/"), self._other)

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.router_for(scope.get("path", "")).app(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: str):  # pragma: no cover - names are not used
        raise NotImplementedError


def _slashes(route: BaseRoute) -> int:
    return getattr(route, "path", "").count("/")


class AreaIndex(BaseRoute):
    """Every area behind one dict lookup on the request path's first ``depth`` segments. Area
    prefixes are literal (a route whose first segments hold a parameter is refused at build time),
    so the lookup finds exactly the area a prefix scan would."""

    def __init__(self, routes: Sequence[BaseRoute], depth: int) -> None:
        grouped: dict[str, list[BaseRoute]] = {}
        for route in routes:
            grouped.setdefault(area_of(getattr(route, "path", ""), depth), []).append(route)
        patterned = [prefix for prefix in grouped if "{" in prefix]
        if patterned:
            raise ValueError(f"area prefixes must be literal: {', '.join(patterned)}")
        self.depth = depth
        self.areas = {prefix: AreaRoutes(prefix, members) for prefix, members in grouped.items()}
        self.routes = list(self.areas.values())

    def _area(self, scope: Scope) -> AreaRoutes | None:
        return self.areas.get(area_of(scope.get("path", ""), self.depth))

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        return (Match.NONE if self._area(scope) is None else Match.FULL), {}

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        area = self._area(scope)
        assert area is not None  # matches() said so
        await area.handle(scope, receive, send)

    def url_path_for(self, name: str, /, **path_params: str):  # pragma: no cover - names are not used
        raise NotImplementedError


# Routes the twin does not simulate yet ---------------------------------------------------------
def served(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path shape) of every HTTP route ``app`` serves so far."""
    return {(m, shape_of(r.path)) for r in app.routes if isinstance(r, APIRoute) for m in r.methods or ()}


def fallback_routes(
    app: FastAPI, routes: Sequence[tuple[str, tuple[str, ...], list, bool]], endpoint, prefix: str = ""
) -> list[APIRoute]:
    """One ``endpoint`` route per catalogued ``(vendor path, methods, dependencies, in_schema)`` that
    ``app`` does not serve yet (``prefix`` + vendor path); add them after every real router. Each is
    built once, with its full path, and added as it is."""
    done = served(app)
    out: list[APIRoute] = []
    for path, methods, dependencies, in_schema in routes:
        full = prefix + path
        shape = shape_of(full)
        missing = [m for m in methods if (m, shape) not in done]
        if missing:
            route = LeanRoute(
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
