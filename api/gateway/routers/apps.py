"""``/api/v1/apps*``: the app manager. Install in three steps (upload-image, upload-manifest,
install-package, then poll install-progress), start/stop/restart, logs as NDJSON without an
envelope, stats, permissions, uninstall. The old single-file upload to ``POST apps`` (a multipart
body) fails with the device's JSON parse error."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes
from api.gateway.schemas.files import field, json_object, read_form
from hardware.ports.errors import InternalError, InvalidInput, NotFound

router = APIRouter(prefix="/api/v1/apps", tags=["apps"], dependencies=[Depends(require_session)])


def _install_body(raw: bytes) -> tuple[str, str, bool]:
    if raw.lstrip()[:1] not in (b"{", b"[", b'"') and raw.strip():
        first = raw.lstrip()[:1].decode(errors="replace")
        raise InvalidInput(f"invalid character '{first}' looking for beginning of value", resource="json")
    body = json_object(raw)
    return (
        field(body, "manifest_path", str, required=True),
        field(body, "image_path", str),
        field(body, "force", bool),
    )


@router.get("")
async def list_apps(backend: Backend) -> JSONResponse:
    return schemas.ok([shapes.app_item(a) for a in backend.apps.list()])


@router.post("")
async def install_app(request: Request, backend: Backend) -> JSONResponse:
    result = backend.apps.install(*_install_body(await request.body()))
    return schemas.ok({"message": result.message, "app_id": result.app_id, "updated": result.updated})


@router.post("/wizard")
async def wizard(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    app_id = field(body, "app_id", str, required=True)
    name = field(body, "name", str, required=True)
    image = field(body, "image", str, required=True)
    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise InvalidInput("config must be an object")
    result = backend.apps.wizard(app_id, name, image, config)
    return schemas.ok({"message": result.message, "app_id": result.app_id})


@router.post("/upload-image")
async def upload_image(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await read_form(request)).file("file")
    path = backend.apps.upload_image(filename, data)
    return schemas.ok(shapes.image_uploaded(path, filename, data))


@router.post("/upload-manifest")
async def upload_manifest(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await read_form(request)).file("file")
    return schemas.ok(shapes.manifest_uploaded(backend.apps.upload_manifest(filename, data), filename))


@router.post("/install-package")
async def install_package(request: Request, backend: Backend) -> JSONResponse:
    task_id = backend.apps.install_package(*_install_body(await request.body()))
    return schemas.ok({"task_id": task_id})


@router.get("/install-progress/{task_id}")
async def install_progress(task_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.install_task(backend.apps.install_progress(task_id)))


@router.get("/{app_id}")
async def get_app(app_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.app_info(backend.apps.get(app_id)))


@router.delete("/{app_id}")
async def uninstall(app_id: str, backend: Backend, keep_logs: bool = False) -> JSONResponse:
    backend.apps.uninstall(app_id, keep_logs)
    return schemas.ok({"message": f"Application {app_id} uninstalled"})


@router.post("/{app_id}/start")
async def start(app_id: str, backend: Backend) -> JSONResponse:
    await backend.lifecycle.start_app(app_id)
    return schemas.ok({"message": f"Application {app_id} started"})


@router.post("/{app_id}/stop")
async def stop(app_id: str, backend: Backend, timeout: int = 30) -> JSONResponse:
    await backend.lifecycle.stop_app(app_id, timeout)
    return schemas.ok({"message": f"Application {app_id} stopped"})


@router.post("/{app_id}/restart")
async def restart(app_id: str, backend: Backend, timeout: int = 30) -> JSONResponse:
    await backend.lifecycle.restart_app(app_id, timeout)
    return schemas.ok({"message": f"Application {app_id} restarted"})


@router.get("/{app_id}/stats")
async def stats(app_id: str, backend: Backend) -> JSONResponse:
    """``GetAppStats`` answers an app-manager error that says "not found" as 6000 (404), where
    ``GetApp`` leaves every error a 3002."""
    try:
        found = backend.apps.stats(app_id)
    except InternalError as err:
        if "not found" not in err.message:
            raise
        raise NotFound(err.message, resource="app") from err
    return schemas.ok(shapes.app_stats(found))


@router.get("/{app_id}/logs")
async def logs(app_id: str, backend: Backend, max_lines: int = 100) -> Response:
    lines = backend.apps.logs(app_id, max_lines)
    return Response(shapes.ndjson(lines), media_type="application/x-ndjson")


@router.get("/{app_id}/permissions")
async def permissions(app_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.apps.permissions(app_id))
