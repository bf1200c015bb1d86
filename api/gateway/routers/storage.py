"""``/api/v1/storage/*``: block devices as ``lsblk -b -J`` prints them; mount, unmount and format,
which refuse the device's protected system partitions."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas.files import field, json_object

router = APIRouter(prefix="/api/v1/storage", tags=["storage"], dependencies=[Depends(require_session)])


@router.get("/disks")
async def disks(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.storage.disks())


@router.post("/mount")
async def mount(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    device, target = field(body, "device", str, required=True), field(body, "target", str, required=True)
    backend.storage.mount(device, target)
    return schemas.ok({"message": f"{device} mounted at {target}"})


@router.post("/unmount")
async def unmount(request: Request, backend: Backend) -> JSONResponse:
    target = field(json_object(await request.body()), "target", str, required=True)
    backend.storage.unmount(target)
    return schemas.ok({"message": f"{target} unmounted"})


@router.post("/format")
async def format_disk(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    device, fstype = field(body, "device", str, required=True), field(body, "fstype", str, required=True)
    backend.storage.format(device, fstype)
    return schemas.ok({"message": f"{device} formatted as {fstype}"})
