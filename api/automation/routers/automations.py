"""Automations (jwt-or-api-key): the unified list over transforms, CRUD, enable, executions,
templates, export and import, intent analysis. Enveloped; the same in both releases.

The server's quirks are kept: an unknown id is ``NOT_FOUND`` "Automation not found not found";
enabling does not touch ``updated_at``; ``PUT`` merges only the definition keys it knows and never
``complexity``; export and import use the stored transform (no ``type``), so an import of what the
web app's single export writes (a ``definition`` inside) is refused.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from fastapi import Body, Path, Query
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.routers.transforms import ROUTES as TRANSFORM_ROUTES
from api.automation.schemas import automations as wire
from api.automation.schemas import ok
from hardware.ports.automations import AutomationChanges

Limit = Annotated[int | None, Query(ge=0, le=2**64 - 1)]
"""A Rust ``usize``."""
AutomationId = Annotated[str, Path(alias="id")]


async def list_automations(
    backend: Backend,
    kind: Annotated[Literal["transform", "all"] | None, Query(alias="type")] = None,
    enabled: bool | None = None,
    search: str | None = None,
    limit: Limit = None,
    offset: Limit = None,
) -> JSONResponse:
    rows = backend.automations.list_automations()  # every automation is a transform: ``kind`` keeps all
    if enabled is not None:
        rows = [t for t in rows if t.enabled == enabled]
    if search is not None:
        words = search.lower()
        rows = [t for t in rows if words in t.name.lower() or words in t.description.lower()]
    return ok(wire.page(rows, limit, offset), backend.clock.now())


async def create_automation(body: wire.CreateAutomation, backend: Backend) -> JSONResponse:
    created = backend.automations.create_automation(
        body.name, body.description, body.enabled, body.definition
    )
    data = {"automation": wire.automation_dto(created), "message": "Automation created successfully"}
    return ok(data, backend.clock.now())


async def get_automation(automation_id: AutomationId, backend: Backend) -> JSONResponse:
    found = backend.automations.get_automation(automation_id)
    return ok(
        {"automation": wire.automation_dto(found), "definition": wire.definition(found)}, backend.clock.now()
    )


async def update_automation(
    automation_id: AutomationId, body: wire.UpdateAutomation, backend: Backend
) -> JSONResponse:
    changes = AutomationChanges(body.name, body.description, body.enabled, body.definition)
    updated = backend.automations.update_automation(automation_id, changes)
    data = {"automation": wire.automation_dto(updated), "message": "Automation updated successfully"}
    return ok(data, backend.clock.now())


async def delete_automation(automation_id: AutomationId, backend: Backend) -> JSONResponse:
    backend.automations.delete_automation(automation_id)
    return ok({"message": "Automation deleted successfully"}, backend.clock.now())


async def set_status(automation_id: AutomationId, body: wire.SetStatus, backend: Backend) -> JSONResponse:
    backend.automations.set_enabled(automation_id, body.enabled)
    message = f"Automation {'enabled' if body.enabled else 'disabled'}"
    return ok({"message": message, "enabled": body.enabled}, backend.clock.now())


async def executions(automation_id: AutomationId, backend: Backend, limit: str | None = None) -> JSONResponse:
    readable = limit is not None and re.fullmatch(r"\+?[0-9]+", limit) and int(limit) < 2**64
    count = int(limit) if readable and limit else 10  # what Rust does not read as a usize: the default
    rows = [wire.execution(e) for e in backend.automations.executions(automation_id, count)]
    return ok({"automation_id": automation_id, "executions": rows, "count": len(rows)}, backend.clock.now())


async def templates(backend: Backend) -> JSONResponse:
    rows = [dict(t) for t in backend.automations.templates()]
    return ok({"templates": rows, "count": len(rows)}, backend.clock.now())


async def export(backend: Backend) -> JSONResponse:
    rows = [wire.definition(t) for t in backend.automations.list_automations()]
    now = backend.clock.now()
    return ok({"automations": rows, "count": len(rows), "exported_at": wire.rfc3339(now)}, now)


async def import_automations(backend: Backend, body: object = Body(None)) -> JSONResponse:
    given = body.get("automations") if isinstance(body, dict) else None
    done = backend.automations.import_automations(given)
    data = {"message": "Import completed", "imported": done.imported, "failed": done.failed}
    return ok(data, backend.clock.now())


async def analyze_intent(body: wire.AnalyzeIntent, backend: Backend) -> JSONResponse:
    return ok(wire.intent(backend.automations.analyze_intent(body.description)), backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/automations", list_automations),
    ("POST", "/automations", create_automation),
    ("GET", "/automations/export", export),
    ("POST", "/automations/import", import_automations),
    ("POST", "/automations/analyze-intent", analyze_intent),
    ("GET", "/automations/templates", templates),
    ("GET", "/automations/{id}", get_automation),
    ("PUT", "/automations/{id}", update_automation),
    ("DELETE", "/automations/{id}", delete_automation),
    ("POST", "/automations/{id}/enable", set_status),
    ("GET", "/automations/{id}/executions", executions),
]


router = catalogued_router([*ROUTES, *TRANSFORM_ROUTES], "automations")
