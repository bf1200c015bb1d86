"""The automation backend's FastAPI app: REST under ``/api`` over an :class:`AutomationBackend`."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from api import body_limit, json_input
from api.automation import errors, limits, metrics
from api.automation.ratelimit import RateLimiter
from api.automation.routers import (
    admin,
    agents,
    auth,
    automations,
    brokers,
    chat,
    dashboards,
    data,
    data_push,
    device_types,
    devices,
    docs,
    events,
    extensions,
    guidance,
    health,
    im_bridges,
    instances,
    legacy,
    llm_backends,
    market,
    memory,
    messages,
    mqtt,
    not_simulated,
    rules,
    sessions,
    settings,
    skills,
    system,
    telemetry,
    webhook,
    ws_upgrade,
)
from api.routing import NO_TELEMETRY, finish, mount, remember_routes, reuse_routes
from hardware.ports.automation import AutomationBackend
from hardware.ports.system import NetworkInfo

RELEASES = ("0.9.24", "0.9.17")
API = "/api"


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
        telemetry=NO_TELEMETRY,
    )
    app.state.backend = backend
    app.state.release = release
    app.state.limiter = limiter
    app.state.network = network or NetworkInfo()
    app.state.json_policy = json_input.SERDE
    body_limit.install(app, limits.limit_of, limits.SMALLEST)
    app.add_middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(metrics.RequestMetrics, counters=metrics.counters_of(app))
    errors.install(app, release)
    if reuse_routes(app, ("automation", release)):
        return app
    for router in (
        health.router,
        auth.router,
        webhook.router,
        devices.router,
        device_types.router,
        telemetry.router,
        system.router,
        settings.router,
        agents.router,
        llm_backends.router,
        dashboards.router_for(release),
        extensions.router_for(release),
        market.router,
        guidance.router,
        admin.router,
        data.router,
        rules.router,
        automations.router,
        instances.router,
        messages.public,
        messages.router,
        data_push.router,
        memory.router,
        skills.router,
        mqtt.router,
        brokers.router,
        im_bridges.router,
        events.router,
        sessions.router,
        chat.router,
        ws_upgrade.router,
    ):
        mount(app, router, API)
    if release == "0.9.17":
        mount(app, legacy.router, API)
        mount(app, messages.legacy, API)
        mount(app, events.legacy, API)
    mount(app, docs.router, API)
    app.router.routes.extend(not_simulated.routes_for(app))
    finish(app, area_depth=2)  # areas are /api/<first segment>
    remember_routes(app, ("automation", release))
    return app
