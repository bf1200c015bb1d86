"""``/api/v1/system/*``: health and the two upgrade statuses (public), and the token-protected
system area: info, stats, password, restart and the device's time."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import system as shapes
from api.gateway.schemas.apps import ai_stats

public = APIRouter(prefix="/api/v1/system", tags=["system"])
router = APIRouter(prefix="/api/v1/system", tags=["system"], dependencies=[Depends(require_session)])


@public.get("/health")
async def health(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.health(backend.system.device_time().unix))


@public.get("/ota/status")
async def ota_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.ota_status(backend.ota.report()))


@public.get("/os-upgrade/status")
async def os_upgrade_status(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.os_upgrade_status(backend.os_upgrade.report()))


@router.get("/info")
async def info(backend: Backend) -> JSONResponse:
    return schemas.ok_plain(shapes.system_info(backend.system.info()))  # a version and booleans


@router.get("/stats")
async def stats(backend: Backend) -> JSONResponse:
    """The handler puts the AI runtime's ``GetStats`` answer (the one ``GET ai/stats`` serves) under
    ``services["ai-runtime"]``; without a runtime, ``services`` is empty."""
    stats = backend.system.stats()
    services = {"ai-runtime": ai_stats(backend.ai.stats())} if stats.ai_runtime is not None else {}
    return schemas.ok({"timestamp": stats.unix_timestamp, "services": services})


@router.post("/password")
async def change_password(request: Request, backend: Backend) -> JSONResponse:
    old, new, timestamp = shapes.parse_password(await request.body())
    backend.system.change_password(old, new, timestamp)
    return schemas.ok(shapes.password_changed())


@router.post("/restart")
async def restart(backend: Backend) -> JSONResponse:
    backend.power.restart()
    return schemas.ok(shapes.reboot_started())


@router.get("/time")
async def get_time(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.system_time(backend.system.device_time()))


@router.post("/time/set")
async def set_time(request: Request, backend: Backend) -> JSONResponse:
    backend.time.set_time(shapes.parse_set_time(await request.body()))
    return shapes.ok_msg("Time updated successfully")


@router.post("/time/sync-from-client")
async def sync_from_client(request: Request, backend: Backend) -> JSONResponse:
    result = backend.time.sync_from_client(shapes.parse_client_sync(await request.body()))
    return schemas.ok(shapes.client_sync(result))


@router.get("/time/config")
async def get_time_config(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.time_config(backend.time.config()))


@router.put("/time/config")
async def save_time_config(request: Request, backend: Backend) -> JSONResponse:
    backend.time.save_config(*shapes.parse_time_config(await request.body()))
    return shapes.ok_msg("Time configuration saved")


@router.put("/time/timezone")
async def set_timezone(request: Request, backend: Backend) -> JSONResponse:
    backend.time.set_timezone(shapes.parse_timezone(await request.body()))
    return shapes.ok_msg("Timezone updated successfully")


@router.get("/time/timezones")
async def timezones(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.timezones(backend.time.timezones()))


@router.put("/time/ntp")
async def set_ntp(request: Request, backend: Backend) -> JSONResponse:
    backend.time.set_ntp(*shapes.parse_ntp(await request.body()))
    return shapes.ok_msg("NTP configuration updated")


@router.post("/time/ntp/sync")
async def sync_ntp(backend: Backend) -> JSONResponse:
    backend.time.sync_ntp()
    return shapes.ok_msg("NTP synchronization triggered")
