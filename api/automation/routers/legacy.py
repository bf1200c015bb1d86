"""Paths of the earlier revision of the interface, served only by the ``0.9.17`` release profile:
``GET /devices/:id/history`` (``metric``, ``time_range``), ``POST /devices/:id/control``
(``command``, ``params``) and ``GET``/``POST /devices/types``."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from api.automation.deps import Backend, catalogued
from api.automation.routers import device_types, devices
from api.automation.schemas import devices as device_schemas
from api.automation.schemas import ok
from api.automation.schemas import telemetry as telemetry_schemas
from hardware.ports.devices import TelemetryQuery
from hardware.ports.errors import InvalidInput

router = APIRouter(tags=["earlier revision"])
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


class ControlRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    command: str
    params: dict[str, Any] = {}


def time_range_seconds(value: str) -> int:
    """``"3600"``, ``"90m"``, ``"24h"``, ``"7d"`` → seconds (at most 30 days)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", value)
    if match is None:
        raise InvalidInput(f"invalid time_range {value!r}: use seconds or a number with s, m, h or d")
    seconds = int(match.group(1)) * UNITS[match.group(2) or "s"]
    if not 0 < seconds <= 30 * 86_400:
        raise InvalidInput("time_range must be between 1 second and 30 days")
    return seconds


@router.get("/devices/types")
async def list_device_types(backend: Backend) -> JSONResponse:
    return await device_types.list_device_types(backend)


@router.post("/devices/types")
async def create_device_type(body: device_schemas.DeviceTypeBody, backend: Backend) -> JSONResponse:
    return await device_types.create_device_type(body, backend)


@router.get("/devices/{device_id}/history")
async def history(device_id: str, backend: Backend, metric: str | None = None, time_range: str = "24h",
                  limit: int = 100) -> JSONResponse:  # fmt: skip
    end = backend.clock.now()
    query = TelemetryQuery(metric=metric, start=end - time_range_seconds(time_range), end=end, limit=limit)
    return ok(telemetry_schemas.telemetry_page(backend.telemetry.read(device_id, query)), backend.clock.now())


@router.post("/devices/{device_id}/control")
async def control(device_id: str, body: ControlRequest, backend: Backend) -> JSONResponse:
    return await devices.send_command(
        device_id, body.command, backend, device_schemas.CommandRequest(params=body.params)
    )


catalogued(router)  # none of these paths is in the catalogue: all protected
