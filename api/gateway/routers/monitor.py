"""``/api/v1/monitor/*`` and ``/api/v1/processes*``: figures computed from what runs on the camera."""

from __future__ import annotations

import json

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, StreamingResponse

from api.gateway import schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes

router = APIRouter(prefix="/api/v1/monitor", tags=["monitor"], dependencies=[Depends(require_session)])
processes = APIRouter(prefix="/api/v1/processes", tags=["processes"], dependencies=[Depends(require_session)])


@router.get("/summary")
async def summary(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.summary())


@router.get("/cpu")
async def cpu(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.cpu())


@router.get("/memory")
async def memory(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.memory())


@router.get("/disk")
async def disk(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.partitions(backend.storage.usage()))


@router.get("/network")
async def network(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.network())


@router.get("/gyro/attitude")
async def gyro_attitude(backend: Backend, rate: str = "50") -> StreamingResponse:
    """SSE: ``rate`` in Hz, 50 by default, clamped to 1..200; a value that does not parse is 1."""
    try:
        hz = min(200.0, max(1.0, float(rate)))
    except ValueError:
        hz = 1.0

    async def events():
        async for name, data in backend.monitor.attitude(hz, backend.clock):
            yield f"event:{name}\ndata:{json.dumps(data)}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


@router.get("/snapshot")
async def snapshot(backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.snapshot())


@processes.get("")
async def list_processes(
    backend: Backend, sort: str = "cpu", limit: int = 50, search: str = ""
) -> JSONResponse:
    return schemas.ok(backend.monitor.processes(sort, limit, search))


@processes.get("/{pid}")
async def get_process(pid: int, backend: Backend) -> JSONResponse:
    return schemas.ok(backend.monitor.process(pid))


@processes.post("/{pid}/kill")
async def kill(pid: int, backend: Backend, signal: str = "SIGTERM") -> JSONResponse:
    return schemas.ok(backend.monitor.kill(pid, signal))
