"""Self-description and server info: /metrics, network info, capabilities, tools; system stats.

Auth as the route catalogue (the real router) says: all public except ``/stats/system``.
"""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from api.automation import schemas
from api.automation.deps import Backend, Version, catalogued
from api.automation.metrics import counters_of
from api.automation.schemas import system as wire
from hardware.ports.system import NetworkInfo

router = APIRouter(tags=["system"])


@router.get("/metrics")
async def metrics(request: Request, backend: Backend, version: Version) -> Response:
    deliveries = [*backend.push.delivery_stats(), *backend.messages.delivery_stats()]
    text = wire.prometheus_text(
        counters_of(request.app), backend.system.event_bus(), backend.uptime(), version, deliveries
    )
    return Response(text, media_type=wire.METRICS_CONTENT_TYPE)


@router.get("/system/network-info")
async def network_info(request: Request, backend: Backend) -> JSONResponse:
    net: NetworkInfo = getattr(request.app.state, "network", None) or NetworkInfo()
    headers = request.headers
    body = wire.network_info(net, headers.get("x-forwarded-proto"), headers.get("x-forwarded-host"))
    return schemas.ok(body, backend.clock.now())


@router.get("/capabilities")
async def capabilities(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.capabilities(backend.system.capabilities()), backend.clock.now())


@router.get("/capabilities/{name}")
async def capability(name: str, backend: Backend) -> JSONResponse:
    return schemas.ok(wire.capability(backend.system.capability(name)), backend.clock.now())


@router.get("/tools")
async def tools(backend: Backend) -> JSONResponse:
    return schemas.ok(wire.tools(backend.system.tools()), backend.clock.now())


@router.get("/tools/{name}")
async def tool(name: str, backend: Backend) -> JSONResponse:
    return schemas.ok(wire.tool(backend.system.tool(name)), backend.clock.now())


@router.get("/stats/system")
async def system_stats(backend: Backend, version: Version) -> JSONResponse:
    body = wire.system_stats(backend.system.host_stats(), version, backend.uptime())
    return schemas.ok(body, backend.clock.now())


catalogued(router)
