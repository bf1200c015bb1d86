"""``/api/v1/events/*``: the app event bus. Topics with subscribers, publish (``app/<app_id>/<event>``
topics, a JSON object payload), and the WebSocket relay that broadcasts every event to every client
(``?topic=`` ignored, ``payload`` a JSON-encoded string)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse

from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.schemas import apps as shapes
from api.gateway.schemas.files import json_object
from api.gateway.ws import deny, drain, plain_get, until_first_ends, ws_backend
from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.gateway_apps import BusSubscription

router = APIRouter(prefix="/api/v1/events", tags=["events"], dependencies=[Depends(require_session)])
ws_router = APIRouter(prefix="/api/v1/events", tags=["events"])


@router.get("/topics")
async def topics(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.topics(backend.events.topics()))


@router.post("/publish")
async def publish(request: Request, backend: Backend) -> JSONResponse:
    body = json_object(await request.body())
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise InvalidInput("Topic is required")
    event_id = backend.events.publish(topic, body.get("payload"))  # type: ignore[arg-type]
    return schemas.ok({"status": {"success": True}, "event_id": event_id})


@ws_router.websocket("/stream")
async def stream(websocket: WebSocket) -> None:
    backend = await ws_backend(websocket)
    if backend is None:
        return
    try:
        sub = backend.events.stream()
    except DomainError as err:
        await deny(websocket, errors.fail(3000, err.message))
        return
    await websocket.accept()
    try:
        await _relay(websocket, sub)
    finally:
        sub.close()


async def _relay(websocket: WebSocket, sub: BusSubscription) -> None:
    async def send() -> None:
        while (event := await sub.next()) is not None:
            await websocket.send_text(shapes.bus_event(event))
        await websocket.close(code=1011, reason="event bus unavailable")

    await until_first_ends(websocket, send(), drain(websocket))  # client messages are ignored


plain_get(ws_router, "/stream")
