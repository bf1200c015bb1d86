"""The automation backend's FastAPI app: REST under ``/api`` over an :class:`AutomationBackend`."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.routing import APIRoute, APIWebSocketRoute

from api.automation import errors, metrics
from api.automation.ratelimit import RateLimiter
from api.automation.routers import (
    auth,
    device_types,
    devices,
    docs,
    health,
    legacy,
    not_simulated,
    settings,
    system,
    telemetry,
    webhook,
)
from api.automation.routing import group_by_area
from hardware.ports.automation import AutomationBackend
from hardware.ports.system import NetworkInfo

RELEASES = ("0.9.24", "0.9.17")


def create_app(
    backend: AutomationBackend,
    *,
    release: str = "0.9.24",
    limiter: RateLimiter | None = None,
    network: NetworkInfo | None = None,
) -> FastAPI:
    if release not in RELEASES:
        raise ValueError(f"unknown release {release!r}; expected one of {', '.join(RELEASES)}")
    app = FastAPI(
        title="Automation backend",
        version=release,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        redirect_slashes=False,
    )
    app.state.backend = backend
    app.state.version = release
    app.state.release = release
    app.state.limiter = limiter
    app.state.network = network or NetworkInfo()
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(metrics.RequestMetrics, counters=metrics.counters_of(app))
    errors.install(app, release)
    for router in (
        health.router,
        auth.router,
        webhook.router,
        devices.router,
        device_types.router,
        telemetry.router,
        system.router_for(release),
        settings.router,
    ):
        mount(app, router)
    if release == "0.9.17":
        mount(app, legacy.router)
    mount(app, docs.router)
    mount(app, not_simulated.router_for(app, release))
    app.router.routes.sort(key=lambda route: specificity(getattr(route, "path", "")))
    app.state.routes = tuple(app.router.routes)  # the flat list: routes.json, OpenAPI, coverage
    app.router.routes[:] = group_by_area(app.state.routes)
    return app


def mount(app: FastAPI, router: APIRouter, prefix: str = "/api") -> None:
    """Add ``router``'s routes to ``app`` as plain routes under ``prefix``, router-level dependencies
    included, so every route is a plain ``APIRoute`` (for routes.json, OpenAPI and matching order)."""
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
    """Sort key giving the real server's matching order: at each segment a literal beats a
    parameter, which beats a wildcard (FastAPI would otherwise take the first registered match)."""
    ranks = []
    for segment in path.strip("/").split("/"):
        if segment.endswith(":path}"):
            ranks.append(2)
        elif segment.startswith("{"):
            ranks.append(1)
        else:
            ranks.append(0)
    return (*ranks, -len(ranks))
