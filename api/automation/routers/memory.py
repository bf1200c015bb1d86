"""System memory (jwt-or-api-key): the persistent files, custom files, configuration, compression and
export, and the legacy categories and per-source files. Raw JSON; failures are ``{"error": ...}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path
from fastapi.responses import Response

from api.automation.deps import Backend, current_user
from api.automation.schemas import Json
from api.automation.schemas import memory as wire

router = APIRouter(tags=["memory"], dependencies=[Depends(current_user)])
SourceId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""
MARKDOWN = "text/markdown; charset=utf-8"
WITHOUT_DELETE = ("category", "file")
"""``/memory/category/:category`` and ``/memory/file/:target`` have no DELETE: the vendor's router
answers 405 for them instead of trying ``/memory/:source_type/:id``."""


@router.get("/memory")
async def list_memory_files(backend: Backend) -> Json:
    return Json(wire.memory_files(backend.memory.list_files()))


@router.get("/memory/export")
async def export_memory(backend: Backend) -> Response:
    return Response(backend.memory.export(), media_type=MARKDOWN)


@router.get("/memory/stats")
async def memory_stats(backend: Backend) -> Json:
    return Json(wire.stats(backend.memory.stats()))


@router.get("/memory/config")
async def get_config(backend: Backend) -> Json:
    return Json(wire.config(backend.memory.config()))


@router.put("/memory/config")
async def update_config(body: wire.ConfigBody, backend: Backend) -> Json:
    saved = backend.memory.set_config(body.config.to_port())
    return Json({"success": True, "config": wire.config(saved)})


@router.post("/memory/compress")
async def compress(backend: Backend) -> Json:
    removed = backend.memory.compress()
    if removed:
        message = f"Eviction completed: {removed} lines removed from files exceeding limits"
    else:
        message = "No eviction needed — all files within char limits."
    return Json({"success": True, "lines_evicted": removed, "message": message})


@router.get("/memory/category/{category}")
async def get_category(category: str, backend: Backend) -> Json:
    return Json(wire.category(backend.memory.read_category(category)))


@router.put("/memory/category/{category}")
async def update_category(category: str, body: wire.ContentBody, backend: Backend) -> Json:
    written = backend.memory.write_category(category, body.content)
    return Json({"success": True, "message": f"Category {written.display_name} updated"})


@router.get("/memory/file/{target}")
async def get_memory_file(target: str, backend: Backend) -> Json:
    content = backend.memory.read_file(target)
    return Json({"success": True, "target": target, "content": content, "chars": len(content)})


@router.put("/memory/file/{target}")
async def update_memory_file(target: str, body: wire.ContentBody, backend: Backend) -> Json:
    backend.memory.write_file(target, body.content)
    return Json({"success": True, "message": f"{target} updated", "chars": len(body.content)})


@router.get("/memory/custom")
async def list_custom_files(backend: Backend) -> Json:
    return Json({"success": True, "files": [wire.custom_file(f) for f in backend.memory.custom_files()]})


@router.get("/memory/custom/{name}")
async def get_custom_file(name: str, backend: Backend) -> Json:
    content = backend.memory.read_custom(name)
    return Json({"success": True, "name": name, "content": content, "chars": len(content)})


@router.put("/memory/custom/{name}")
async def update_custom_file(name: str, body: wire.ContentBody, backend: Backend) -> Json:
    backend.memory.write_custom(name, body.content)
    message = f"Custom file '{name}' updated"
    return Json({"success": True, "message": message, "chars": len(body.content)})


@router.delete("/memory/custom/{name}")
async def delete_custom_file(name: str, backend: Backend) -> Json:
    backend.memory.delete_custom(name)
    return Json({"success": True, "message": f"Custom file '{name}' deleted"})


@router.get("/memory/{source_type}/{id}")
async def get_memory_content(source_type: str, source_id: SourceId, backend: Backend) -> Json:
    content = backend.memory.read_source(source_type, source_id)
    return Json({"id": source_id, "source_type": source_type, "content": content})


@router.put("/memory/{source_type}/{id}")
async def update_memory_content(
    source_type: str, source_id: SourceId, body: wire.ContentBody, backend: Backend
) -> Json:
    backend.memory.write_source(source_type, source_id, body.content)
    return Json({"success": True, "message": "Memory updated"})


@router.delete("/memory/{source_type}/{id}")
async def delete_memory_file(source_type: str, source_id: SourceId, backend: Backend) -> Json:
    if source_type in WITHOUT_DELETE:
        raise HTTPException(405)
    backend.memory.delete_source(source_type, source_id)
    return Json({"success": True, "message": "Memory file deleted"})
