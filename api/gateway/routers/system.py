"""``/api/v1/system/*``: health (public) and the token-protected system area."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session

public = APIRouter(prefix="/api/v1/system", tags=["system"])
router = APIRouter(prefix="/api/v1/system", tags=["system"], dependencies=[Depends(require_session)])


@public.get("/health")
async def health(backend: Backend) -> JSONResponse:
    return schemas.ok(schemas.health(backend.clock.now()))


@router.get("/info")
async def info(backend: Backend) -> JSONResponse:
    return schemas.ok(schemas.system_info(backend.system.info()))
