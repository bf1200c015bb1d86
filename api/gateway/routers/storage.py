"""``/api/v1/storage/*``: block devices as ``lsblk -b -J`` prints them; mount, unmount and format,
which refuse the device's protected system partitions. Answers as ``disk.go``'s handlers give them."""

from __future__ import annotations

from pathlib import PurePosixPath

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
    device = field(body, "device", str, required=True)
    target = field(body, "target", str) or "/mnt/" + PurePosixPath(device).name  # MountDisk's default
    backend.storage.mount(device, target)
    return schemas.ok({"message": "Successfully mounted", "device": device, "target": target})


@router.post("/unmount")
async def unmount(request: Request, backend: Backend) -> JSONResponse:
    target = field(json_object(await request.body()), "target", str, required=True)
    backend.storage.unmount(target)
    return schemas.ok({"message": "Successfully unmounted", "target": target})


@router.post("/format")
async def format_disk(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    device, fstype = field(body, "device", str, required=True), field(body, "fstype", str) or "ext4"
    backend.storage.format(device, "vfat" if fstype == "fat32" else fstype)
    return schemas.ok({"message": "Successfully formatted", "device": device, "fstype": fstype})
