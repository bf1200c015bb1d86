"""Every device route exists on the simulated gateway with the device's token check; routes not
simulated yet answer an honest 501 in the device's error shape."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI

from api.gateway import errors
from api.gateway.catalogue import device_routes
from api.gateway.routers import not_simulated
from api.routing import finish
from tests.conftest import _client, gateway_token
from twin.serve import Twin


def concrete(path: str) -> str:
    return re.sub(r"(?<=/):[A-Za-z_]+", "x1", re.sub(r"\*[A-Za-z_]+", "a/b", path))


async def test_every_route_checks_the_token_like_the_device(gateway: httpx.AsyncClient) -> None:
    routes = [r for r in device_routes() if r.kind != "WS"]
    assert len(routes) >= 225
    for route in routes:
        resp = await gateway.request(route.method, concrete(route.path))
        where = f"{route.method} {route.path}"
        if route.auth == "public":
            assert resp.status_code != 401, where
        else:
            assert resp.status_code == 401, where
            assert resp.headers["www-authenticate"] == "Bearer", where
            assert resp.json()["code"] == 2000, where


async def test_every_device_route_is_served(twin: Twin) -> None:
    app = twin.gateway_apps["cam-01"]
    assert [r.path for r in app.state.routes if getattr(r, "name", "").startswith("not_simulated:")] == []


async def test_a_route_no_router_serves_answers_501_after_the_token(twin: Twin) -> None:
    """The fallback still guards any route a router stops serving: the token first, then a 501."""
    app = FastAPI()
    app.state.backend = twin.gateways["cam-01"]
    errors.install(app)
    app.router.routes.extend(not_simulated.routes_for(app))
    finish(app, area_depth=3)
    token = twin.gateways["cam-01"].auth.login("admin", "password", 0)
    async with _client(app, "http://gateway") as c:
        assert (await c.get("/api/v1/system/info")).status_code == 401
        resp = await c.get("/api/v1/system/info", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 501
    body = resp.json()
    assert body["code"] == 1000 and body["message"] == "Unknown error"
    detail = "GET /api/v1/system/info is not simulated by this twin yet"
    assert body["error"] == {"type": "system", "detail": detail}


async def test_served_routes_are_not_shadowed(gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway)}
    assert (await gateway.get("/api/v1/system/info", headers=auth)).json()["code"] == 0
    assert (await gateway.get("/api/v1/media/status", headers=auth)).json()["code"] == 0
    assert (await gateway.get("/api/v1/no/such/thing", headers=auth)).json() == {
        "code": 404,
        "message": "Not found",
    }
