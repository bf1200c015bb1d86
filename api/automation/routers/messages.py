"""Messages and notification channels (jwt-or-api-key; the channel kinds are public). Enveloped."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, catalogued
from api.automation.schemas import messages as wire
from api.automation.schemas import ok

router = APIRouter(tags=["messages"])
public = APIRouter(tags=["messages"])
legacy = APIRouter(tags=["earlier revision"])
"""Release 0.9.17 sent a message manually with ``POST /messages/send``."""


@public.get("/messages/channels/types")
async def channel_types(backend: Backend) -> JSONResponse:
    kinds = backend.messages.channel_kinds()
    return ok({"types": [wire.kind(k) for k in kinds], "count": len(kinds)}, backend.clock.now())


@public.get("/messages/channels/types/{kind}/schema")
async def channel_schema(kind: str, backend: Backend) -> JSONResponse:
    return ok({"type": kind, "schema": backend.messages.channel_schema(kind)}, backend.clock.now())


@router.get("/messages/channels")
async def list_channels(backend: Backend) -> JSONResponse:
    channels = backend.messages.list_channels()
    data = {"channels": [wire.channel_view(c) for c in channels], "count": len(channels)}
    return ok(data, backend.clock.now())


@router.get("/messages/channels/stats")
async def channel_stats(backend: Backend) -> JSONResponse:
    channels = backend.messages.list_channels()
    stats = {c.name: {"sent": c.sent, "failed": c.failed, "enabled": c.enabled} for c in channels}
    totals = {"total": len(channels), "enabled": sum(c.enabled for c in channels)}
    return ok({"channels": stats, **totals}, backend.clock.now())


@router.post("/messages/channels")
async def create_channel(body: wire.ChannelRequest, backend: Backend) -> JSONResponse:
    channel = backend.messages.create_channel(body.name, body.channel_type, body.config(), body.enabled)
    return ok(wire.channel_view(channel), backend.clock.now())


@router.get("/messages/channels/{name}")
async def get_channel(name: str, backend: Backend) -> JSONResponse:
    return ok(wire.channel_view(backend.messages.get_channel(name)), backend.clock.now())


@router.put("/messages/channels/{name}")
async def update_channel(name: str, body: wire.ChannelUpdate, backend: Backend) -> JSONResponse:
    channel = backend.messages.update_channel(name, body.config(), body.enabled)
    return ok(wire.channel_view(channel), backend.clock.now())


@router.delete("/messages/channels/{name}")
async def delete_channel(name: str, backend: Backend) -> JSONResponse:
    backend.messages.delete_channel(name)
    return ok({"name": name, "deleted": True}, backend.clock.now())


@router.post("/messages/channels/{name}/test")
async def test_channel(name: str, backend: Backend) -> JSONResponse:
    result = await backend.messages.test_channel(name)
    return ok({"channel": name, **wire.result(result)}, backend.clock.now())


@router.put("/messages/channels/{name}/enabled")
async def set_channel_enabled(name: str, body: wire.EnabledRequest, backend: Backend) -> JSONResponse:
    channel = backend.messages.update_channel(name, enabled=body.enabled)
    return ok({"name": channel.name, "enabled": channel.enabled}, backend.clock.now())


@router.get("/messages/channels/{name}/recipients")
async def list_recipients(name: str, backend: Backend) -> JSONResponse:
    return ok(wire.recipients(backend.messages.get_channel(name)), backend.clock.now())


@router.post("/messages/channels/{name}/recipients")
async def add_recipient(name: str, body: wire.RecipientRequest, backend: Backend) -> JSONResponse:
    return ok(wire.recipients(backend.messages.add_recipient(name, body.email)), backend.clock.now())


@router.delete("/messages/channels/{name}/recipients/{email}")
async def remove_recipient(name: str, email: str, backend: Backend) -> JSONResponse:
    return ok(wire.recipients(backend.messages.remove_recipient(name, email)), backend.clock.now())


@router.get("/messages/channels/{name}/filter")
async def get_filter(name: str, backend: Backend) -> JSONResponse:
    return ok(dict(backend.channel_filters.get(name)), backend.clock.now())


@router.put("/messages/channels/{name}/filter")
async def set_filter(name: str, body: wire.FilterRequest, backend: Backend) -> JSONResponse:
    stored = backend.channel_filters.set(name, body.source_types, body.categories, body.min_severity)
    data = {
        "message": "Filter updated successfully",
        "message_zh": "过滤器更新成功",
        "channel": name,
        "filter": dict(stored),
    }
    return ok(data, backend.clock.now())


@router.get("/messages/stats")
async def message_stats(backend: Backend) -> JSONResponse:
    return ok(wire.stats(backend.messages.message_stats()), backend.clock.now())


@router.post("/messages/cleanup")
async def cleanup_messages(backend: Backend, body: wire.CleanupRequest | None = None) -> JSONResponse:
    days = (body or wire.CleanupRequest()).older_than_days
    return ok({"cleaned": backend.messages.cleanup_messages(days)}, backend.clock.now())


@router.post("/messages/acknowledge")
async def acknowledge_messages(body: wire.MessageIds, backend: Backend) -> JSONResponse:
    count = backend.messages.set_messages_status(body.message_ids, "acknowledged")
    return ok({"acknowledged": count}, backend.clock.now())


@router.post("/messages/resolve")
async def resolve_messages(body: wire.MessageIds, backend: Backend) -> JSONResponse:
    return ok(
        {"resolved": backend.messages.set_messages_status(body.message_ids, "resolved")}, backend.clock.now()
    )


@router.post("/messages/delete")
async def delete_messages(body: wire.MessageIds, backend: Backend) -> JSONResponse:
    return ok({"deleted": backend.messages.delete_messages(body.message_ids)}, backend.clock.now())


@router.get("/messages")
async def list_messages(
    backend: Backend,
    limit: int = 50,
    offset: int = 0,
    severity: str | None = None,
    status: str | None = None,
    category: str | None = None,
) -> JSONResponse:
    page = backend.messages.list_messages(limit, offset, severity, status, category)
    return ok(wire.message_page(page), backend.clock.now())


@router.post("/messages")
@legacy.post("/messages/send")
async def send_message(body: wire.MessageRequest, backend: Backend) -> JSONResponse:
    return ok(wire.created(backend.messages.send_message(body.to_port())), backend.clock.now())


@router.get("/messages/{message_id}")
async def get_message(message_id: str, backend: Backend) -> JSONResponse:
    return ok(wire.message(backend.messages.get_message(message_id)), backend.clock.now())


@router.delete("/messages/{message_id}")
async def delete_message(message_id: str, backend: Backend) -> JSONResponse:
    backend.messages.delete_message(message_id)
    return ok({"id": message_id, "deleted": True}, backend.clock.now())


async def _set_status(message_id: str, status: str, backend: Backend) -> JSONResponse:
    return ok(wire.message(backend.messages.set_message_status(message_id, status)), backend.clock.now())


@router.post("/messages/{message_id}/acknowledge")
async def acknowledge_message(message_id: str, backend: Backend) -> JSONResponse:
    return await _set_status(message_id, "acknowledged", backend)


@router.post("/messages/{message_id}/resolve")
async def resolve_message(message_id: str, backend: Backend) -> JSONResponse:
    return await _set_status(message_id, "resolved", backend)


@router.post("/messages/{message_id}/archive")
async def archive_message(message_id: str, backend: Backend) -> JSONResponse:
    return await _set_status(message_id, "archived", backend)


for _router in (router, public, legacy):
    catalogued(_router)
