"""Every device route that no router serves yet answers an honest 501 in the device's error shape,
behind the device's token check, so clients meet the right 401 first."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse

from api.gateway.catalogue import device_routes
from api.gateway.deps import require_session
from api.gateway.errors import not_simulated_response
from api.routing import fallback_router


async def not_simulated(request: Request) -> JSONResponse:
    route = request.scope.get("route")
    path = route.path if route is not None else request.url.path
    return not_simulated_response(f"{request.method} {path} is not simulated by this twin yet")


def router_for(app: FastAPI) -> APIRouter:
    entries = [
        (r.path, (r.method,), [] if r.auth == "public" else [Depends(require_session)], True)
        for r in device_routes()
        if r.kind != "WS"
    ]
    return fallback_router(app, entries, not_simulated)
