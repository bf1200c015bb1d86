"""The control plane's API console (``GET /docs``): Swagger UI over ``/docs/openapi.json`` (the
control plane's OpenAPI document in version 3.0, which that Swagger UI renders; FastAPI's own
``/openapi.json`` is 3.1), its script, style sheet and icon served from the ``swagger-ui-bundle``
package under ``/docs/`` (the automation API's console uses the same files), so the page works with
no network."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse

from api import swagger

router = APIRouter(tags=["docs"])


@router.get("/docs", include_in_schema=False)
async def docs() -> HTMLResponse:
    return swagger.console("/docs", "Twin control plane — API console", validatorUrl=None)


@router.get("/docs/openapi.json", include_in_schema=False)
async def openapi_30(request: Request) -> dict[str, Any]:
    return swagger.openapi_30(request.app, request.app.routes)


@router.get("/docs/{rest:path}", include_in_schema=False)
async def docs_asset(rest: str) -> FileResponse:
    return swagger.asset(rest, resource="docs")
