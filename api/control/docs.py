"""The control plane's API console (``GET /docs``): Swagger UI over ``/docs/openapi.json`` (the
control plane's OpenAPI document in version 3.0, which that Swagger UI renders; FastAPI's own
``/openapi.json`` is 3.1), its script, style sheet and icon served from the ``swagger-ui-bundle``
package under ``/docs/`` (the automation API's console uses the same files), so the page works with
no network."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse

from api.automation.routers.docs import ASSETS, _to_openapi_30
from hardware.ports.errors import NotFound

router = APIRouter(tags=["docs"])


@router.get("/docs", include_in_schema=False)
async def docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/docs/openapi.json",
        title="Twin control plane — API console",
        swagger_js_url="/docs/swagger-ui-bundle.js",
        swagger_css_url="/docs/swagger-ui.css",
        swagger_favicon_url="/docs/favicon-32x32.png",
        swagger_ui_parameters={"validatorUrl": None},
    )


@router.get("/docs/openapi.json", include_in_schema=False)
async def openapi_30(request: Request) -> dict[str, Any]:
    app = request.app
    cached = getattr(app.state, "openapi_30", None)
    if cached is None:
        doc = get_openapi(title=app.title, version=app.version, openapi_version="3.0.3", routes=app.routes)
        cached = app.state.openapi_30 = _to_openapi_30(doc)
    return cached


@router.get("/docs/{rest:path}", include_in_schema=False)
async def docs_asset(rest: str) -> FileResponse:
    path = (ASSETS / rest).resolve()
    if not path.is_relative_to(ASSETS) or not path.is_file():
        raise NotFound(f"no console asset {rest!r}", resource="docs")
    return FileResponse(path)
