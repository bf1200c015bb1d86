"""The webhooks share the API's rate limiter, keyed by client + ":" + device id (reference §3)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.conftest import _client
from twin.serve import Twin, build
from twin.settings import Settings

LIMIT = 3


@pytest.fixture
def limited(settings: Settings) -> Twin:
    return build(dataclasses.replace(settings, rate_limit=LIMIT))


@pytest.fixture
async def client(limited: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(limited.automation_app, "http://automation") as c:
        yield c


async def device_push(client: httpx.AsyncClient, device_id: str, **headers: str) -> httpx.Response:
    return await client.post(f"/api/devices/{device_id}/webhook", json={"level": 1.5}, headers=headers)


async def generic_push(client: httpx.AsyncClient, device_id: str) -> httpx.Response:
    return await client.post("/api/devices/webhook", json={"device_id": device_id, "level": 1.5})


def assert_limited(resp: httpx.Response, retry_after: int) -> None:
    assert resp.status_code == 429
    assert resp.headers["retry-after"] == str(retry_after)
    assert resp.json() == {
        "success": False,
        "error": {"code": "RATE_LIMITED", "message": "Rate limit exceeded", "request_id": None},
    }


async def test_fourth_push_for_a_device_within_a_minute_is_limited(
    limited: Twin, client: httpx.AsyncClient
) -> None:
    assert [(await device_push(client, "field-1")).status_code for _ in range(LIMIT)] == [200] * LIMIT
    limited.clock.advance(15)
    assert_limited(await device_push(client, "field-1"), 45)
    assert (await device_push(client, "field-2")).status_code == 200  # another device: its own window
    limited.clock.advance(45)
    assert (await device_push(client, "field-1")).status_code == 200


async def test_the_generic_webhook_shares_the_device_window(limited: Twin, client: httpx.AsyncClient) -> None:
    for _ in range(2):
        assert (await device_push(client, "field-1")).status_code == 200
    assert (await generic_push(client, "field-1")).status_code == 200
    assert_limited(await generic_push(client, "field-1"), 60)
    assert_limited(await device_push(client, "field-1"), 60)
    assert (await generic_push(client, "field-2")).status_code == 200
    limited.clock.advance(60)
    assert (await generic_push(client, "field-1")).status_code == 200
    # A body without a device id is refused as before (nothing to key on, nothing counted).
    assert (await client.post("/api/devices/webhook", json={"level": 1})).status_code == 400


async def test_clients_are_keyed_separately(client: httpx.AsyncClient) -> None:
    for _ in range(LIMIT):
        await device_push(client, "field-1")
    assert (await device_push(client, "field-1")).status_code == 429
    other = await device_push(client, "field-1", **{"X-Session-Id": "sensor-gw-2"})
    assert other.status_code == 200


async def test_rejected_pushes_store_nothing(limited: Twin, client: httpx.AsyncClient) -> None:
    for _ in range(LIMIT + 2):
        await device_push(client, "field-1")
        limited.clock.advance(1)
    assert limited.world.store.sample_count("field-1", "level", 0, 1e12) == LIMIT
    assert limited.automation_app.state.limiter.rejected == 2
