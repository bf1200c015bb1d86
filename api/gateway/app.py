"""The edge gateway's FastAPI app for one camera: ``/api/login`` and ``/api/v1/...``."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from api import body_limit, json_input
from api.gateway import errors
from api.gateway.routers import (
    ai,
    apps,
    audio,
    auth,
    containers,
    device,
    events,
    files,
    image,
    images,
    lens,
    logs,
    media,
    media_config,
    monitor,
    not_simulated,
    peripherals,
    storage,
    store,
    system,
    terminal,
    upgrade,
    workbench,
)
from api.routing import NO_TELEMETRY, finish, mount, remember_routes, reuse_routes
from hardware.ports.gateway import GatewayBackend


def create_app(backend: GatewayBackend) -> FastAPI:
    app = FastAPI(
        title=f"Edge gateway {backend.id}",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        telemetry=NO_TELEMETRY,
    )
    app.state.backend = backend
    app.state.json_policy = json_input.GO
    body_limit.install(app, lambda method, path: errors.NGINX_LIMIT, errors.NGINX_LIMIT.size)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=["*"],
        allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
        allow_headers=["Content-Type", "Authorization", "X-API-Key"],
    )
    errors.install(app)
    if reuse_routes(app, "gateway"):
        return app
    for router in (auth.router, system.public, system.router, media.status_router, media.router):
        mount(app, router)
    for router in (lens.router, peripherals.router, image.router, media_config.router):
        mount(app, router)
    for router in (media_config.streams_router, audio.router, audio.ws_router):
        mount(app, router)
    for router in (files.router, logs.router, logs.stream_router, terminal.router, terminal.ws_router):
        mount(app, router)
    for router in (upgrade.router,):
        mount(app, router)
    for router in (ai.router, apps.router, containers.router, containers.ws_router, images.router):
        mount(app, router)
    for router in (events.router, events.ws_router, monitor.router, monitor.processes, storage.router):
        mount(app, router)
    mount(app, device.router)
    mount(app, store.router)
    mount(app, workbench.router)
    app.router.routes.extend(not_simulated.routes_for(app))
    finish(app, area_depth=3)  # areas are /api/v1/<first segment>
    remember_routes(app, "gateway")
    return app
