"""Telemetry history per device and the cross-device query (jwt-or-api-key)."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, current_user
from api.automation.schemas import ok
from api.automation.schemas import telemetry as schemas
from hardware.ports.devices import SourceQuery, TelemetryQuery

router = APIRouter(tags=["telemetry"], dependencies=[Depends(current_user)])


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
    if request.app.state.release == "0.9.17":  # hours was ignored and value was always the average
        hours, aggregate = None, "avg" if aggregate is not None else None
    query = TelemetryQuery(metric, start, end, hours, aggregate, limit, offset, cursor, history, bucketed)
    return ok(schemas.telemetry_page(backend.devices.telemetry(device_id, query)), backend.clock.now())


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
    return ok(schemas.source_series(backend.devices.query_telemetry(query)), backend.clock.now())
