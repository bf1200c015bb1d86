"""The marketplaces: extensions (``/extensions/market/*``), community dashboard components
(``/frontend-components*``) and cloud device types (``/device-types/cloud/*``). Enveloped.

The browsing routes are public and answer an unreachable marketplace with an empty list and
``error: "network_error"``, as the vendor's do; a component install fails with a real status in
release 0.9.24 and with 200 ``success: false`` in 0.9.17.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.routers.extension_stream import ExtensionId
from api.automation.schemas import market as wire
from api.automation.schemas import ok
from api.automation.schemas.extensions import InstallBody
from api.body_limit import BodyTooLarge
from hardware.ports.errors import DomainError, InternalError, InvalidInput, Unavailable


# Extension marketplace ---------------------------------------------------------------------------
async def extension_list(backend: Backend) -> JSONResponse:
    try:
        version, items = backend.market.extension_index()
    except Unavailable:
        return ok(wire.unreachable("extensions", "extensions"), backend.clock.now())
    return ok(wire.listing("extensions", version, items), backend.clock.now())


async def extension_detail(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    try:
        metadata = backend.market.extension_metadata(extension_id)
    except Unavailable as err:
        raise InternalError(f"Failed to fetch metadata: {err.message}") from err
    return ok(dict(metadata), backend.clock.now())


async def extension_readme(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    return ok({"content": backend.market.extension_readme(extension_id)}, backend.clock.now())


async def extension_updates(backend: Backend) -> JSONResponse:
    rows = [dict(r) for r in backend.market.extension_updates()]
    return ok({"updates_available": rows, "count": len(rows)}, backend.clock.now())


async def extension_install(body: wire.ExtensionInstallBody, backend: Backend) -> JSONResponse:
    result = backend.market.install_extension(body.id, body.version)
    return ok(wire.extension_install(result), backend.clock.now())


# Cloud device types ------------------------------------------------------------------------------
async def cloud_list(backend: Backend) -> JSONResponse:
    try:
        version, items = backend.market.cloud_device_types()
    except Unavailable:
        return ok(wire.unreachable("device_types", "device_types"), backend.clock.now())
    return ok(wire.listing("device_types", version, items, "index_version"), backend.clock.now())


async def cloud_import(body: wire.CloudImportBody, backend: Backend) -> JSONResponse:
    return ok(wire.cloud_import(backend.market.import_device_types(body.device_types)), backend.clock.now())


# Community components ----------------------------------------------------------------------------
async def component_market(backend: Backend) -> JSONResponse:
    try:
        version, items = backend.components.market_index()
    except Unavailable:
        return ok(wire.unreachable("components", "components"), backend.clock.now())
    return ok(wire.listing("components", version, [dict(c) for c in items]), backend.clock.now())


async def install_component(request: Request, body: InstallBody, backend: Backend) -> JSONResponse:
    component_id = body.component_id or body.id or ""
    if request.app.state.release == "0.9.17":
        # The earlier release answered every failure 200 with ``success: false`` (fixed in 0.9.24).
        try:
            manifest = backend.components.install_from_market(component_id)
        except DomainError as err:
            return JSONResponse({"success": False, "error": err.message})
    else:
        manifest = backend.components.install_from_market(component_id)
    return ok({"component": dict(manifest)}, backend.clock.now())


async def component_updates(backend: Backend) -> JSONResponse:
    rows, reached = backend.components.updates()
    data = {"updates": [dict(r) for r in rows], "count": len(rows)}
    return ok(data if reached else {**data, "error": wire.NETWORK_ERROR}, backend.clock.now())


async def installed_components(backend: Backend) -> JSONResponse:
    rows = [dict(c) for c in backend.components.installed()]
    types = [dict(t) for t in backend.components.builtin_types()]
    data = {"components": rows, "total": len(rows), "builtin_types": types, "builtin_count": len(types)}
    return ok(data, backend.clock.now())


async def installed_component(component_id: ExtensionId, backend: Backend) -> JSONResponse:
    return ok({"component": dict(backend.components.get(component_id))}, backend.clock.now())


async def component_bundle(component_id: ExtensionId, backend: Backend) -> Response:
    bundle = backend.components.bundle(component_id)
    return Response(bundle, media_type="application/javascript", headers={"Cache-Control": "no-cache"})


async def remove_component(component_id: ExtensionId, backend: Backend) -> JSONResponse:
    backend.components.remove(component_id)
    data = {"success": True, "component_id": component_id, "state": "uninstalled"}
    return ok(data, backend.clock.now())


async def upload_component(request: Request, backend: Backend) -> JSONResponse:
    try:
        form = await request.form(max_files=3, max_fields=8)
    except BodyTooLarge:
        raise
    except Exception as err:  # not multipart, or malformed
        raise InvalidInput(f"Multipart error: {err}") from err
    parts: dict[str, bytes | None] = {}
    for name in ("package", "manifest", "bundle"):
        value = form.get(name)
        parts[name] = (
            value.encode() if isinstance(value, str) else None if value is None else await value.read()
        )
    manifest = parts["manifest"]
    try:
        text = manifest.decode() if manifest is not None else None
    except UnicodeDecodeError as err:
        raise InvalidInput("Failed to read manifest field: invalid utf-8") from err
    result = backend.components.upload(text, parts["bundle"], parts["package"])
    return ok({"component": dict(result)}, backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/extensions/market/list", extension_list),
    ("GET", "/extensions/market/updates", extension_updates),
    ("POST", "/extensions/market/install", extension_install),
    ("GET", "/extensions/market/{id}", extension_detail),
    ("GET", "/extensions/market/{id}/readme", extension_readme),
    ("GET", "/device-types/cloud/list", cloud_list),
    ("POST", "/device-types/cloud/import", cloud_import),
    ("GET", "/frontend-components/market/list", component_market),
    ("POST", "/frontend-components/market/install", install_component),
    ("GET", "/frontend-components/updates", component_updates),
    ("GET", "/frontend-components", installed_components),
    ("POST", "/frontend-components", upload_component),
    ("GET", "/frontend-components/{id}", installed_component),
    ("DELETE", "/frontend-components/{id}", remove_component),
    ("GET", "/frontend-components/{id}/bundle", component_bundle),
]


router = catalogued_router(ROUTES, "market")
