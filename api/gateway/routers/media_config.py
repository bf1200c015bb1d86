"""The camera daemon's configuration under ``/api/v1/media``: the whole document (get, post,
export, import), one allow-listed field, encoders (hot update and full reconfigure), RTSP,
profiles, the pipeline, media streams; and the spec's ``/api/v1/streams`` listing."""

from __future__ import annotations

from pathlib import PurePosixPath

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import Body, is_json
from api.gateway.rtsp import RtspServer
from api.gateway.schemas.binding import bind
from api.gateway.schemas.system import ok_msg
from hardware.ports.errors import Forbidden, InternalError, InvalidInput, NotFound
from hardware.ports.gateway import GatewayBackend
from hardware.ports.media import StreamConfig

router = APIRouter(prefix="/api/v1/media", tags=["media"], dependencies=[Depends(require_session)])
streams_router = APIRouter(prefix="/api/v1/streams", tags=["media"], dependencies=[Depends(require_session)])
FIELD_TYPES = {0: "BOOL", 1: "INT32", 2: "UINT32", 3: "FLOAT64", 4: "STRING"}


async def _rtsp_follows(request: Request) -> None:
    """The camera's RTSP server (where one runs) listens where the configuration now says:
    ``rtsp.enabled`` starts or stops it, ``rtsp.port`` moves it, as the daemon does."""
    rtsp: RtspServer | None = getattr(request.app.state, "rtsp", None)
    if rtsp is not None:
        await rtsp.reconcile()


def _uint(body: Body, name: str) -> int:
    value = body.int(name)
    if value < 0:
        raise InvalidInput(f"{name} must not be negative")
    return value


@router.get("/config")
async def get_config(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.media_config.config())


@router.post("/config")
async def set_config(request: Request, backend: Backend) -> JSONResponse:
    if not is_json(request):
        return errors.unsupported_media()
    backend.media_config.set_config(Body(await request.body(), "Invalid request body").body)
    await _rtsp_follows(request)
    return schemas.ok({"message": "Configuration saved and applied"})


@router.get("/config/field")
async def get_field(request: Request, backend: Backend) -> JSONResponse:
    path = request.query_params.get("field_path", "")
    if not path:
        raise InvalidInput("field_path is required")
    kind, value = backend.media_config.config_field(path)
    return schemas.ok({"field_path": path, "type": kind, "type_name": FIELD_TYPES[kind], "value": value})


@router.put("/config/field")
async def set_field(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    path = body.str("field_path", required=True)
    if not body.has("type"):
        raise InvalidInput("Invalid request format: type is required")
    kind = body.int("type")
    if kind not in FIELD_TYPES:
        raise InvalidInput("type must be between 0 and 4")
    backend.media_config.set_config_field(path, kind, body.str("value", required=True))
    await _rtsp_follows(request)
    return schemas.ok({"message": "Config field applied successfully"})


@router.get("/config/export")
async def export_config(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.media_config.export_config())


@router.post("/config/import")
async def import_config(request: Request, backend: Backend) -> JSONResponse:
    if not is_json(request):
        return errors.unsupported_media()
    body = Body(await request.body())
    config = body.obj("config", required=True)
    backend.media_config.import_config(
        body.str("schema", required=True), body.int("version", required=True), config or {}
    )
    await _rtsp_follows(request)
    return ok_msg("Configuration imported")


@router.put("/encoder")
async def set_encoder(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    name = body.str("stream_name", required=True)
    backend.media_config.set_encoder(
        name, _uint(body, "bitrate_bps"), _uint(body, "framerate"), _uint(body, "gop")
    )
    return schemas.ok({"message": "Encoder config updated successfully", "stream": name})


@router.put("/encoder/reconfig")
async def reconfig_encoder(request: Request, backend: Backend) -> JSONResponse:
    body = Body(await request.body())
    interrupt = backend.media_config.reconfigure_encoder(
        body.str("stream_name", required=True),
        _uint(body, "width"),
        _uint(body, "height"),
        body.str("codec"),
        _uint(body, "bitrate_bps"),
        _uint(body, "fps"),
        _uint(body, "gop"),
    )
    return schemas.ok({"message": "Encoder reconfigured", "interrupt_ms": interrupt})


@router.put("/rtsp")
async def set_rtsp(request: Request, backend: Backend) -> JSONResponse:
    """``enabled`` is a plain Go bool: absent (``{}``) binds as false, so the stream is disabled."""
    enabled = Body(await request.body(), "Invalid request body").bool("enabled")
    backend.media_config.set_rtsp(enabled)
    await _rtsp_follows(request)
    return schemas.ok({"message": "RTSP state updated successfully", "enabled": enabled})


@router.get("/profile")
async def get_profile(backend: Backend) -> JSONResponse:
    return schemas.ok({"profile_name": backend.media_config.profile()["name"]})


@router.get("/profiles")
async def list_profiles(backend: Backend) -> JSONResponse:
    rows = backend.media_config.profiles()
    current = next((name for name, on in rows if on), "")
    return schemas.ok({"profiles": [name for name, _ in rows] or None, "current_profile": current})


@router.post("/profile/switch")
async def switch_profile(request: Request, backend: Backend) -> JSONResponse:
    """``SwitchProfile``: ``{profile_name}``; a name outside the daemon's switch allowlist and one it
    lacks are its gRPC refusals (PermissionDenied, InvalidArgument), answered as 7002."""
    name = bind(await request.body(), "", {"profile_name": "string"}).get("profile_name", "")
    if not name:
        raise InvalidInput("profile_name is required", resource="parameter")
    try:
        backend.media_config.switch_profile(name)
    except NotFound as err:
        detail = "Switch profile failed: rpc error: code = InvalidArgument desc = unknown profile"
        raise InternalError(detail, resource="camera") from err
    except Forbidden as err:
        refusal = "code = PermissionDenied desc = profile not in switch allowlist"
        detail = "Switch profile failed: rpc error: " + refusal
        raise InternalError(detail, resource="camera") from err
    await _rtsp_follows(request)
    return schemas.ok({"success": True, "message": "ok", "interrupt_ms": 0})


@router.post("/profile/backup")
async def backup_profile(request: Request, backend: Backend) -> JSONResponse:
    """``BackupProfile`` binds ``path`` and ignores a body it cannot bind; the twin keeps the backup as a
    profile named by ``name`` (its own field), else by the path's last part, else the current profile's."""
    try:
        body = bind(await request.body(), "", {"path": "string", "name": "string"})
    except InvalidInput:
        body = {}
    name = body.get("name") or PurePosixPath(body.get("path", "")).name
    backend.media_config.backup_profile(name)
    return schemas.ok({"success": True, "message": "Profile backed up"})


@router.post("/pipeline/reconfigure")
async def reconfigure_pipeline(backend: Backend) -> JSONResponse:
    interrupt = backend.media_config.reconfigure_pipeline()
    return schemas.ok({"message": "Pipeline reconfigured", "interrupt_ms": interrupt})


STREAM_REQ = {
    "stream_id": "string",
    "name": "string",
    "width": "uint32",
    "height": "uint32",
    "fps": "uint32",
    "codec": "string",
    "bitrate": "uint32",
    "bitrate_bps": "uint32",
    "gop": "uint32",
}
"""``AddStream``'s struct (``stream_id``, ``width``, ``height``, ``fps`` required), with the twin's older
``name`` and ``bitrate_bps`` still read."""
STREAM_REQUIRED = {"stream_id": "StreamID", "width": "Width", "height": "Height", "fps": "FPS"}


def _required(field: str) -> str:
    """gin's validator line for a ``binding:"required"`` field of an anonymous struct."""
    return f"Key: '{field}' Error:Field validation for '{field}' failed on the 'required' tag"


@router.post("/streams")
async def add_stream(request: Request, backend: Backend) -> JSONResponse:
    body = bind(await request.body(), "", STREAM_REQ)
    body["stream_id"] = body.get("stream_id") or body.get("name", "")
    missing = [_required(go) for key, go in STREAM_REQUIRED.items() if not body.get(key)]
    if missing:
        raise InvalidInput("Invalid request body: " + "\n".join(missing))
    config = StreamConfig(
        body["stream_id"],
        body.get("codec") or "h264",
        body["width"],
        body["height"],
        body["fps"],
        body.get("bitrate") or body.get("bitrate_bps") or 1_000_000,
        body.get("gop") or 50,
    )
    backend.media_config.add_stream(config)
    return schemas.ok({"message": "Stream added successfully", "stream_id": config.stream_id})


@router.delete("/streams/{name}")
async def remove_stream(name: str, backend: Backend) -> JSONResponse:
    if name == "main":
        raise InvalidInput("Cannot remove main stream")
    backend.media_config.remove_stream(name)
    return schemas.ok({"message": "Stream removed successfully", "stream": name})


def _enabled(backend: GatewayBackend, name: str) -> bool:
    row = next((s for s in backend.media_config.config()["streams"] if s["name"] == name), None)
    if row is None:
        raise NotFound(f"Stream not found in config: {name}")
    return bool(row["enabled"])


@router.post("/streams/{name}/enable")
async def enable_stream(name: str, backend: Backend) -> JSONResponse:
    if name == "main":
        raise InvalidInput("Main stream is always enabled")
    if _enabled(backend, name):
        return schemas.ok({"message": "Stream is already enabled", "stream": name})
    backend.media_config.enable_stream(name, True)
    text = "Stream enabled successfully (incremental, no interruption to other streams)"
    return schemas.ok({"message": text, "stream": name})


@router.delete("/streams/{name}/disable")
async def disable_stream(name: str, backend: Backend) -> JSONResponse:
    if name == "main":
        raise InvalidInput("Main stream cannot be disabled")
    if not _enabled(backend, name):
        return schemas.ok({"message": "Stream is already disabled", "stream": name})
    backend.media_config.enable_stream(name, False)
    return schemas.ok(
        {"message": "Stream disabled successfully — parameters preserved in config", "stream": name}
    )


def _info(c: StreamConfig) -> dict[str, object]:
    """The spec's ``StreamInfo``."""
    return {
        "id": c.stream_id,
        "name": c.stream_id,
        "url": f"/api/v1/h264/{c.stream_id}",
        "width": c.width,
        "height": c.height,
        "fps": c.fps,
        "codec": c.codec,
        "bitrate": c.bitrate_bps,
    }


@streams_router.get("")
async def list_streams(backend: Backend) -> JSONResponse:
    return schemas.ok({"streams": [_info(c) for c in backend.media.streams()]})


@streams_router.get("/{stream_id}")
async def get_stream(stream_id: str, backend: Backend) -> JSONResponse:
    for c in backend.media.streams():
        if c.stream_id == stream_id:
            return schemas.ok(_info(c))
    raise NotFound(f"stream {stream_id} not found", resource="stream")
