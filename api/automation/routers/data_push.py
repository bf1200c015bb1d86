"""Data push targets (jwt-or-api-key): CRUD, start/stop, a real test push, delivery logs. Enveloped."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, catalogued
from api.automation.schemas import data_push as wire
from api.automation.schemas import ok

router = APIRouter(tags=["data-push"])


@router.get("/data-push")
async def list_targets(backend: Backend) -> JSONResponse:
    targets = backend.push.list_targets()
    return ok({"targets": [wire.target(t) for t in targets], "total": len(targets)}, backend.clock.now())


@router.get("/data-push/stats")
async def push_stats(backend: Backend) -> JSONResponse:
    return ok(wire.stats(backend.push.list_targets()), backend.clock.now())


@router.post("/data-push")
async def create_target(body: wire.TargetRequest, backend: Backend) -> JSONResponse:
    return ok(wire.created(backend.push.create_target(body.spec())), backend.clock.now())


@router.get("/data-push/{target_id}")
async def get_target(target_id: str, backend: Backend) -> JSONResponse:
    return ok(wire.target(backend.push.get_target(target_id)), backend.clock.now())


@router.put("/data-push/{target_id}")
async def update_target(target_id: str, body: wire.TargetUpdate, backend: Backend) -> JSONResponse:
    return ok(wire.target(backend.push.update_target(target_id, body.changes())), backend.clock.now())


@router.delete("/data-push/{target_id}")
async def delete_target(target_id: str, backend: Backend) -> JSONResponse:
    backend.push.delete_target(target_id)
    return ok({"id": target_id, "deleted": True}, backend.clock.now())


@router.post("/data-push/{target_id}/test")
async def test_target(target_id: str, backend: Backend) -> JSONResponse:
    entry = await backend.push.test_target(target_id)
    data = {"target_id": target_id, "success": entry.status == "success", "log": wire.log(entry)}
    return ok(data, backend.clock.now())


@router.post("/data-push/{target_id}/start")
async def start_target(target_id: str, backend: Backend) -> JSONResponse:
    t = backend.push.start_target(target_id)
    return ok({"id": t.id, "enabled": t.enabled, "message": "Push target started"}, backend.clock.now())


@router.post("/data-push/{target_id}/stop")
async def stop_target(target_id: str, backend: Backend) -> JSONResponse:
    t = backend.push.stop_target(target_id)
    return ok({"id": t.id, "enabled": t.enabled, "message": "Push target stopped"}, backend.clock.now())


@router.get("/data-push/{target_id}/logs")
async def target_logs(target_id: str, backend: Backend, limit: int = 100) -> JSONResponse:
    logs = backend.push.target_logs(target_id, limit)
    return ok({"logs": [wire.log(e) for e in logs], "total": len(logs)}, backend.clock.now())


catalogued(router)
