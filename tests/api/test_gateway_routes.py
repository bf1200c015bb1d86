"""Every device route exists on the simulated gateway with the device's token check; routes not
simulated yet answer an honest 501 in the device's error shape."""

from __future__ import annotations

import re

import httpx

from api.gateway.catalogue import device_routes
from tests.conftest import gateway_token


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


async def test_routes_not_simulated_yet_answer_501_after_the_token(gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway)}
    for path in ("/api/v1/swagger.yaml",):  # the last device route the twin does not serve
        resp = await gateway.get(path, headers=auth)
        assert resp.status_code == 501, path
        body = resp.json()
        assert body["code"] == 1000 and body["message"] == "Unknown error"
        assert body["error"] == {"type": "system", "detail": f"GET {path} is not simulated by this twin yet"}


async def test_served_routes_are_not_shadowed(gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway)}
    assert (await gateway.get("/api/v1/system/info", headers=auth)).json()["code"] == 0
    assert (await gateway.get("/api/v1/media/status", headers=auth)).json()["code"] == 0
    assert (await gateway.get("/api/v1/no/such/thing", headers=auth)).json() == {
        "code": 404,
        "message": "Not found",
    }
