"""``/api/v1/ai/*``: the AI runtime's capabilities, models (upload, parse, register, scan, load onto
the accelerator, unload, delete) and statistics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes
from api.gateway.schemas.files import field, json_object, read_form
from hardware.ports.errors import InvalidInput
from hardware.ports.gateway_ai import ModelUpload

router = APIRouter(prefix="/api/v1/ai", tags=["ai"], dependencies=[Depends(require_session)])


@router.get("/capabilities")
async def capabilities(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.ai.capabilities())


@router.get("/models")
async def list_models(backend: Backend) -> JSONResponse:
    return schemas.ok({"models": [shapes.model(m) for m in backend.ai.list()]})


@router.post("/models")
async def register_model(request: Request, backend: Backend) -> JSONResponse:
    """``RegisterModel``: the console registers what ``models/parse`` stored, by ``file_hash``
    (answered ``{model_id, model_path, status}``); a ``model_path`` registers a file already there."""
    body = json_object(await request.body())
    file_hash = field(body, "file_hash", str)
    if file_hash:
        info = backend.ai.register_parsed(field(body, "model_id", str), file_hash, body)
        return schemas.ok({"model_id": info.model_id, "model_path": info.model_path, "status": info.status})
    model_id = field(body, "model_id", str, required=True)
    model_path = field(body, "model_path", str, required=True)
    return schemas.ok(shapes.model(backend.ai.register(model_id, model_path, body)))


@router.post("/models/parse")
async def parse_model(request: Request, backend: Backend) -> JSONResponse:
    filename, data = (await read_form(request)).file("model")
    return schemas.ok(shapes.model_parsed(backend.ai.parse(filename, data)))


@router.post("/models/upload")
async def upload_model(request: Request, backend: Backend) -> JSONResponse:
    form = await read_form(request)
    filename, data = form.file("model")
    f = form.fields
    try:
        threshold = float(f.get("threshold") or 0)
        max_detections = int(f.get("max_detections") or 0)
    except ValueError as err:
        raise InvalidInput("threshold and max_detections must be numbers", resource="parameter") from err
    upload = ModelUpload(
        filename,
        data,
        f.get("model_id", ""),
        f.get("model_type", ""),
        f.get("variant", ""),
        threshold,
        max_detections,
    )
    info = backend.ai.upload(upload)
    return schemas.ok(shapes.model_uploaded(info, filename))


@router.post("/models/scan")
async def scan_models(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.ai.scan())


@router.get("/models/{model_id}")
async def get_model(model_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.model_info(backend.ai.get(model_id)))


@router.delete("/models/{model_id}")
async def delete_model(model_id: str, backend: Backend) -> JSONResponse:
    affected = backend.ai.delete(model_id)
    return schemas.ok({"model_id": model_id, "message": "Model deleted", "affected_apps": list(affected)})


@router.get("/models/{model_id}/apps")
async def model_apps(model_id: str, backend: Backend) -> JSONResponse:
    return schemas.ok({"model_id": model_id, "apps": list(backend.ai.model_apps(model_id)) or None})


@router.post("/models/{model_id}/load")
async def load_model(model_id: str, backend: Backend) -> JSONResponse:
    info = backend.ai.load(model_id)
    return schemas.ok({"model_id": info.model_id, "status": "loaded"})


@router.post("/models/{model_id}/unload")
async def unload_model(model_id: str, backend: Backend) -> JSONResponse:
    info = backend.ai.unload(model_id)
    return schemas.ok({"model_id": info.model_id, "status": "uploaded"})


@router.get("/stats")
async def ai_stats(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.ai_stats(backend.ai.stats()))
