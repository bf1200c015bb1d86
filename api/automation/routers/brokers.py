"""External MQTT brokers (jwt-or-api-key): CRUD, each save of an enabled broker connecting it for real,
and a real CONNECT/CONNACK test. Enveloped."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, current_user
from api.automation.schemas import mqtt as wire
from api.automation.schemas import ok

router = APIRouter(tags=["brokers"], dependencies=[Depends(current_user)])


@router.get("/brokers")
async def list_brokers(backend: Backend) -> JSONResponse:
    return ok(wire.brokers(backend.brokers.list_brokers()), backend.clock.now())


@router.post("/brokers")
async def create_broker(body: wire.BrokerRequest, backend: Backend) -> JSONResponse:
    saved = await backend.brokers.create_broker(body.spec())
    return ok(wire.saved(saved, wire.CREATED), backend.clock.now())


@router.get("/brokers/{broker_id}")
async def get_broker(broker_id: str, backend: Backend) -> JSONResponse:
    return ok({"broker": wire.broker(backend.brokers.get_broker(broker_id))}, backend.clock.now())


@router.put("/brokers/{broker_id}")
async def update_broker(broker_id: str, body: wire.BrokerRequest, backend: Backend) -> JSONResponse:
    saved = await backend.brokers.update_broker(broker_id, body.spec())
    return ok(wire.saved(saved, wire.UPDATED), backend.clock.now())


@router.delete("/brokers/{broker_id}")
async def delete_broker(broker_id: str, backend: Backend) -> JSONResponse:
    await backend.brokers.delete_broker(broker_id)
    return ok({"message": "External broker deleted successfully"}, backend.clock.now())


@router.post("/brokers/{broker_id}/test")
async def test_broker(broker_id: str, backend: Backend) -> JSONResponse:
    return ok(wire.tested(await backend.brokers.test_broker(broker_id)), backend.clock.now())
