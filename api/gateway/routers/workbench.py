"""``/api/v1/dev/*``: the development workbench. Projects, their files (paths relative to the
project), uploads and source archives, and builds that produce an image archive and manifest for
``apps/install-package``. Shapes as the device's swagger: ``{project}``, ``{build}``, integer ids."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas.files import field, json_object, read_form
from hardware.ports.errors import InvalidInput

router = APIRouter(prefix="/api/v1/dev", tags=["workbench"], dependencies=[Depends(require_session)])


@router.get("/base-images")
async def base_images(backend: Backend) -> JSONResponse:
    return schemas.ok({"images": backend.workbench.base_images()})


@router.get("/projects")
async def projects(backend: Backend) -> JSONResponse:
    return schemas.ok({"projects": backend.workbench.projects()})


@router.post("/projects")
async def create_project(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    field(body, "name", str, required=True)
    field(body, "key", str, required=True)
    return schemas.ok(backend.workbench.create(body))  # CreateProject answers the bare AppProject


@router.get("/projects/{project_id}")
async def get_project(project_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.workbench.project(project_id))


@router.put("/projects/{project_id}")
async def update_project(project_id: str, request: Request, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.workbench.update(project_id, json_object(await request.body())))


@router.delete("/projects/{project_id}")
async def delete_project(project_id: str, backend: Backend) -> JSONResponse:
    backend.workbench.delete(project_id)
    return schemas.ok({"deleted": int(project_id)})  # the id parsed as a uint


@router.post("/projects/{project_id}/upload")
async def upload(project_id: str, request: Request, backend: Backend) -> JSONResponse:
    form = await read_form(request)
    filename, data = form.file("file")
    directory = form.fields.get("path", "").rstrip("/")
    path = f"{directory}/{filename}" if directory else filename
    return schemas.ok(backend.workbench.write(project_id, path, data))


@router.post("/projects/{project_id}/source")
async def source(project_id: str, request: Request, backend: Backend) -> JSONResponse:
    """A ``.zip``, ``.tar`` or ``.tar.gz`` archive in form field ``file``, unpacked into the project."""
    filename, data = (await read_form(request)).file("file")
    return schemas.ok(backend.workbench.source(project_id, filename, data))


@router.get("/projects/{project_id}/files")
async def files(project_id: str, backend: Backend, path: str = "") -> JSONResponse:
    return schemas.ok({"files": backend.workbench.files(project_id, path)})


@router.get("/projects/{project_id}/file")
async def read_file(project_id: str, backend: Backend, path: str = "") -> JSONResponse:
    return schemas.ok(backend.workbench.read(project_id, path))


@router.post("/projects/{project_id}/file")
async def write_file(project_id: str, request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    path = field(body, "path", str, required=True)
    if not isinstance(body.get("content"), str):
        raise InvalidInput("Invalid request body: content is required and must be a string")
    return schemas.ok(backend.workbench.write(project_id, path, body["content"].encode()))


@router.get("/projects/{project_id}/builds")
async def builds(project_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok({"builds": backend.workbench.builds(project_id)})


@router.post("/projects/{project_id}/build")
async def build(project_id: str, request: Request, backend: Backend) -> JSONResponse:
    raw = await request.body()
    version = field(json_object(raw), "version", str) if raw.strip() else ""
    return schemas.ok({"build": backend.workbench.build(project_id, version)})
