"""Self-description: ``/api/docs/routes.json`` (every route with its auth class, read off the app's
own dependencies), ``/api/docs/openapi.json`` (OpenAPI 3.0, no security definitions, no wildcard
routes) and the interactive console at ``/api/docs``, whose assets are served locally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.routing import APIRoute, APIWebSocketRoute
from starlette.routing import WebSocketRoute
from swagger_ui_bundle import swagger_ui_path

from api.automation.catalogue import HYBRID, JWT_ONLY, PUBLIC, WEBHOOK, WS
from api.automation.deps import admin_user, current_user
from api.routing import to_vendor
from hardware.ports.errors import NotFound

router = APIRouter(tags=["docs"])
ASSETS = Path(str(swagger_ui_path)).resolve()


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


def _to_openapi_30(node: Any) -> Any:
    """FastAPI writes 3.1 schemas; 3.0 spells ``anyOf: [X, null]`` as ``X`` + ``nullable``."""
    if isinstance(node, list):
        return [_to_openapi_30(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: _to_openapi_30(v) for k, v in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        node.pop("anyOf")
        node.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
        node["nullable"] = True
    node.pop("examples", None)
    return node


def openapi_document(app: FastAPI) -> dict[str, Any]:
    cached = getattr(app.state, "openapi_30", None)
    if cached is None:
        routes = [
            r
            for r in app.state.routes
            if isinstance(r, APIRoute) and r.include_in_schema and ":path}" not in r.path
        ]
        doc = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version="3.0.3",
            routes=routes,
            description="Automation backend, served by the twin",
        )
        cached = app.state.openapi_30 = _to_openapi_30(doc)
    return cached


@router.get("/docs", include_in_schema=False)
async def console() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/api/docs/openapi.json",
        title="Automation backend — API console",
        swagger_js_url="/api/docs/swagger-ui-bundle.js",
        swagger_css_url="/api/docs/swagger-ui.css",
        swagger_favicon_url="/api/docs/favicon-32x32.png",
    )


@router.get("/docs/openapi.json")
async def openapi_json(request: Request) -> JSONResponse:
    return JSONResponse(openapi_document(request.app))


@router.get("/docs/routes.json")
async def routes_json(request: Request) -> JSONResponse:
    return JSONResponse(route_table(request.app))


@router.get("/docs/{rest:path}", include_in_schema=False)
async def console_asset(rest: str) -> FileResponse:
    path = (ASSETS / rest).resolve()
    if not path.is_relative_to(ASSETS) or not path.is_file():
        raise NotFound(f"no console asset {rest!r}")
    return FileResponse(path)
