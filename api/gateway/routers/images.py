"""``/api/v1/images*``: images imported on the device; pulling from a registry is disabled."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes
from api.gateway.schemas.files import field, json_object

router = APIRouter(prefix="/api/v1/images", tags=["images"], dependencies=[Depends(require_session)])


@router.get("")
async def list_images(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.images(backend.containers.image_infos()))


@router.post("/pull")
async def pull(request: Request, backend: Backend) -> JSONResponse:
    image = field(json_object(await request.body()), "image", str, required=True)
    backend.containers.pull(image)
    return schemas.ok({"message": f"Image {image} pulled"})


@router.delete("/{image}")
async def delete_image(image: str, backend: Backend) -> JSONResponse:
    backend.containers.delete_image(image)
    return schemas.ok({"message": f"Image {image} deleted"})
