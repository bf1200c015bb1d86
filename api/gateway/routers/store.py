"""``/api/v1/store/*``: the app store's catalogue (apps, categories, tags), installs from it through
the app pipeline (the answer carries the install task to poll), and install records."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas.files import field, json_object
from hardware.ports.errors import InvalidInput

router = APIRouter(prefix="/api/v1/store", tags=["store"], dependencies=[Depends(require_session)])


@router.get("/apps")
async def store_apps(
    backend: Backend,
    category: str = "",
    search: str = "",
    featured: str = "",
    page: str = "1",
    page_size: str = "20",
) -> JSONResponse:
    """``ListApps``: ``featured=true`` filters, anything else does not; a page or size that is not a
    number is 0 (strconv.Atoi), then out of range means page 1, 20 a page."""
    numbers = [int(v) if v.lstrip("-").isdigit() else 0 for v in (page, page_size)]
    only_featured = True if featured == "true" else None
    return schemas.ok(backend.apps.store.apps(category, search, only_featured, *numbers))


@router.get("/apps/{key}")
async def store_app(key: str, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.apps.store.app(key))


@router.post("/apps/{key}/install")
async def install(key: str, request: Request, backend: Backend) -> JSONResponse:
    raw = await request.body()
    body = json_object(raw) if raw.strip() else {}
    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise InvalidInput("config must be an object")
    return schemas.ok(backend.apps.store.install(key, field(body, "version", str), config))


@router.get("/categories")
async def categories(backend: Backend) -> JSONResponse:
    return schemas.ok({"categories": backend.apps.store.categories()})


@router.get("/tags")
async def tags(backend: Backend) -> JSONResponse:
    return schemas.ok({"tags": backend.apps.store.tags()})


@router.get("/installs")
async def installs(backend: Backend) -> JSONResponse:
    records = backend.apps.store.list()
    return schemas.ok({"installs": records, "total": len(records)})


@router.post("/installs")
async def create_install(request: Request, backend: Backend) -> JSONResponse:
    return schemas.ok({"install": backend.apps.store.record(json_object(await request.body()))})


@router.get("/installs/{app_id}")
async def get_install(app_id: str, backend: Backend) -> JSONResponse:
    install = backend.apps.store.view(app_id)
    return schemas.ok({"install": install, "store_app": install.pop("store_app", None)})


@router.put("/installs/{app_id}")
async def update_install(app_id: str, request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    return schemas.ok({"install": backend.apps.store.update(app_id, body)})


@router.delete("/installs/{app_id}")
async def delete_install(app_id: str, backend: Backend) -> JSONResponse:
    backend.apps.store.delete(app_id)
    return schemas.ok({"message": "install deleted"})
