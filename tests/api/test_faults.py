"""Latency is awaited on the world clock: many delayed requests cost one wait, not one each."""

from __future__ import annotations

import asyncio

import httpx

from twin.serve import Twin


async def test_100_requests_waiting_5s_finish_after_one_advance(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    resp = await control.post("/faults/automation/latency", json={"seconds": 5, "path_prefix": "/api/health"})
    assert resp.status_code == 200
    tasks = [asyncio.create_task(automation.get("/api/health")) for _ in range(100)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert not any(t.done() for t in tasks)

    # Meanwhile other requests are served: another server, and another path on the same server.
    assert (await gateway.get("/api/v1/system/health")).status_code == 200
    assert (await automation.get("/api/setup/status")).status_code == 200
    assert not any(t.done() for t in tasks)

    await control.post("/clock/advance", json={"seconds": 5})
    responses = await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    assert [r.status_code for r in responses] == [200] * 100
    assert twin.clock.state().sim_time == 5

    await control.delete("/faults/automation")
    assert (await asyncio.wait_for(automation.get("/api/health"), timeout=5)).status_code == 200
