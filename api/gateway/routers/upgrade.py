"""``/api/v1/system/ota/*`` and ``/api/v1/system/os-upgrade/*`` (token-protected; the two status
routes are public and live with the system area). Each call starts or moves a timed job and answers
at once; clients poll the public status routes, which keep answering across the reboot."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import files as shapes

router = APIRouter(prefix="/api/v1/system", tags=["system"], dependencies=[Depends(require_session)])


# Firmware OTA ------------------------------------------------------------------------------------
@router.get("/ota/detect")
async def ota_detect(backend: Backend) -> JSONResponse:
    available, version, changelog = backend.ota.detect()
    return schemas.ok({"update_available": available, "version": version, "changelog": changelog})


@router.post("/ota/parse")
async def ota_parse(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await shapes.read_form(request)).file("firmware")
    return schemas.ok(shapes.firmware(backend.ota.parse(filename, data)))


@router.post("/ota/install")
async def ota_install(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await shapes.read_form(request)).file("firmware")
    return schemas.ok(backend.ota.install(filename, data))


@router.post("/ota/install-from-path")
async def ota_install_from_path(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.json_object(await request.body())
    path = shapes.field(body, "path", str, required=True)
    return schemas.ok(backend.ota.install_from_path(path))


# A/B OS upgrade ----------------------------------------------------------------------------------
@router.post("/os-upgrade/upload")
async def os_upload(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await shapes.read_form(request)).file("package", "firmware")
    sha256 = request.headers.get("x-content-sha256", "")
    return schemas.ok(backend.os_upgrade.upload(filename, data, sha256))


@router.post("/os-upgrade/validate")
async def os_validate(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.os_job_request(await request.body())
    job = backend.os_upgrade.validate(
        shapes.field(body, "job_id", str),
        shapes.field(body, "sha256", str),
        shapes.field(body, "allow_downgrade", bool),
    )
    return schemas.ok(job)


@router.post("/os-upgrade/install")
async def os_install(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.os_job_request(await request.body())
    result = backend.os_upgrade.install(
        shapes.field(body, "job_id", str),
        shapes.field(body, "upgrade_strategy", str),
        shapes.field(body, "update_mode", str),
    )
    return schemas.ok(result)


@router.post("/os-upgrade/reboot")
async def os_reboot(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.os_job_request(await request.body())
    return schemas.ok(backend.os_upgrade.reboot(shapes.field(body, "job_id", str)))


@router.post("/os-upgrade/cancel")
async def os_cancel(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.os_job_request(await request.body())
    return schemas.ok(backend.os_upgrade.cancel(shapes.field(body, "job_id", str)))


@router.delete("/os-upgrade/package")
async def os_delete_package(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.os_job_request(await request.body())
    return schemas.ok(backend.os_upgrade.delete_package(shapes.field(body, "job_id", str)))
