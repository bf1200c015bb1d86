"""Every catalogued vendor route that no router serves yet answers an honest 501 in the envelope,
behind the same auth class as on the real server, so clients meet the right 401s first."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from api.automation.catalogue import HYBRID, JWT_ONLY, WS, vendor_routes
from api.automation.deps import admin_user, current_user
from api.automation.errors import error_response
from api.routing import shape_of, to_fastapi

AUTH_DEPENDENCIES = {HYBRID: [Depends(current_user)], JWT_ONLY: [Depends(admin_user)]}


async def not_simulated(request: Request) -> JSONResponse:
    route = request.scope.get("route")
    path = route.path if route is not None else request.url.path
    return error_response(
        501, "NOT_IMPLEMENTED", f"{request.method} {path} is not simulated by this twin yet"
    )


def served(app: FastAPI) -> set[tuple[str, str]]:
    return {(m, shape_of(r.path)) for r in app.routes if isinstance(r, APIRoute) for m in r.methods}


def router_for(app: FastAPI, release: str) -> APIRouter:
    """501 routes for what ``app`` does not serve yet; include it after every real router."""
    done = {(m, shape.removeprefix("/api")) for m, shape in served(app)}
    router = APIRouter(tags=["not simulated"])
    for route in vendor_routes():
        if route.vendor_class == WS:
            continue
        shape = shape_of(route.path.removeprefix("/api"))
        methods = [m for m in route.methods if (m, shape) not in done]
        if not methods:
            continue
        router.add_api_route(
            to_fastapi(route.path.removeprefix("/api")),
            not_simulated,
            methods=methods,
            dependencies=AUTH_DEPENDENCIES.get(route.auth(release), []),
            include_in_schema=not route.is_wildcard,
            name=f"not_simulated:{route.method}:{route.path}",
        )
        done.update((m, shape) for m in methods)
    return router
