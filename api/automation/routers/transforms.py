"""Transforms under ``/automations/transforms`` (jwt-or-api-key; mounted by the automations router).

``process`` and ``:id/test`` run transforms on a body's data with no side effect but the ones the
server has too (the run is recorded, its outputs registered as data sources); ``test-code`` runs a
script alone (``extensions.invoke`` answers a mock). The data sources are the outputs of runs since
the server started.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Path
from fastapi.responses import JSONResponse

from api.automation.deps import Backend
from api.automation.routers.agents import Route
from api.automation.schemas import automations as wire
from api.automation.schemas import ok

TransformId = Annotated[str, Path(alias="id")]


async def process(body: wire.ProcessData, backend: Backend) -> JSONResponse:
    done = backend.automations.process(body.device_id, body.device_type, body.data)
    return ok({"success": True, **wire.result(done)}, backend.clock.now())


async def test_transform(transform_id: TransformId, body: wire.ProcessData, backend: Backend) -> JSONResponse:
    done = backend.automations.test_transform(transform_id, body.device_id, body.device_type, body.data)
    return ok({"transform_id": transform_id, **wire.result(done)}, backend.clock.now())


async def test_code(body: wire.TestCode, backend: Backend) -> JSONResponse:
    run = backend.automations.test_code(body.code, body.input_data, body.output_prefix)
    if not run.success:
        return ok({"success": False, "error": run.error}, backend.clock.now())
    output = wire.code_output(run.metrics, body.output_prefix)
    data = {
        "success": True,
        "output": output,
        "metrics": [wire.metric(m) for m in run.metrics],
        "count": len(run.metrics),
        "output_with_prefix": output,
    }
    return ok(data, backend.clock.now())


async def list_transforms(backend: Backend) -> JSONResponse:
    rows = [wire.definition(t) for t in backend.automations.list_automations()]
    return ok({"transforms": rows, "count": len(rows)}, backend.clock.now())


async def virtual_metrics(backend: Backend) -> JSONResponse:
    metrics = backend.automations.virtual_metrics()
    return ok({"metrics": metrics, "count": len(metrics)}, backend.clock.now())


async def data_sources(backend: Backend) -> JSONResponse:
    rows = [wire.data_source(o) for o in backend.automations.data_sources()]
    return ok({"data_sources": rows, "count": len(rows)}, backend.clock.now())


async def transform_data_sources(transform_id: TransformId, backend: Backend) -> JSONResponse:
    rows = [wire.output_info(o) for o in backend.automations.data_sources(transform_id)]
    return ok({"transform_id": transform_id, "data_sources": rows, "count": len(rows)}, backend.clock.now())


async def data_source(data_source_id: str, backend: Backend) -> JSONResponse:
    return ok(wire.output_info(backend.automations.data_source(data_source_id)), backend.clock.now())


ROUTES: list[Route] = [
    ("POST", "/automations/transforms/process", process),
    ("POST", "/automations/transforms/{id}/test", test_transform),
    ("POST", "/automations/transforms/test-code", test_code),
    ("GET", "/automations/transforms", list_transforms),
    ("GET", "/automations/transforms/metrics", virtual_metrics),
    ("GET", "/automations/transforms/data-sources", data_sources),
    ("GET", "/automations/transforms/{id}/data-sources", transform_data_sources),
    ("GET", "/automations/transforms/data-sources/{data_source_id}", data_source),
]
