"""Rules (jwt-or-api-key): CRUD, enable, dry run, manual trigger, history. Enveloped."""

from fastapi import APIRouter, Body, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, catalogued
from api.automation.schemas import ok
from api.automation.schemas import rules as wire

router = APIRouter(tags=["rules"])


@router.get("/rules")
async def list_rules(backend: Backend) -> JSONResponse:
    rules = backend.rules.list_rules()
    return ok({"rules": [wire.rule(r) for r in rules], "count": len(rules)}, backend.clock.now())


@router.post("/rules")
async def create_rule(backend: Backend, body: object = Body(None)) -> JSONResponse:
    return ok({"rule": wire.rule(backend.rules.create_rule(body), detail=True)}, backend.clock.now())


@router.get("/rules/export")
async def export_rules(backend: Backend) -> JSONResponse:
    return ok(wire.export(backend.rules.list_rules(), backend.clock.now()), backend.clock.now())


@router.post("/rules/import")
async def import_rules(body: wire.ImportRequest, backend: Backend) -> JSONResponse:
    return ok(wire.imported(backend.rules.import_rules(body.rules)), backend.clock.now())


@router.post("/rules/validate")
async def validate_rule(backend: Backend, body: object = Body(None)) -> JSONResponse:
    errors = backend.rules.validate_rule(body)
    return ok({"valid": not errors, "errors": errors}, backend.clock.now())


@router.get("/rules/{rule_id}")
async def get_rule(rule_id: str, backend: Backend) -> JSONResponse:
    rule = backend.rules.get_rule(rule_id)
    history = [wire.execution(e) for e in backend.rules.rule_history(rule_id)]
    return ok({"rule": wire.rule(rule, detail=True), "history": history}, backend.clock.now())


@router.put("/rules/{rule_id}")
async def update_rule(rule_id: str, backend: Backend, body: object = Body(None)) -> JSONResponse:
    rule = backend.rules.update_rule(rule_id, body)
    return ok({"rule": wire.rule(rule, detail=True), "updated": True}, backend.clock.now())


@router.delete("/rules/{rule_id}")
async def delete_rule(rule_id: str, backend: Backend) -> JSONResponse:
    backend.rules.delete_rule(rule_id)
    return ok({"rule_id": rule_id, "deleted": True}, backend.clock.now())


@router.post("/rules/{rule_id}/enable")
async def enable_rule(rule_id: str, body: wire.EnableRequest, backend: Backend) -> JSONResponse:
    rule = backend.rules.enable_rule(rule_id, body.enabled)
    return ok({"rule_id": rule.id, "enabled": rule.enabled}, backend.clock.now())


@router.post("/rules/{rule_id}/test")
async def test_rule(rule_id: str, request: Request, backend: Backend, execute: bool = False) -> JSONResponse:
    value = wire.test_value(await request.body())
    result = backend.rules.test_rule(rule_id, value, execute=execute)
    return ok(wire.test_result(result), backend.clock.now())


@router.post("/rules/{rule_id}/trigger")
async def trigger_rule(rule_id: str, backend: Backend) -> JSONResponse:
    return ok(wire.trigger_result(backend.rules.trigger_rule(rule_id)), backend.clock.now())


@router.get("/rules/{rule_id}/history")
async def rule_history(rule_id: str, backend: Backend) -> JSONResponse:
    executions = [wire.execution(e) for e in backend.rules.rule_history(rule_id)]
    return ok({"rule_id": rule_id, "executions": executions}, backend.clock.now())


@router.get("/stats/rules")
async def rule_stats(backend: Backend) -> JSONResponse:
    return ok({"stats": wire.stats(backend.rules.list_rules())}, backend.clock.now())


catalogued(router)
