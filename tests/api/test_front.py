"""The fused front layer: with no fault active it journals, counts and answers exactly as the three
layers it fuses (journal, faults, express lane) do one by one."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from api.front import Front
from tests.conftest import admin_token
from twin.serve import Twin


def front(app) -> Front:
    layer = app.middleware_stack
    while not isinstance(layer, Front):
        layer = layer.app
    return layer


def journalled(twin: Twin) -> dict:
    assert twin.journal is not None
    entry = dataclasses.asdict(twin.journal.entries[-1])
    del entry["seq"]
    return entry


async def both_ways(twin: Twin, client: httpx.AsyncClient, method: str, path: str, **kw) -> tuple:
    """(status, journal entry) fused, then through the three layers (a zero-second latency fault
    makes the fault set active without delaying anything)."""
    fused = await client.request(method, path, **kw)
    fused_entry = journalled(twin)
    faults = twin.faults["automation"]
    faults.add_latency(0.0)
    try:
        layered = await client.request(method, path, **kw)
        layered_entry = journalled(twin)
    finally:
        faults.clear()
    return (fused.status_code, fused_entry), (layered.status_code, layered_entry)


@pytest.mark.parametrize(
    ("method", "path", "auth"),
    [
        ("GET", "/api/devices/env_sensor-0001", True),  # the express lane
        ("GET", "/api/devices/no-such-device", True),  # its 404
        ("GET", "/api/devices/env_sensor-0001", False),  # its 401
        ("GET", "/api/devices/env_sensor-0001/telemetry?metric=temperature&limit=2", True),  # paged
        ("GET", "/api/no/such/route", False),  # unmatched
        ("POST", "/api/devices", True),  # not a GET: the app under the fused journal
    ],
)
async def test_fused_and_layered_journal_alike(
    twin: Twin, automation: httpx.AsyncClient, method: str, path: str, auth: bool
) -> None:
    headers = {"Authorization": f"Bearer {await admin_token(automation)}"} if auth else {}
    kw = {"json": {"name": "x"}} if method == "POST" else {}
    fused, layered = await both_ways(twin, automation, method, path, headers=headers, **kw)
    assert fused == layered
    if "telemetry" in path:
        assert fused[1]["next_cursor"] != "absent"  # read from the page's tail


async def test_counts_by_route_template_once(twin: Twin, automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    for _ in range(3):
        assert (await automation.get("/api/devices/env_sensor-0001", headers=auth)).status_code == 200
    counted = dict(twin.automation_app.state.http_counters.items())
    assert counted[("GET", "/api/devices/{device_id}", 200)] == 3
    assert front(twin.automation_app).lane._paths["/api/devices/env_sensor-0001"] is not None  # the lane


async def test_an_active_fault_takes_the_layers(twin: Twin, automation: httpx.AsyncClient) -> None:
    faults = twin.faults["automation"]
    faults.add_errors(503, "/api/health", count=1)
    answer = await automation.get("/api/health")
    assert answer.status_code == 503 and answer.text == "Service Unavailable"
    entry = journalled(twin)
    assert (entry["status"], entry["fault"]) == (503, "http_503")
    assert (await automation.get("/api/health")).status_code == 200  # the burst is spent: fused again
    assert journalled(twin)["fault"] is None


async def test_retry_after_of_a_429_is_journalled(automation: httpx.AsyncClient, twin: Twin) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    limiter = twin.served["automation"].limiter
    assert limiter is not None
    limiter.storm(1, 60)
    path = "/api/devices/env_sensor-0001"
    statuses = [(await automation.get(path, headers=auth)).status_code for _ in range(2)]
    assert statuses == [200, 429]
    entry = journalled(twin)
    assert entry["status"] == 429 and entry["retry_after"] is not None and int(entry["retry_after"]) >= 0
