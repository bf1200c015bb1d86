"""Every device route that no router serves yet answers an honest 501 in the device's error shape,
behind the device's token check, so clients meet the right 401 first."""

from __future__ import annotations

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from api.gateway.catalogue import device_routes
from api.gateway.deps import require_session
from api.gateway.errors import not_simulated_response
from api.routing import fallback_routes


async def not_simulated(request: Request) -> JSONResponse:
    route = request.scope.get("route")
    path = route.path if route is not None else request.url.path
    return not_simulated_response(f"{request.method} {path} is not simulated by this twin yet")


def routes_for(app: FastAPI) -> list[APIRoute]:
    entries = [
        (r.path, (r.method,), [] if r.auth == "public" else [Depends(require_session)], True)
        for r in device_routes()
        if r.kind != "WS"
    ]
    return fallback_routes(app, entries, not_simulated)
