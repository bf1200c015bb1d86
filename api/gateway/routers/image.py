"""The picture settings under ``/api/v1/media`` (``handlers/media.go``): image (ISP), transform, OSD
(and its images), privacy masks and the AI overlay. Every change shows in the next rendered frame."""

from __future__ import annotations

import dataclasses
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import Body, is_json
from api.gateway.schemas import media as media_shapes
from api.gateway.schemas.files import read_form
from hardware.ports.camera_hw import OSD_IMAGE_DIR, AiOverlay
from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.gateway import GatewayBackend

router = APIRouter(prefix="/api/v1/media", tags=["media"], dependencies=[Depends(require_session)])
MAX_UPLOAD = 4 * 1024 * 1024
TRANSFORM_FLAGS = ("dewarp", "grayscale", "dis", "eis")
PICTURE = ("brightness", "contrast", "saturation", "sharpness")
ISP_FLAGS = ("manual_mode", "auto_exposure")
ISP_NUMBERS: tuple[str, ...] = (*PICTURE, "noise_reduction", "wdr_value", "backlight")
ISP_NUMBERS += ("exposure_time_us", "gain", "powerline_freq", "awb_index")
"""In ``ValidateISPUpdate``'s order (the first field out of range is the one reported)."""
ISP_FIELDS: tuple[str, ...] = ("manual_mode", *PICTURE, "auto_exposure", "backlight", "exposure_time_us")
ISP_FIELDS += ("gain", "noise_reduction", "wdr_value", "powerline_freq", "awb_index")
ISP_RANGES = {"exposure_time_us": (1, 1_000_000), "gain": (0, 1000), "powerline_freq": (0, 2)}
ISP_RANGES["awb_index"] = (-1, 16)
ISP_RANGE_TEXT = {"powerline_freq": "powerline_freq value {value} must be 0 (off), 1 (50Hz), or 2 (60Hz)"}


@router.get("/image")
async def get_image(backend: Backend) -> JSONResponse:
    """``GetImageConfig``: the daemon's 13 ISP fields, every key present; the four picture ones on
    its 0..100 scale (50 = neutral)."""
    current = dataclasses.asdict(backend.picture.image())
    return schemas.ok({k: 50 + current[k] // 2 if k in PICTURE else current[k] for k in ISP_FIELDS})


@router.put("/image")
async def put_image(request: Request, backend: Backend) -> JSONResponse:
    """``UpdateImageConfig``: only the fields sent change, checked as ``ValidateISPUpdate`` does."""
    body = Body(await request.body(), "Invalid request body")
    changes: dict[str, Any] = {k: body.bool(k) for k in ISP_FLAGS if body.has(k)}
    values = {k: body.int(k) for k in ISP_NUMBERS if body.has(k)}
    if any(not -(2**31) <= v < 2**31 for v in values.values()):
        raise InvalidInput("Invalid request body")  # not an int32: the bind fails
    for name, value in values.items():
        low, high = ISP_RANGES.get(name, (0, 100))
        if not low <= value <= high:
            text = ISP_RANGE_TEXT.get(name, "{name} value {value} out of range [{low}, {high}]")
            raise InvalidInput(text.format(name=name, value=value, low=low, high=high))
        changes[name] = (value - 50) * 2 if name in PICTURE else value
    backend.picture.set_image(dataclasses.replace(backend.picture.image(), **changes))
    return schemas.ok({"message": "ISP settings applied successfully"})


@router.get("/transform")
async def get_transform(backend: Backend) -> JSONResponse:
    """The handler's ``gin.H``: every key present; ``rotation`` 0-3 (0°, 90°, 180°, 270°), ``flip``
    0-3 (none, horizontal, vertical, both)."""
    t = backend.picture.transform()
    flip = (1 if t.mirror else 0) | (2 if t.flip else 0)
    fields = {"rotation": t.rotation // 90, "flip": flip}
    return schemas.ok(fields | {k: getattr(t, k) for k in TRANSFORM_FLAGS})


@router.put("/transform")
async def put_transform(request: Request, backend: Backend) -> JSONResponse:
    """Only the fields sent change (the handler merges them over the current configuration)."""
    body = Body(await request.body(), "Invalid request body")
    current = backend.picture.transform()
    rotation, flip = body.int("rotation", default=-1), body.int("flip", default=-1)
    if any(body.has(k) and not 0 <= v <= 0xFFFFFFFF for k, v in (("rotation", rotation), ("flip", flip))):
        raise InvalidInput("Invalid request body")  # not a uint32: the bind fails
    if body.has("rotation") and rotation not in range(4):
        raise InvalidInput(f"rotation value {rotation} must be 0 (0°), 1 (90°), 2 (180°), or 3 (270°)")
    if body.has("flip") and flip not in range(4):
        raise InvalidInput(f"flip value {flip} must be 0 (none), 1 (horizontal), 2 (vertical), or 3 (both)")
    changes: dict[str, Any] = {k: body.bool(k, default=getattr(current, k)) for k in TRANSFORM_FLAGS}
    if rotation >= 0:
        changes["rotation"] = rotation * 90
    if flip >= 0:
        changes |= {"mirror": bool(flip & 1), "flip": bool(flip & 2)}
    backend.picture.set_transform(dataclasses.replace(current, **changes))
    return schemas.ok({"message": "Transform config applied successfully"})


@router.get("/osd")
async def get_osd(backend: Backend) -> JSONResponse:
    return schemas.ok(media_shapes.osd(backend.picture.osd(), lambda name: _image_size(backend, name)))


def _image_size(backend: GatewayBackend, name: str) -> int:
    try:
        return len(backend.picture.osd_image(name).data)
    except NotFound:
        return 0


@router.put("/osd")
async def put_osd(request: Request, backend: Backend) -> JSONResponse:
    streams = media_shapes.parse_osd(await request.body(), lambda name: _image_size(backend, name) > 0)
    backend.picture.set_osd(streams)
    return schemas.ok({"message": "OSD config updated successfully"})


@router.post("/osd/upload-image")
async def upload_osd_image(request: Request, backend: Backend) -> JSONResponse:
    """``UploadOsdImage``: a PNG or BMP in the form field ``file``, saved under its base name; answers
    ``{path, size}`` (the path an image overlay's ``image_path`` names)."""
    try:
        form = await read_form(request)
        filename, data = form.file("file")
    except InvalidInput as err:
        raise InvalidInput("file is required: http: no such file") from err
    name = media_shapes.osd_upload_name(filename)
    if len(data) > MAX_UPLOAD:
        raise InvalidInput("File too large")
    backend.picture.upload_osd_image(name, form.content_types.get("file", ""), data)
    return schemas.ok({"path": f"{OSD_IMAGE_DIR}/{name}", "size": len(data)})


@router.get("/osd/font")
async def osd_font(backend: Backend) -> JSONResponse:
    return errors.fail(8000, "OSD font not installed: the OSD renders with the built-in stroke font")


@router.get("/osd/image/{name}")
async def osd_image(name: str, backend: Backend) -> Response:
    if ".." in name or "/" in name:
        raise InvalidInput("Invalid image name")
    file = backend.picture.osd_image(name)
    return Response(file.data, media_type=file.content_type)


@router.get("/privacy-mask")
async def get_privacy_mask(backend: Backend) -> JSONResponse:
    return schemas.ok(media_shapes.privacy_mask(backend.picture.privacy_masks()))


@router.put("/privacy-mask")
async def put_privacy_mask(request: Request, backend: Backend) -> JSONResponse:
    """``UpdatePrivacyMaskConfig``: JSON only (415 otherwise), decoded strictly; the fields sent are
    merged over the current configuration (``regions`` replaces them all)."""
    if not is_json(request):
        return errors.unsupported_media()
    config = media_shapes.parse_privacy_mask(await request.body(), backend.picture.privacy_masks())
    backend.picture.set_privacy_masks(config)
    return schemas.ok({"message": "Privacy mask config applied successfully"})


@router.put("/ai-overlay")
async def put_ai_overlay(request: Request, backend: Backend) -> JSONResponse:
    """``UpdateAiOverlay``: the four fields as sent (plain Go values: one not sent is false or 0, not
    kept); any bind failure is 1001 ``Invalid request body`` without Go's text."""
    backend.picture.set_ai_overlay(AiOverlay(**media_shapes.parse_ai_overlay(await request.body())))
    return schemas.ok({"message": "AI overlay config updated successfully"})
