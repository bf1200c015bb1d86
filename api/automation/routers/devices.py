"""Devices, drafts, provisioning, commands and pushed metrics (jwt-or-api-key)."""

import dataclasses

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Version, catalogued
from api.automation.schemas import devices as schemas
from api.automation.schemas import ok, provisioning
from api.automation.schemas.system import network_info
from hardware.ports.devices import KEEP
from hardware.ports.errors import InternalError, InvalidInput, NotFound
from hardware.ports.provisioning import BrokerAddress
from hardware.ports.system import NetworkInfo

router = APIRouter(tags=["devices"])


# Drafts ----------------------------------------------------------------------------------------
@router.get("/devices/drafts")
async def list_drafts(backend: Backend) -> JSONResponse:
    items = [dict(d) for d in backend.provisioning.drafts()]
    return ok({"items": items, "count": len(items)}, backend.clock.now())


@router.get("/devices/drafts/type-signatures")
async def type_signatures(backend: Backend) -> JSONResponse:
    signatures = dict(backend.provisioning.type_signatures())
    return ok({"signatures": signatures, "count": str(len(signatures))}, backend.clock.now())


@router.get("/devices/drafts/config")
async def onboard_config(backend: Backend) -> JSONResponse:
    return ok(dataclasses.asdict(backend.provisioning.config()), backend.clock.now())


@router.put("/devices/drafts/config")
async def set_onboard_config(body: provisioning.OnboardConfigBody, backend: Backend) -> JSONResponse:
    backend.provisioning.set_config(body.to_port())
    return ok({"message": "Configuration updated"}, backend.clock.now())


@router.post("/devices/drafts/cleanup")
async def cleanup_drafts(backend: Backend) -> JSONResponse:
    cleaned = backend.provisioning.cleanup()
    return ok({"cleaned": cleaned, "message": f"Cleaned up {cleaned} old draft devices"}, backend.clock.now())


@router.post("/devices/drafts/upload")
async def upload_samples(body: provisioning.UploadBody, backend: Backend) -> JSONResponse:
    device_id, taken = backend.provisioning.upload(body.device_id, body.source, body.data)
    message = f"Uploaded {taken} data sample(s) for device '{device_id}'. Check Pending Devices tab."
    return ok({"message": message}, backend.clock.now())


@router.get("/devices/drafts/{draft_id}")
async def get_draft(draft_id: str, backend: Backend) -> JSONResponse:
    return ok(dict(backend.provisioning.draft(draft_id)), backend.clock.now())


@router.put("/devices/drafts/{draft_id}")
async def update_draft(draft_id: str, body: provisioning.DraftUpdate, backend: Backend) -> JSONResponse:
    backend.provisioning.update_draft(draft_id, body.name, body.description)
    return ok({"message": f"Draft device '{draft_id}' updated"}, backend.clock.now())


@router.post("/devices/drafts/{draft_id}/analyze")
async def analyze_draft(draft_id: str, backend: Backend) -> JSONResponse:
    backend.provisioning.analyze(draft_id)
    return ok({"message": f"Analysis triggered for device '{draft_id}'"}, backend.clock.now())


@router.post("/devices/drafts/{draft_id}/enhance")
async def enhance_draft(draft_id: str, backend: Backend) -> JSONResponse:
    return ok(dict(backend.provisioning.enhance(draft_id)), backend.clock.now())


@router.get("/devices/drafts/{draft_id}/suggest-types")
async def suggest_types(draft_id: str, backend: Backend) -> JSONResponse:
    return ok(dict(backend.provisioning.suggest_types(draft_id)), backend.clock.now())


@router.post("/devices/drafts/{draft_id}/reject")
async def reject_draft(draft_id: str, body: schemas.RejectRequest, backend: Backend) -> JSONResponse:
    return ok(schemas.draft_dto(backend.ingest.reject_draft(draft_id, body.reason)), backend.clock.now())


@router.post("/devices/drafts/{draft_id}/approve")
async def approve_draft(
    draft_id: str, backend: Backend, body: schemas.ApproveRequest | None = None
) -> JSONResponse:
    body = body or schemas.ApproveRequest()
    approval = backend.ingest.approve_draft(
        draft_id,
        existing_type=body.existing_type,
        new_type=body.new_type.to_port() if body.new_type else None,
        device_name=body.device_name,
    )
    return ok(schemas.approval(approval), backend.clock.now())


# Provisioning and generation -------------------------------------------------------------------
@router.post("/devices/ble-provision")
async def ble_provision(request: Request, body: provisioning.BleBody, backend: Backend) -> JSONResponse:
    network: NetworkInfo = request.app.state.network

    def broker(broker_id: str) -> BrokerAddress:
        if broker_id == "embedded":
            return BrokerAddress(network.ip, network.mqtt_port)
        brokers = getattr(backend, "brokers", None)  # the external brokers, where this backend has them
        if brokers is None:
            raise NotFound(f"Broker not found: {broker_id}", resource="broker")
        found = brokers.get_broker(broker_id)
        return BrokerAddress(found.broker, found.port, found.username or "")

    return ok(dict(backend.provisioning.ble_provision(body.to_port(), broker)), backend.clock.now())


@router.post("/devices/generate-mdl")
async def generate_mdl(body: provisioning.GenerateMdlBody, backend: Backend) -> JSONResponse:
    made = backend.provisioning.generate_mdl(
        body.device_name, body.description, body.uplink_example, body.downlink_example
    )
    return ok(provisioning.mdl(made), backend.clock.now())


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
    result = backend.devices.list(page=page, limit=limit, device_type=device_type, status=status)
    return ok(schemas.device_page(result), backend.clock.now())


@router.post("/devices")
async def create_device(body: schemas.CreateDeviceRequest, backend: Backend) -> JSONResponse:
    created = backend.devices.create(
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
    return ok(schemas.device_detail_json(backend.devices.detail(device_id)), backend.clock.now())


@router.get("/devices/{device_id}/current")
async def current(device_id: str, backend: Backend) -> JSONResponse:
    return ok(schemas.current_values(backend.devices.current(device_id)), backend.clock.now())


@router.get("/devices/{device_id}/webhook-url")
async def webhook_url(request: Request, device_id: str, backend: Backend) -> JSONResponse:
    backend.devices.detail(device_id)  # 404 for an unknown device
    headers = request.headers
    net = network_info(
        request.app.state.network, headers.get("x-forwarded-proto"), headers.get("x-forwarded-host")
    )
    return ok(schemas.webhook_url(device_id, net), backend.clock.now())


@router.put("/devices/{device_id}")
async def update_device(device_id: str, body: schemas.UpdateDeviceRequest, backend: Backend) -> JSONResponse:
    given = body.model_fields_set
    backend.devices.update(
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
        backend.devices.delete(device_id)
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
    ts = backend.ingest.push_metric(device_id, body.metric, body.value, seconds)
    data = {"device_id": device_id, "metric": body.metric, "timestamp": round(ts * 1000), "written": True}
    return ok(data, backend.clock.now())


catalogued(router)
