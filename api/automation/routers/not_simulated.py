"""Every catalogued vendor route that no router serves yet answers an honest 501 in the envelope,
behind the same auth class as on the real server, so clients meet the right 401s first."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from api.automation.catalogue import WS, vendor_routes
from api.automation.deps import AUTH_CHECKS
from api.automation.errors import error_response
from api.routing import fallback_routes


async def not_simulated(request: Request) -> JSONResponse:
    route = request.scope.get("route")
    path = route.path if route is not None else request.url.path
    return error_response(
        501, "NOT_IMPLEMENTED", f"{request.method} {path} is not simulated by this twin yet"
    )


def routes_for(app: FastAPI) -> list[APIRoute]:
    """501 routes for what ``app`` does not serve yet."""
    entries = [
        (r.path, r.methods, AUTH_CHECKS.get(r.vendor_class, []), not r.is_wildcard)
        for r in vendor_routes()
        if r.vendor_class != WS
    ]
    return fallback_routes(app, entries, not_simulated)
