"""``/api/v1/files*``: the device's files API over its virtual file system, confined to the allowed
roots (``/data``, ``/tmp``). Every path is an absolute path on the device; escapes answer 8004/403."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import files as shapes

router = APIRouter(prefix="/api/v1/files", tags=["files"], dependencies=[Depends(require_session)])

MAX_CONTENT = 1024 * 1024
"""``GET files/content`` refuses larger files (use download)."""


@router.get("")
async def list_files(backend: Backend, path: str = "") -> JSONResponse:
    path = path or backend.files.default_dir
    entries = backend.files.list(path)
    return schemas.ok(shapes.listing(path, entries, backend.system.device_time().offset_s))


@router.get("/content")
async def read_content(backend: Backend, path: str = "") -> JSONResponse:
    return schemas.ok(shapes.content(backend.files.read(path, MAX_CONTENT)))


@router.post("/content")
async def write_content(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.json_object(await request.body())
    path = shapes.field(body, "path", str, required=True)
    size = backend.files.write(path, shapes.field(body, "content", str).encode())
    return schemas.ok({"path": path, "size": size})


@router.post("/upload")
async def upload(request: Request, backend: Backend) -> JSONResponse:
    form = await shapes.read_form(request)
    filename, data = form.file("file")
    path, size = backend.files.upload(form.fields.get("path", ""), filename, data)
    return schemas.ok({"path": path, "size": size})


@router.get("/download")
async def download(backend: Backend, path: str = "") -> Response:
    f = backend.files.read(path)
    return Response(f.data, media_type="application/octet-stream", headers=shapes.attachment(f.name))


@router.post("/batch-download")
async def batch_download(request: Request, backend: Backend) -> Response:
    paths = shapes.string_list(shapes.json_object(await request.body()), "paths", required=True)
    archive = shapes.zip_of(backend.files.collect(paths), backend.system.device_time().unix)
    return Response(archive, media_type="application/zip", headers=shapes.attachment("files.zip"))


@router.delete("")
async def delete(backend: Backend, path: str = "") -> JSONResponse:
    backend.files.delete(path)
    return schemas.ok({"deleted": path})


@router.post("/batch-delete")
async def batch_delete(request: Request, backend: Backend) -> JSONResponse:
    paths = shapes.string_list(shapes.json_object(await request.body()), "paths", required=True)
    result = backend.files.batch_delete(paths)
    if not result.deleted:
        return errors.fail(4003, "; ".join(f"{p}: {e}" for p, e in result.failed))
    return schemas.ok(shapes.batch_deleted(result))


@router.post("/mkdir")
async def mkdir(request: Request, backend: Backend) -> JSONResponse:
    path = shapes.field(shapes.json_object(await request.body()), "path", str, required=True)
    backend.files.mkdir(path)
    return schemas.ok({"path": path})


@router.post("/rename")
async def rename(request: Request, backend: Backend) -> JSONResponse:
    body = shapes.json_object(await request.body())
    old = shapes.field(body, "old_path", str, required=True)
    new = shapes.field(body, "new_path", str, required=True)
    backend.files.rename(old, new)
    return schemas.ok({"old_path": old, "new_path": new})
