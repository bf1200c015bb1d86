from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation import schemas
from api.automation.deps import Backend, Version

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(version: Version) -> JSONResponse:
    return JSONResponse(schemas.health(version))


@router.get("/health/status")
async def health_status(backend: Backend, version: Version) -> JSONResponse:
    return JSONResponse(schemas.health_status(version, backend.uptime()))


@router.get("/health/live")
async def health_live() -> JSONResponse:
    return JSONResponse({"status": "alive"})


@router.get("/health/ready")
async def health_ready(backend: Backend) -> JSONResponse:
    return JSONResponse(schemas.readiness(backend.readiness()))
