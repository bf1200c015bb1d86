"""Extensions: listing and the read side (public), commands, components, assets, directory sync,
enable/uninstall, metrics, and the stream session route
(:mod:`api.automation.routers.extension_stream`). The marketplaces are
:mod:`api.automation.routers.market`. Enveloped.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.routers.extension_stream import ExtensionId, stream
from api.automation.schemas import ok
from api.automation.schemas.extensions import (
    CommandBody,
    ConfigBody,
    EnabledBody,
    RegisterBody,
    capability_info,
    dashboard_component,
    extension_info,
)
from api.body_limit import BodyTooLarge
from hardware.ports.errors import InvalidInput


# HTTP routes -----------------------------------------------------------------------------------
async def list_extensions(backend: Backend) -> JSONResponse:
    return ok([extension_info(e) for e in backend.extensions.list_extensions()], backend.clock.now())


async def list_types(backend: Backend) -> JSONResponse:
    types = backend.extensions.types()
    return ok({"types": types, "count": len(types)}, backend.clock.now())


async def dashboard_components(backend: Backend) -> JSONResponse:
    exts = backend.extensions.list_extensions()
    return ok([dashboard_component(e.id, c) for e in exts for c in e.components], backend.clock.now())


async def get_extension(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    return ok(extension_info(backend.extensions.get_extension(extension_id)), backend.clock.now())


async def health(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    return ok(dict(backend.extensions.health(extension_id)), backend.clock.now())


async def list_commands(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    commands = extension_info(backend.extensions.get_extension(extension_id))["commands"]
    return ok(
        {"extension_id": extension_id, "commands": commands, "count": len(commands)}, backend.clock.now()
    )


async def run_command(extension_id: ExtensionId, body: CommandBody, backend: Backend) -> JSONResponse:
    r = backend.extensions.command(extension_id, body.command, body.args)
    data = {
        "extension_id": r.extension_id,
        "command": r.command,
        "success": r.success,
        "output": dict(r.output),
        "duration_ms": r.duration_ms,
    }
    return ok(data, backend.clock.now())


async def components(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    e = backend.extensions.get_extension(extension_id)
    rows = [dashboard_component(e.id, c) for c in e.components]
    return ok({"extension_id": e.id, "extension_name": e.name, "components": rows}, backend.clock.now())


async def asset(extension_id: ExtensionId, asset_path: str, backend: Backend) -> Response:
    content, media_type = backend.extensions.asset(extension_id, asset_path)
    return Response(content, media_type=media_type)


async def stream_capability(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    ext = backend.extensions.get_extension(extension_id)
    data = {"extension_id": ext.id, "capability": capability_info(ext.stream) if ext.stream else None}
    return ok(data, backend.clock.now())


async def set_enabled(extension_id: ExtensionId, body: EnabledBody, backend: Backend) -> JSONResponse:
    ext = backend.extensions.set_enabled(extension_id, body.enabled)
    return ok({"id": ext.id, "enabled": ext.enabled, "state": ext.state}, backend.clock.now())


async def uninstall(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    backend.extensions.uninstall(extension_id)
    return ok({"id": extension_id, "deleted": True}, backend.clock.now())


async def stream_sessions(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    rows = [dict(s) for s in backend.extensions.sessions(extension_id)]
    return ok({"extension_id": extension_id, "sessions": rows, "count": len(rows)}, backend.clock.now())


async def set_command_enabled(
    extension_id: ExtensionId, cmd: str, body: EnabledBody, backend: Backend
) -> JSONResponse:
    ext = backend.extensions.set_command_enabled(extension_id, cmd, body.enabled)
    data = {"id": ext.id, "command": cmd, "enabled": cmd not in ext.disabled_commands}
    return ok(data, backend.clock.now())


async def start(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    ext = backend.extensions.set_enabled(extension_id, True)
    return ok({"id": ext.id, "state": ext.state}, backend.clock.now())


async def stop(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    ext = backend.extensions.set_enabled(extension_id, False)
    return ok({"id": ext.id, "state": ext.state}, backend.clock.now())


async def reload(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    ext = backend.extensions.reload(extension_id)
    return ok({"id": ext.id, "reloaded": True, "loaded_at": int(ext.loaded_at)}, backend.clock.now())


async def descriptor(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    return ok(dict(backend.extensions.descriptor(extension_id)), backend.clock.now())


async def get_config(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    ext = backend.extensions.get_extension(extension_id)
    return ok({"id": ext.id, "config": dict(ext.config)}, backend.clock.now())


async def put_config(extension_id: ExtensionId, body: ConfigBody, backend: Backend) -> JSONResponse:
    ext = backend.extensions.set_config(extension_id, body.config)
    return ok({"id": ext.id, "config": dict(ext.config)}, backend.clock.now())


async def get_logs(extension_id: ExtensionId, backend: Backend, limit: int = 100) -> JSONResponse:
    rows = [dict(r) for r in backend.extensions.logs(extension_id, max(1, min(limit, 1000)))]
    return ok({"extension_id": extension_id, "logs": rows, "count": len(rows)}, backend.clock.now())


async def clear_logs(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    cleared = backend.extensions.clear_logs(extension_id)
    return ok({"extension_id": extension_id, "cleared": cleared}, backend.clock.now())


async def event_subscriptions(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    subscriptions = list(backend.extensions.descriptor(extension_id).get("event_subscriptions", []))
    data = {"extension_id": extension_id, "subscriptions": subscriptions, "count": len(subscriptions)}
    return ok(data, backend.clock.now())


async def all_capabilities(backend: Backend) -> JSONResponse:
    rows = [
        {"extension_id": e.id, "capability": capability_info(e.stream)}
        for e in backend.extensions.list_extensions()
        if e.stream is not None
    ]
    return ok({"capabilities": rows, "count": len(rows)}, backend.clock.now())


async def sync_status(backend: Backend) -> JSONResponse:
    return ok(dict(backend.extensions.sync_status()), backend.clock.now())


async def upload(request: Request, backend: Backend) -> JSONResponse:
    try:
        form = await request.form(max_files=1, max_fields=4)
    except BodyTooLarge:
        raise
    except Exception as err:  # not multipart, or malformed
        raise InvalidInput("Expected multipart form data with field 'file'") from err
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise InvalidInput("No file uploaded", field="file")
    data = await upload.read()  # under the route's body limit (api.automation.limits.UPLOADS)
    ext = backend.extensions.upload(upload.filename or "", data)
    return ok({"id": ext.id, "installed": True, "file_path": ext.file_path}, backend.clock.now())


async def register(body: RegisterBody, backend: Backend) -> JSONResponse:
    ext = backend.extensions.register(body.file_path)
    return ok({"id": ext.id, "installed": True, "file_path": ext.file_path}, backend.clock.now())


async def sync(backend: Backend) -> JSONResponse:
    r = backend.extensions.sync()
    data = {
        "scanned": r.scanned,
        "installed": list(r.installed),
        "skipped": list(r.skipped),
        "failed": [{"file": f, "reason": why} for f, why in r.failed],
    }
    return ok(data, backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/extensions", list_extensions),
    ("GET", "/extensions/types", list_types),
    ("GET", "/extensions/dashboard-components", dashboard_components),
    ("POST", "/extensions/sync", sync),
    ("POST", "/extensions/upload/file", upload),
    ("POST", "/extensions", register),
    ("GET", "/extensions/{id}", get_extension),
    ("GET", "/extensions/{id}/health", health),
    ("GET", "/extensions/{id}/commands", list_commands),
    ("POST", "/extensions/{id}/command", run_command),
    ("GET", "/extensions/{id}/components", components),
    ("GET", "/extensions/{id}/assets/{asset_path:path}", asset),
    ("GET", "/extensions/{id}/stream/capability", stream_capability),
    ("GET", "/extensions/{id}/stream/sessions", stream_sessions),
    ("GET", "/extensions/capabilities", all_capabilities),
    ("GET", "/extensions/sync-status", sync_status),
    ("PATCH", "/extensions/{id}/commands/{cmd}/enabled", set_command_enabled),
    ("POST", "/extensions/{id}/invoke", run_command),
    ("POST", "/extensions/{id}/start", start),
    ("POST", "/extensions/{id}/stop", stop),
    ("POST", "/extensions/{id}/reload", reload),
    ("GET", "/extensions/{id}/descriptor", descriptor),
    ("GET", "/extensions/{id}/config", get_config),
    ("PUT", "/extensions/{id}/config", put_config),
    ("GET", "/extensions/{id}/logs", get_logs),
    ("DELETE", "/extensions/{id}/logs", clear_logs),
    ("GET", "/extensions/{id}/event-subscriptions", event_subscriptions),
    ("PATCH", "/extensions/{id}/enabled", set_enabled),
    ("DELETE", "/extensions/{id}", uninstall),
    ("DELETE", "/extensions/{id}/uninstall", uninstall),
]


async def legacy_command(
    extension_id: ExtensionId, cmd: str, backend: Backend, body: dict[str, Any] | None = None
) -> JSONResponse:
    """The earlier revision's ``POST /extensions/:id/commands/:cmd``: the body is the arguments."""
    return await run_command(extension_id, CommandBody(command=cmd, args=body or {}), backend)


def router_for(release: str) -> APIRouter:
    """The extensions routes and the stream; release 0.9.17 also serves the earlier revision's
    ``POST /extensions/discover`` and ``POST /extensions/:id/commands/:cmd``."""
    earlier: list[Route] = [
        ("POST", "/extensions/discover", sync),
        ("POST", "/extensions/{id}/commands/{cmd}", legacy_command),
    ]
    router = catalogued_router([*ROUTES, *(earlier if release == "0.9.17" else [])], "extensions")
    router.add_api_websocket_route("/extensions/{id}/stream", stream)
    return router
