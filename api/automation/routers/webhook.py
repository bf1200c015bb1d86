"""Device webhooks: public (no authentication); a device's ``webhook_token``, when set, is checked
by the backend. The token comes as ``Authorization: Bearer <t>`` or ``?token=``. Both routes share
the API's rate limiter, keyed by client + ``:`` + device id (for the generic route, the body's)."""

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, bearer_token, rate_limit_device
from api.automation.schemas import ok
from api.automation.schemas import webhook as schemas
from hardware.ports.errors import InvalidInput

router = APIRouter(tags=["webhook"])


async def _payload(request: Request) -> schemas.WebhookPayload:
    content_type = request.headers.get("content-type", "")
    form: dict[str, Any] | None = None
    if content_type.lower().startswith("multipart/form-data"):
        parsed = await request.form()
        form = {}
        for key, value in parsed.multi_items():
            if isinstance(value, str):
                form[key] = value
            else:
                form[key] = schemas.webhook_payload(value.content_type or "", await value.read()).data
        return schemas.webhook_payload(content_type, b"", form)
    return schemas.webhook_payload(content_type, await request.body())


async def _token(request: Request) -> str | None:
    return await bearer_token(request) or request.query_params.get("token")


@router.post("/devices/webhook")
async def webhook(request: Request, backend: Backend) -> JSONResponse:
    payload = await _payload(request)
    if not payload.device_id:
        raise InvalidInput("device_id is required in the body", field="device_id")
    rate_limit_device(request, payload.device_id)
    result = backend.ingest.webhook(
        payload.device_id, payload.data, payload.timestamp, payload.quality, await _token(request)
    )
    data = schemas.webhook_received(result.device_id, result.metrics_received, generic=True)
    return ok(data, backend.clock.now())


@router.post("/devices/{device_id}/webhook")
async def device_webhook(device_id: str, request: Request, backend: Backend) -> JSONResponse:
    rate_limit_device(request, device_id)
    payload = await _payload(request)
    result = backend.ingest.webhook(
        device_id, payload.data, payload.timestamp, payload.quality, await _token(request)
    )
    data = schemas.webhook_received(result.device_id, result.metrics_received, generic=False)
    return ok(data, backend.clock.now())
