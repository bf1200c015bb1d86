"""Wire shapes of the device webhook: the payload read from any content type, and the answer
(release 0.9.24)."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import parse_qsl

from pydantic import BaseModel, ConfigDict

from api import json_input
from hardware.ports.errors import InvalidInput


class WebhookPayload(BaseModel):
    """``{data, timestamp?, quality?, device_id?}`` after content-type handling."""

    model_config = ConfigDict(extra="ignore")
    data: dict[str, Any]
    timestamp: float | None = None
    quality: float | None = None
    device_id: str | None = None


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def webhook_payload(content_type: str, body: bytes, form: dict[str, Any] | None = None) -> WebhookPayload:
    """JSON without ``data`` is wrapped whole; images become a data URL under ``image``; text under
    ``text``; forms become fields. A missing type or octet-stream is tried as JSON. Else 415."""
    media = content_type.split(";")[0].strip().lower()
    if media in ("", "application/json", "application/octet-stream") or media.endswith("+json"):
        try:
            parsed = json_input.loads(body or b"{}", json_input.SERDE)
        except ValueError as err:
            raise InvalidInput("Invalid JSON payload", field="body") from err
        if not isinstance(parsed, dict):
            raise InvalidInput("Webhook payload must be a JSON object", field="body")
        if isinstance(parsed.get("data"), dict):
            try:
                return WebhookPayload.model_validate(parsed)
            except ValueError as err:
                raise InvalidInput(f"Invalid webhook payload: {err}", field="body") from err
        device_id = parsed.pop("device_id", None)
        return WebhookPayload(data=parsed, device_id=device_id if isinstance(device_id, str) else None)
    if media.startswith("image/"):
        encoded = base64.b64encode(body).decode()
        return WebhookPayload(data={"image": f"data:{media};base64,{encoded}"})
    if media == "text/plain":
        return WebhookPayload(data={"text": body.decode("utf-8", errors="replace")})
    if media == "application/x-www-form-urlencoded":
        fields = {k: _number(v) for k, v in parse_qsl(body.decode("utf-8", errors="replace"))}
    elif media == "multipart/form-data" and form is not None:
        fields = {k: _number(v) if isinstance(v, str) else v for k, v in form.items()}
    else:
        raise InvalidInput(f"Unsupported content type: {media}", resource="media_type")
    device_id = fields.pop("device_id", None)
    return WebhookPayload(data=fields, device_id=device_id if isinstance(device_id, str) else None)


def webhook_received(device_id: str, count: int, *, generic: bool) -> dict[str, Any]:
    key = "metrics_processed" if generic else "metrics_received"
    return {"success": True, "device_id": device_id, key: count}
