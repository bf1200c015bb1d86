"""Device administration: ``device-info`` (+ factory data), ``settings``, ``config/jobs``,
``network`` (config, interfaces) and ``event-logs`` (+ statistics, templates).

``POST device-info/factory`` insists on a JSON content type (HTTP 415, code 1001, ``error.type``
"validation") like the device."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import is_json
from api.gateway.schemas import system as shapes
from api.gateway.schemas.files import field, json_object
from hardware.ports.errors import NotFound

router = APIRouter(prefix="/api/v1", tags=["device"], dependencies=[Depends(require_session)])


# Device info ---------------------------------------------------------------------------------------
@router.get("/device-info")
async def device_info(request: Request, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.system.device_info(request.headers.get("host", "")))


@router.put("/device-info")
async def rename(request: Request, backend: Backend) -> JSONResponse:
    name = field(json_object(await request.body()), "device_name", str)
    backend.admin.rename(name)
    return schemas.ok({"device_name": name, "message": "Device name updated successfully"})


@router.get("/device-info/factory")
async def factory(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.admin.factory())


@router.post("/device-info/factory")
async def set_factory(request: Request, backend: Backend) -> JSONResponse:
    if not is_json(request):
        return errors.unsupported_media()
    body = json_object(await request.body())
    name, value = backend.admin.set_factory(field(body, "field", str) or "", field(body, "value", str) or "")
    return schemas.ok(
        {
            "field": name,
            "value": value,
            "factory": backend.admin.factory(),
            "message": "Factory EEPROM field updated and verified",
        }
    )


# Settings and config jobs -------------------------------------------------------------------------
@router.get("/settings")
async def settings(backend: Backend) -> JSONResponse:
    return schemas.ok({"settings": backend.admin.settings()})


@router.post("/settings")
async def set_setting(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    key, value = field(body, "key", str, required=True), field(body, "value", str)
    backend.admin.set_setting(key, value)
    return schemas.ok({"key": key, "value": value})


@router.delete("/settings/{key}")
async def delete_setting(key: str, backend: Backend) -> JSONResponse:
    backend.admin.delete_setting(key)
    return schemas.ok({"deleted": key})


@router.get("/config/jobs")
async def config_jobs() -> JSONResponse:
    return schemas.ok({"jobs": []})


@router.get("/config/jobs/{job_id}")
async def config_job(job_id: str) -> JSONResponse:
    raise NotFound(f"config job not found: {job_id}")


# Network -------------------------------------------------------------------------------------------
@router.get("/network/config")
async def network_config(backend: Backend, interface: str = "eth0") -> JSONResponse:
    return schemas.ok(backend.admin.network_config(interface))


@router.post("/network/config")
async def configure_network(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    iface = field(body, "interface", str) or "eth0"
    mode = field(body, "mode", str, required=True)
    dns = [field(body, "dns1", str), field(body, "dns2", str)]
    backend.admin.configure_network(
        iface,
        mode,
        field(body, "ip_address", str),
        field(body, "subnet_mask", str),
        field(body, "gateway", str),
        dns,
    )
    return schemas.ok({"message": "Network configuration saved and applying"})


@router.get("/network/interfaces")
async def interfaces(backend: Backend) -> JSONResponse:
    return schemas.ok({"interfaces": backend.admin.interfaces()})


# Event logs ----------------------------------------------------------------------------------------
@router.get("/event-logs")
async def event_logs(
    backend: Backend,
    category: str = "",
    level: str = "",
    start_time: str = "",
    end_time: str = "",
    search: str = "",
    limit: int = 100,
    offset: int = 0,
) -> JSONResponse:
    return schemas.ok(backend.admin.event_logs(category, level, start_time, end_time, search, limit, offset))


@router.post("/event-logs")
async def add_event_log(request: Request, backend: Backend) -> JSONResponse:
    backend.admin.add_event_log(shapes.parse_log_record(await request.body()))
    return schemas.ok({"message": "Event log created successfully"})


@router.delete("/event-logs")
async def cleanup_event_logs(request: Request, backend: Backend) -> JSONResponse:
    days = shapes.parse_cleanup_days(await request.body())
    backend.admin.cleanup_event_logs(days)
    return schemas.ok({"message": "Old event logs cleaned up successfully", "days": days})


@router.get("/event-logs/statistics")
async def event_log_statistics(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.admin.event_log_statistics())


@router.get("/event-logs/templates")
async def event_log_templates(backend: Backend) -> JSONResponse:
    return schemas.ok({"templates": backend.admin.event_log_templates()})
