"""Devices, drafts, commands and pushed metrics (jwt-or-api-key)."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Version, current_user
from api.automation.schemas import devices as schemas
from api.automation.schemas import ok
from api.automation.schemas.system import network_info
from hardware.ports.devices import KEEP
from hardware.ports.errors import InternalError, InvalidInput, NotFound

router = APIRouter(tags=["devices"], dependencies=[Depends(current_user)])


# Drafts first: ``/devices/drafts`` must not be taken for a device id.
@router.get("/devices/drafts")
async def list_drafts(backend: Backend) -> JSONResponse:
    return ok(schemas.draft_list(backend.devices.list_drafts()), backend.clock.now())


@router.get("/devices/drafts/{draft_id}")
async def get_draft(draft_id: str, backend: Backend) -> JSONResponse:
    return ok(schemas.draft_dto(backend.devices.get_draft(draft_id)), backend.clock.now())


@router.post("/devices/drafts/{draft_id}/reject")
async def reject_draft(draft_id: str, body: schemas.RejectRequest, backend: Backend) -> JSONResponse:
    return ok(schemas.draft_dto(backend.devices.reject_draft(draft_id, body.reason)), backend.clock.now())


@router.post("/devices/drafts/{draft_id}/approve")
async def approve_draft(
    draft_id: str, backend: Backend, body: schemas.ApproveRequest | None = None
) -> JSONResponse:
    body = body or schemas.ApproveRequest()
    approval = backend.devices.approve_draft(
        draft_id,
        existing_type=body.existing_type,
        new_type=body.new_type.to_port() if body.new_type else None,
        device_name=body.device_name,
    )
    return ok(schemas.approval(approval), backend.clock.now())


@router.post("/devices/current-batch")
async def current_batch(body: schemas.CurrentBatchRequest, backend: Backend) -> JSONResponse:
    """Unknown ids are left out of ``devices`` (and of ``count``), as a batch read does."""
    found = []
    for device_id in dict.fromkeys(body.device_ids):
        try:
            found.append(backend.devices.current(device_id))
        except NotFound:
            continue
    return ok(schemas.current_batch(found), backend.clock.now())


@router.get("/devices")
async def list_devices(
    backend: Backend,
    page: int = 1,
    limit: int = 50,
    device_type: str | None = None,
    status: str | None = None,
) -> JSONResponse:
    result = backend.devices.list_devices(page=page, limit=limit, device_type=device_type, status=status)
    return ok(schemas.device_page(result), backend.clock.now())


@router.post("/devices")
async def create_device(body: schemas.CreateDeviceRequest, backend: Backend) -> JSONResponse:
    created = backend.devices.create_device(
        body.device_type,
        body.name,
        body.adapter_type,
        body.connection_config,
        device_id=body.device_id,
        offline_timeout_secs=body.offline_timeout_secs,
    )
    data = {"device_id": created.device_id, "added": True, "updated_existing": created.updated_existing}
    return ok(data, backend.clock.now())


@router.get("/devices/{device_id}")
async def get_device(device_id: str, backend: Backend) -> JSONResponse:
    return ok(schemas.device_detail(backend.devices.get_device(device_id)), backend.clock.now())


@router.get("/devices/{device_id}/current")
async def current(device_id: str, backend: Backend) -> JSONResponse:
    return ok(schemas.current_values(backend.devices.current(device_id)), backend.clock.now())


@router.get("/devices/{device_id}/webhook-url")
async def webhook_url(request: Request, device_id: str, backend: Backend) -> JSONResponse:
    backend.devices.get_device(device_id)  # 404 for an unknown device
    headers = request.headers
    net = network_info(
        request.app.state.network, headers.get("x-forwarded-proto"), headers.get("x-forwarded-host")
    )
    return ok(schemas.webhook_url(device_id, net), backend.clock.now())


@router.put("/devices/{device_id}")
async def update_device(device_id: str, body: schemas.UpdateDeviceRequest, backend: Backend) -> JSONResponse:
    given = body.model_fields_set
    backend.devices.update_device(
        device_id,
        name=body.name,
        adapter_type=body.adapter_type,
        connection_config=body.connection_config,
        adapter_id=body.adapter_id if "adapter_id" in given else KEEP,
        offline_timeout_secs=body.offline_timeout_secs if "offline_timeout_secs" in given else KEEP,
    )
    return ok({"device_id": device_id, "updated": True}, backend.clock.now())


@router.delete("/devices/{device_id}")
async def delete_device(device_id: str, backend: Backend, version: Version) -> JSONResponse:
    try:
        backend.devices.delete_device(device_id)
    except NotFound as exc:
        if version == "0.9.17":  # an unknown id was a storage failure there (reference §4)
            raise InternalError(f"Failed to delete device: {exc}") from exc
        raise
    return ok({"device_id": device_id, "deleted": True}, backend.clock.now())


@router.post("/devices/{device_id}/command/{command}")
async def send_command(
    device_id: str, command: str, backend: Backend, body: schemas.CommandRequest | None = None
) -> JSONResponse:
    params = body.params if body else {}
    sent = backend.devices.send_command(device_id, command, params)
    return ok({"device_id": sent.device_id, "command": sent.command, "sent": True}, backend.clock.now())


@router.get("/devices/{device_id}/commands")
async def command_history(device_id: str, backend: Backend, limit: int = 50) -> JSONResponse:
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be between 1 and 1000", field="limit")
    records = backend.devices.command_history(device_id, limit)
    return ok(schemas.command_history(device_id, records), backend.clock.now())


@router.post("/devices/{device_id}/metrics")
async def write_metric(device_id: str, body: schemas.MetricWriteRequest, backend: Backend) -> JSONResponse:
    seconds = None if body.timestamp is None else body.timestamp / 1000.0
    ts = backend.devices.push_metric(device_id, body.metric, body.value, seconds)
    data = {"device_id": device_id, "metric": body.metric, "timestamp": round(ts * 1000), "written": True}
    return ok(data, backend.clock.now())
