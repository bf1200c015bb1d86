"""MQTT administration (jwt-or-api-key): the broker in use, the server's own client's subscriptions,
and the embedded broker's configuration, credentials and certificates. Enveloped."""

from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import JSONResponse, Response

from api.automation.deps import Backend, current_user
from api.automation.schemas import mqtt as wire
from api.automation.schemas import ok
from hardware.ports.errors import InvalidInput

router = APIRouter(tags=["mqtt"], dependencies=[Depends(current_user)])

APPLIED = "Broker configuration updated and applied successfully"
NOT_APPLIED = "Configuration saved but broker restart failed. Try restarting the server."


@router.get("/mqtt/status")
async def mqtt_status(request: Request, backend: Backend) -> JSONResponse:
    return ok(wire.status(backend.mqtt.status(), request.app.state.network.ip), backend.clock.now())


@router.get("/mqtt/subscriptions")
async def list_subscriptions(backend: Backend) -> JSONResponse:
    return ok(wire.subscriptions(backend.mqtt.subscriptions()), backend.clock.now())


@router.post("/mqtt/subscribe")
async def subscribe(body: wire.SubscribeRequest, backend: Backend) -> JSONResponse:
    result = await backend.mqtt.subscribe(body.topic, body.qos)
    return ok(wire.subscribed(result, body.topic, body.qos), backend.clock.now())


@router.post("/mqtt/unsubscribe")
async def unsubscribe(body: wire.UnsubscribeRequest, backend: Backend) -> JSONResponse:
    result = await backend.mqtt.unsubscribe(body.topic)
    return ok(wire.subscribed(result, body.topic), backend.clock.now())


@router.post("/mqtt/subscribe/{device_id}")
async def subscribe_device(device_id: str, backend: Backend) -> JSONResponse:
    await backend.mqtt.subscribe_device(device_id)
    return ok({"message": f"Subscribed to device: {device_id}", "device_id": device_id}, backend.clock.now())


@router.post("/mqtt/unsubscribe/{device_id}")
async def unsubscribe_device(device_id: str, backend: Backend) -> JSONResponse:
    backend.mqtt.unsubscribe_device(device_id)
    message = f"Device {device_id} uses wildcard subscription - no individual subscription to remove"
    return ok({"message": message, "device_id": device_id}, backend.clock.now())


@router.get("/mqtt/broker-config")
async def broker_config(backend: Backend) -> JSONResponse:
    return ok(wire.config_view(*backend.mqtt.broker_config()), backend.clock.now())


@router.put("/mqtt/broker-config")
async def update_broker_config(body: wire.BrokerConfigRequest, backend: Backend) -> JSONResponse:
    done = await backend.mqtt.update_broker_config(
        body.listen, body.port, body.auth_enabled, body.tls_enabled
    )
    data: dict[str, Any] = {
        "message": APPLIED if done.applied else NOT_APPLIED,
        "config": wire.config(done.config),
    }
    if not done.applied:
        data["restart_required"] = True
    return ok(data, backend.clock.now())


@router.post("/mqtt/broker-config/credentials")
async def add_credential(body: wire.CredentialRequest, backend: Backend) -> JSONResponse:
    backend.mqtt_credentials.add_credential(body.username, body.password)
    data = {"message": "Credential added successfully", "username": body.username}
    return ok(data, backend.clock.now())


@router.post("/mqtt/broker-config/credentials/delete")
async def delete_credential(backend: Backend, body: object = Body(None)) -> JSONResponse:
    username = body.get("username") if isinstance(body, dict) else None
    if not isinstance(username, str):
        raise InvalidInput("Missing 'username' field", field="username")
    backend.mqtt_credentials.delete_credential(username)
    return ok({"message": "Credential deleted successfully", "username": username}, backend.clock.now())


@router.put("/mqtt/broker-config/tls")
async def upload_tls(body: wire.TlsRequest, backend: Backend) -> JSONResponse:
    files = backend.mqtt.upload_tls(body.cert_pem, body.key_pem, body.ca_pem)
    message = "TLS certificates uploaded successfully"
    return ok(wire.tls_files(files, message, generated=False), backend.clock.now())


@router.post("/mqtt/broker-config/tls/generate")
async def generate_tls(backend: Backend) -> JSONResponse:
    files = backend.mqtt.generate_tls()
    message = "Self-signed certificates generated successfully"
    return ok(wire.tls_files(files, message, generated=True), backend.clock.now())


@router.get("/mqtt/broker-config/tls/ca-cert")
async def download_ca_cert(backend: Backend) -> Response:
    headers = {"Content-Disposition": 'attachment; filename="mqtt-ca.crt"'}
    return Response(backend.mqtt.ca_cert(), media_type="application/x-pem-file", headers=headers)
