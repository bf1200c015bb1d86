"""The express lane: a plain GET of a lean route answered as the full stack answers it."""

from __future__ import annotations

import re

import httpx
import pytest

from api.express import ExpressLane
from api.front import Front
from tests.conftest import admin_token, gateway_token
from twin.serve import Twin

REQUEST_ID = re.compile(rb'"request_id":"[^"]*"')


def lane(app) -> ExpressLane:
    layer = app.middleware_stack
    while not isinstance(layer, ExpressLane):
        layer = layer.lane if isinstance(layer, Front) else layer.app
    return layer


async def both(
    twin: Twin, app, client: httpx.AsyncClient, path: str, **kw
) -> tuple[httpx.Response, httpx.Response]:
    """The answer through the express lane, then through the full stack (the lane closed)."""
    fast = await client.get(path, **kw)
    express = lane(app)
    express._open = False
    try:
        full = await client.get(path, **kw)
    finally:
        express._open = True
    return fast, full


def same(fast: httpx.Response, full: httpx.Response) -> None:
    """The same status, headers and body (each answer has a request id of its own)."""
    assert fast.status_code == full.status_code
    assert REQUEST_ID.sub(b"", fast.content) == REQUEST_ID.sub(b"", full.content)
    assert [(k, v) for k, v in fast.headers.items() if k != "x-request-id"] == [
        (k, v) for k, v in full.headers.items() if k != "x-request-id"
    ]


@pytest.mark.parametrize(
    ("path", "auth"),
    [
        ("/api/devices/env_sensor-0001", True),  # a device's detail
        ("/api/devices/no-such-device", True),  # the vendor's 404, from the app's exception handler
        ("/api/devices/env_sensor-0001", False),  # 401 without a token
        ("/api/health", False),
        ("/api/devices/env_sensor-0001/telemetry?metric=temperature&limit=5", True),  # not lean: full stack
    ],
)
async def test_automation_answers_are_the_full_stacks(
    twin: Twin, automation: httpx.AsyncClient, path, auth
) -> None:
    await automation.get("/api/health")  # the app builds its stack on its first request
    headers = {"Authorization": f"Bearer {await admin_token(automation)}"} if auth else {}
    fast, full = await both(twin, twin.automation_app, automation, path, headers=headers)
    same(fast, full)
    assert fast.headers["vary"] == "Origin"  # what CORS adds to every answer without an Origin


async def test_the_lane_counts_and_journals_by_route_template(
    twin: Twin, automation: httpx.AsyncClient
) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    assert (await automation.get("/api/devices/env_sensor-0001", headers=auth)).status_code == 200
    assert lane(twin.automation_app)._paths["/api/devices/env_sensor-0001"] is not None  # it took the lane
    counted = dict(twin.automation_app.state.http_counters.items())
    assert counted[("GET", "/api/devices/{device_id}", 200)] == 1
    assert twin.journal is not None
    entry = twin.journal.entries[-1]
    assert (entry.route, entry.path, entry.status) == (
        "/api/devices/{device_id}",
        "/api/devices/env_sensor-0001",
        200,
    )


async def test_cors_a_body_or_a_storm_take_the_full_stack(
    twin: Twin, gateway: httpx.AsyncClient, control
) -> None:
    token = await gateway_token(gateway)
    auth = {"Authorization": token}
    plain = await gateway.get("/api/v1/system/info", headers=auth)
    assert plain.status_code == 200 and plain.headers["vary"] == "Origin"
    cross = await gateway.get("/api/v1/system/info", headers={**auth, "Origin": "http://elsewhere"})
    assert cross.headers["access-control-allow-origin"] == "*"  # the CORS layer answered it
    name = next(n for n in twin.served if n != "automation")
    assert (
        await control.post(f"/ratelimit/{name}/storm", json={"limit": 1, "seconds": 60})
    ).status_code == 200
    statuses = [(await gateway.get("/api/v1/system/info", headers=auth)).status_code for _ in range(3)]
    assert 429 in statuses  # the storm limiter still sees every request


async def test_gateway_answers_are_the_full_stacks(twin: Twin, gateway: httpx.AsyncClient) -> None:
    token = await gateway_token(gateway)
    name = next(n for n in twin.served if n != "automation")
    for path, headers in (
        ("/api/v1/system/info", {"Authorization": token}),
        ("/api/v1/system/info", {}),  # the device's 401
        ("/api/v1/system/info", {"Authorization": "Bearer nonsense"}),
    ):
        same(*await both(twin, twin.served[name].app, gateway, path, headers=headers))
