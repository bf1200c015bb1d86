"""Model backends: types (public), CRUD, activation, a live test and the multimodal override. Enveloped.

Creating or updating an HTTP backend probes it for real before answering (the backend is kept,
marked unhealthy, when it cannot be reached). API keys are accepted, stored and never returned.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import ok
from api.automation.schemas.llm_backends import (
    CapabilitiesPatch,
    CreateBackend,
    GenerateBody,
    UpdateBackend,
    backend_info,
    type_info,
)
from hardware.ports.errors import InvalidInput, NotFound

BackendId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""


async def list_types(backend: Backend) -> JSONResponse:
    return ok({"types": [type_info(t) for t in backend.llm_backends.types()]}, backend.clock.now())


async def type_schema(backend_type: Annotated[str, Path(alias="type")], backend: Backend) -> JSONResponse:
    kind = next((t for t in backend.llm_backends.types() if t.id == backend_type), None)
    if kind is None:
        raise NotFound(f"Backend type {backend_type}", resource="llm_backend_type")
    required = ["name", "model", *(["api_key"] if kind.requires_api_key else [])]
    props = {
        "name": {"type": "string"},
        "model": {"type": "string", "default": kind.default_model},
        "endpoint": {"type": "string", "default": kind.default_endpoint},
        "api_key": {"type": "string", "secret": True},
        "temperature": {"type": "number", "minimum": 0, "maximum": 2, "default": 0.7},
        "top_p": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.9},
    }
    schema = {"type": "object", "properties": props, "required": required}
    return ok({"type": kind.id, "schema": schema}, backend.clock.now())


async def ollama_models(backend: Backend, endpoint: str | None = None) -> JSONResponse:
    models = [dict(m) for m in await backend.llm_backends.ollama_models(endpoint)]
    return ok({"models": models, "count": len(models)}, backend.clock.now())


async def stats(backend: Backend) -> JSONResponse:
    rows = backend.llm_backends.list_backends()
    by_type: dict[str, int] = {}
    for b in rows:
        by_type[b.backend_type] = by_type.get(b.backend_type, 0) + 1
    data = {
        "total_backends": len(rows),
        "healthy_backends": sum(b.healthy for b in rows),
        "active_id": backend.llm_backends.active_id(),
        "by_type": by_type,
    }
    return ok(data, backend.clock.now())


async def generate(body: GenerateBody, backend: Backend) -> JSONResponse:
    return ok(dict(await backend.llm_backends.generate(body.prompt, body.backend_id)), backend.clock.now())


async def list_backends(backend: Backend) -> JSONResponse:
    rows = [backend_info(b) for b in backend.llm_backends.list_backends()]
    data = {"backends": rows, "count": len(rows), "active_id": backend.llm_backends.active_id()}
    return ok(data, backend.clock.now())


async def create_backend(body: CreateBackend, backend: Backend) -> JSONResponse:
    created = await backend.llm_backends.create_backend(body.to_port())
    return ok({"id": created.id, "message": "LLM backend created"}, backend.clock.now())


async def get_backend(backend_id: BackendId, backend: Backend) -> JSONResponse:
    return ok(backend_info(backend.llm_backends.get_backend(backend_id)), backend.clock.now())


async def update_backend(backend_id: BackendId, body: UpdateBackend, backend: Backend) -> JSONResponse:
    updated = await backend.llm_backends.update_backend(backend_id, body.changes())
    return ok(backend_info(updated), backend.clock.now())


async def delete_backend(backend_id: BackendId, backend: Backend) -> JSONResponse:
    backend.llm_backends.delete_backend(backend_id)
    return ok({"id": backend_id, "deleted": True}, backend.clock.now())


async def activate(backend_id: BackendId, backend: Backend) -> JSONResponse:
    return ok(backend_info(backend.llm_backends.activate(backend_id)), backend.clock.now())


async def test_backend(backend_id: BackendId, backend: Backend) -> JSONResponse:
    t = await backend.llm_backends.test_backend(backend_id)
    result: dict[str, Any] = {"success": t.success, "latency_ms": t.latency_ms}
    result.update({"response": t.reply} if t.success else {"error": t.error})
    return ok({"backend_id": t.backend_id, "result": result}, backend.clock.now())


async def patch_capabilities(
    backend_id: BackendId, body: CapabilitiesPatch, backend: Backend
) -> JSONResponse:
    if "multimodal" not in body.model_fields_set:
        raise InvalidInput("multimodal is required: true, false or null", field="multimodal")
    updated = backend.llm_backends.set_multimodal(backend_id, body.multimodal)
    return ok(backend_info(updated), backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/llm-backends/types", list_types),
    ("GET", "/llm-backends/types/{type}/schema", type_schema),
    ("GET", "/llm-backends/ollama/models", ollama_models),
    ("GET", "/llm-backends/stats", stats),
    ("POST", "/llm/generate", generate),
    ("GET", "/llm-backends", list_backends),
    ("POST", "/llm-backends", create_backend),
    ("GET", "/llm-backends/{id}", get_backend),
    ("PUT", "/llm-backends/{id}", update_backend),
    ("DELETE", "/llm-backends/{id}", delete_backend),
    ("POST", "/llm-backends/{id}/activate", activate),
    ("POST", "/llm-backends/{id}/test", test_backend),
    ("PATCH", "/llm-backends/{id}/capabilities", patch_capabilities),
]


router = catalogued_router(ROUTES, "llm-backends")
