"""Self-description: ``/api/docs/routes.json`` (every route with its auth class, read off the app's
own dependencies), ``/api/docs/openapi.json`` (OpenAPI 3.0, no security definitions, no wildcard
routes) and the interactive console at ``/api/docs``, whose assets are served locally."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import WebSocketRoute

from api import swagger
from api.automation.catalogue import HYBRID, JWT_ONLY, PUBLIC, WEBHOOK, WS
from api.automation.deps import admin_user, current_user
from api.routing import to_vendor

router = APIRouter(tags=["docs"])


def _calls(dependant: Dependant) -> set[Any]:
    calls = {dependant.call}
    for dep in dependant.dependencies:
        calls |= _calls(dep)
    return calls


def auth_of(route: APIRoute) -> str:
    calls = _calls(route.dependant)
    if admin_user in calls:
        return JWT_ONLY
    if current_user in calls:
        return HYBRID
    if "realtime" in (route.tags or ()):  # SSE: the handler authenticates (query token or key)
        return WS
    return WEBHOOK if route.path.endswith("/webhook") else PUBLIC


def route_table(app: FastAPI) -> list[dict[str, str]]:
    rows = []
    for route in app.state.routes:
        if isinstance(route, APIRoute):
            auth = auth_of(route)
            rows += [
                {"method": m, "path": to_vendor(route.path), "auth": auth}
                for m in sorted(route.methods or ())
            ]
        elif isinstance(route, APIWebSocketRoute | WebSocketRoute):
            rows.append({"method": "GET", "path": to_vendor(route.path), "auth": WS})
    return sorted(rows, key=lambda r: (r["path"], r["method"]))


def openapi_document(app: FastAPI) -> dict[str, Any]:
    routes = [
        r
        for r in app.state.routes
        if isinstance(r, APIRoute) and r.include_in_schema and ":path}" not in r.path
    ]
    return swagger.openapi_30(app, routes, "Automation backend, served by the twin")


@router.get("/docs", include_in_schema=False)
async def console() -> HTMLResponse:
    return swagger.console("/api/docs", "Automation backend — API console")


@router.get("/docs/openapi.json")
async def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(openapi_document(request.app))


@router.get("/docs/routes.json")
async def routes_json(request: Request) -> JSONResponse:
    return JSONResponse(route_table(request.app))


@router.get("/docs/{rest:path}", include_in_schema=False)
async def console_asset(rest: str) -> FileResponse:
    return swagger.asset(rest)
