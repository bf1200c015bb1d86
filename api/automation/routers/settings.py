"""Server settings (jwt-or-api-key): timezone, retention, agent and device defaults. Enveloped."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation import schemas
from api.automation.deps import Backend, catalogued
from api.automation.schemas import system as wire

router = APIRouter(prefix="/settings", tags=["settings"])


@router.get("/timezone")
async def get_timezone(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.timezone(backend.system.timezone()), backend.clock.now())


@router.put("/timezone")
async def put_timezone(body: wire.TimezoneRequest, backend: Backend) -> JSONResponse:
    return schemas.ok(wire.timezone_updated(backend.system.set_timezone(body.timezone)), backend.clock.now())


@router.get("/timezones")
async def list_timezones(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.timezones(backend.system.timezones()), backend.clock.now())


@router.get("/retention")
async def get_retention(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.retention(backend.system.retention()), backend.clock.now())


@router.put("/retention")
async def put_retention(body: wire.RetentionRequest, backend: Backend) -> JSONResponse:
    policy = backend.system.update_retention(**body.changes())
    return schemas.ok(wire.retention(policy), backend.clock.now())


@router.post("/retention/cleanup")
async def cleanup_retention(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.retention_cleanup(backend.system.cleanup_retention()), backend.clock.now())


@router.get("/agent")
async def get_agent(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.agent_settings(backend.system.agent_settings()), backend.clock.now())


@router.put("/agent")
async def put_agent(body: wire.AgentSettingsRequest, backend: Backend) -> JSONResponse:
    settings = backend.system.update_agent_settings(**body.changes())
    return schemas.ok(wire.agent_settings(settings), backend.clock.now())


@router.get("/device")
async def get_device(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.device_settings(backend.system.device_settings()), backend.clock.now())


@router.put("/device")
async def put_device(body: wire.DeviceSettingsRequest, backend: Backend) -> JSONResponse:
    settings = backend.system.update_device_settings(**body.changes())
    return schemas.ok(wire.device_settings(settings, updated=True), backend.clock.now())


catalogued(router)
