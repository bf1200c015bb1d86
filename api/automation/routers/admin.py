"""Administration (jwt-or-api-key): configuration export, import and validation (enveloped), and
the download of the server's log files as a ZIP archive."""

from __future__ import annotations

from fastapi import Query
from fastapi.responses import JSONResponse, Response

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import ok
from api.automation.schemas.admin import ConfigExport, ConfigImport, zip_headers


async def export_config(backend: Backend) -> JSONResponse:
    return ok(dict(backend.admin.export()), backend.clock.now())


async def import_config(body: ConfigImport, backend: Backend) -> JSONResponse:
    options = body.options.model_dump() if body.options is not None else None
    return ok(dict(backend.admin.import_config(body.config.to_port(), options)), backend.clock.now())


async def validate_config(body: ConfigExport, backend: Backend) -> JSONResponse:
    return ok(dict(backend.admin.validate(body.to_port())), backend.clock.now())


async def download_logs(backend: Backend, days: int | None = Query(None, ge=0, le=2**32 - 1)) -> Response:
    name, archive = backend.server_log.archive(days)
    return Response(archive, media_type="application/zip", headers=zip_headers(name))


ROUTES: list[Route] = [
    ("GET", "/config/export", export_config),
    ("POST", "/config/import", import_config),
    ("POST", "/config/validate", validate_config),
    ("GET", "/logs/download", download_logs),
]


router = catalogued_router(ROUTES, "administration")
