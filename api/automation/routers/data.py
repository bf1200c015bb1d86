"""Data views: the unified data sources the data explorer lists, extension metrics (data sources,
stored points, pushes), telemetry and device statistics, the resources rules can use (enveloped;
jwt-or-api-key) and the images devices sent (``/images/*path``: public, the file's bytes, failures
in plain text as the vendor's file server answers them)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Path, Query
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.routers.extension_stream import ExtensionId
from api.automation.schemas import data as wire
from api.automation.schemas import ok
from api.json_input import I64_MAX, I64_MIN
from hardware.ports.data import SourceFilter
from hardware.ports.errors import InvalidInput, NotFound

IMAGE_CACHE = "public, max-age=2592000, immutable"


async def data_sources(
    backend: Backend,
    source_type: str | None = None,
    source: str | None = None,
    search: str | None = None,
    offset: int = Query(0, ge=0),
    limit: int = Query(15, ge=0),
    skip_telemetry: bool = False,
) -> JSONResponse:
    capped = min(limit, 5000 if skip_telemetry else 100)
    page = backend.data.data_sources(
        SourceFilter(source_type, source, search, offset, capped, skip_telemetry)
    )
    body = {
        "data": [dict(r) for r in page.rows],
        "total": page.total,
        "source_options": [list(pair) for pair in page.source_options],
    }
    return ok(body, backend.clock.now())


async def extension_sources(extension_id: ExtensionId, backend: Backend) -> JSONResponse:
    rows = wire.extension_data_sources(backend.extensions.get_extension(extension_id))
    return ok(rows, backend.clock.now())


Timestamp = Annotated[int | None, Query(ge=I64_MIN, le=I64_MAX)]
"""The server's ``TimeRangeQuery`` bounds: i64 Unix seconds."""


async def extension_metric_data(
    extension_id: ExtensionId,
    metric: str,
    backend: Backend,
    start: Timestamp = None,
    end: Timestamp = None,
    limit: int = Query(1000, ge=0),
) -> JSONResponse:
    return ok(
        dict(backend.data.extension_metric_data(extension_id, metric, start, end, limit)), backend.clock.now()
    )


async def push_metrics(extension_id: ExtensionId, backend: Backend, body: Any = Body(...)) -> JSONResponse:
    metrics = body.get("metrics") if isinstance(body, dict) else None
    if metrics is None:
        raise InvalidInput("Missing 'metrics' field", field="metrics")
    if not isinstance(metrics, dict):
        raise InvalidInput("'metrics' must be an object", field="metrics")
    stored, total = backend.data.push_extension_metrics(extension_id, metrics)
    return ok({"ok": True, "stored": stored, "total": total}, backend.clock.now())


async def telemetry_stats(backend: Backend) -> JSONResponse:
    return ok(dict(backend.telemetry_stats.stats()), backend.clock.now())


async def device_stats(backend: Backend) -> JSONResponse:
    return ok(dict(backend.data.device_stats()), backend.clock.now())


async def rule_resources(backend: Backend) -> JSONResponse:
    return ok(dict(backend.data.rule_resources()), backend.clock.now())


async def image(path: Annotated[str, Path()], backend: Backend) -> Response:
    try:
        found = backend.images.get(path)
    except InvalidInput as err:
        return PlainTextResponse(err.message, status_code=400)
    except NotFound as err:
        return PlainTextResponse(err.message, status_code=404)
    return Response(found.content, media_type=found.content_type, headers={"Cache-Control": IMAGE_CACHE})


ROUTES: list[Route] = [
    ("GET", "/data/sources", data_sources),
    ("GET", "/extensions/{id}/data-sources", extension_sources),
    ("GET", "/extensions/{id}/metrics/{metric}/data", extension_metric_data),
    ("POST", "/extensions/{id}/push-metrics", push_metrics),
    ("GET", "/telemetry/stats", telemetry_stats),
    ("GET", "/stats/devices", device_stats),
    ("GET", "/rules/resources", rule_resources),
    ("GET", "/images/{path:path}", image),
]


router = catalogued_router(ROUTES, "data")
