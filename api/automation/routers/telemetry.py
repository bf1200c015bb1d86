"""Telemetry history per device and the cross-device query (jwt-or-api-key)."""

import dataclasses

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, catalogued
from api.automation.schemas import ok
from api.automation.schemas import telemetry as schemas
from hardware.ports.devices import SourceQuery, TelemetryQuery
from hardware.ports.errors import InvalidInput

router = APIRouter(tags=["telemetry"])


@router.get("/devices/{device_id}/telemetry")
async def telemetry(
    request: Request,
    device_id: str,
    backend: Backend,
    metric: str | None = None,
    start: float | None = None,
    end: float | None = None,
    hours: int | None = None,
    aggregate: str | None = None,
    limit: int = 100,
    offset: int = 0,
    cursor: float | None = None,
    history: bool = False,
    bucketed: bool = False,
) -> JSONResponse:
    query = TelemetryQuery(metric, start, end, hours, aggregate, limit, offset, cursor, history, bucketed)
    if request.app.state.release == "0.9.17":
        query = as_0917(query, backend.clock.now())
    return ok(schemas.telemetry_page(backend.telemetry.read(device_id, query)), backend.clock.now())


@router.get("/devices/{device_id}/telemetry/summary")
async def telemetry_summary(device_id: str, backend: Backend, hours: int = 24) -> JSONResponse:
    """Per metric over the last ``hours``: the newest point and avg/min/max/count (appendix)."""
    if not 1 <= hours <= 720:
        raise InvalidInput("hours must be between 1 and 720", field="hours")
    end = backend.clock.now()
    start = end - hours * 3600
    summary = {}
    for metric in backend.devices.current(device_id).metrics:
        window = TelemetryQuery(metric=metric.name, start=start, end=end, limit=1)
        newest = backend.telemetry.read(device_id, window).series
        numeric = metric.data_type in ("float", "integer")
        totals = backend.telemetry.read(device_id, dataclasses.replace(window, aggregate="avg")).series
        summary[metric.name] = schemas.metric_summary(
            metric, newest[0] if newest else None, totals[0] if totals and numeric else None
        )
    body = {"device_id": device_id, "summary": summary, "start": int(start), "end": int(end)}
    return ok(body, backend.clock.now())


def as_0917(q: TelemetryQuery, now: float) -> TelemetryQuery:
    """The same query as release 0.9.17 read it (reference §5): ``hours`` ignored, ``value`` always
    the average, a ``cursor`` taken as the window's start (it does not page backwards), and an
    ``offset`` over 100 taken as "seconds before ``end``" rather than rows to skip."""
    start, offset = q.start, q.offset
    if q.cursor is not None:
        start = q.cursor
    if offset > 100:
        start, offset = (q.end if q.end is not None else now) - offset, 0
    aggregate = "avg" if q.aggregate is not None else None
    return dataclasses.replace(q, start=start, hours=None, aggregate=aggregate, offset=offset, cursor=None)


@router.get("/telemetry")
async def query_telemetry(
    backend: Backend,
    source: str | None = None,
    metric: str | None = None,
    start: float | None = None,
    end: float | None = None,
    limit: int = 100,
    offset: int = 0,
    aggregate: str | None = None,
) -> JSONResponse:
    query = SourceQuery(source, metric, start, end, limit, offset, aggregate)
    return ok(schemas.source_series(backend.telemetry.read_source(query)), backend.clock.now())


catalogued(router)
