"""Sliding 60 s window per client on the world clock; 429 with Retry-After; storms; auth first."""

from __future__ import annotations

import dataclasses
import math
import random
from collections import deque
from collections.abc import AsyncIterator

import httpx
import pytest

from api.automation.ratelimit import RateLimiter, host_limit
from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings


@pytest.fixture
def limited(settings: Settings) -> Twin:
    return build(dataclasses.replace(settings, rate_limit=5))


@pytest.fixture
async def client(limited: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(limited.automation_app, "http://automation") as c:
        yield c


@pytest.fixture
async def ctl(limited: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(limited.control_app, "http://control") as c:
        yield c


def test_host_limit_follows_the_reference() -> None:
    assert host_limit(2, 24_000) == 12_000
    assert host_limit(4, 8_000) == 8_000
    assert host_limit(1, 1_000) == 5_000
    assert host_limit(128, 0) == 100_000


def test_sliding_window_and_retry_after() -> None:
    now = [0.0]
    limiter = RateLimiter(3, lambda: now[0])
    assert [limiter.hit("a") for _ in range(3)] == [None, None, None]
    now[0] = 10.4
    assert limiter.hit("a") == 49  # window minus the oldest request's age, truncated
    assert limiter.hit("b") is None  # per client
    now[0] = 60.0
    assert [limiter.hit("a") for _ in range(3)] == [None] * 3  # the t=0 requests have left the window
    now[0] = 119.9
    assert limiter.hit("a") == 0  # can be 0: the truncation the real server does


def test_a_still_clock_keeps_one_run_per_client() -> None:
    now = [5.0]
    limiter = RateLimiter(100_000, lambda: now[0])
    assert all(limiter.hit("a") is None for _ in range(50_000))
    window = limiter._hits["a"]
    assert (len(window.runs), window.total) == (1, 50_000)


def test_the_window_counts_as_one_entry_per_request_would() -> None:
    """Random instants (several requests sharing some), a limit lowered and raised: every answer is
    the one a window holding each request's time would give."""
    rng = random.Random(7)
    now = [0.0]
    limiter = RateLimiter(20, lambda: now[0])
    plain: dict[str, deque[float]] = {}
    for step in range(5_000):
        now[0] += rng.choice((0.0, 0.0, 0.5, 3.0, 17.0))
        limit = 5 if 1_000 <= step < 2_000 else 20
        limiter.base_limit = limit
        key = rng.choice("ab")
        window = plain.setdefault(key, deque())
        while window and window[0] <= now[0] - 60.0:
            window.popleft()
        if len(window) >= limit:
            expected = max(0, math.floor(60.0 - (now[0] - window[0])))
        else:
            window.append(now[0])
            expected = None
        assert limiter.hit(key) == expected, step


async def test_429_with_retry_after_in_the_envelope(limited: Twin, client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    assert [(await client.get("/api/auth/me", headers=auth)).status_code for _ in range(5)] == [200] * 5
    limited.clock.advance(20)
    resp = await client.get("/api/auth/me", headers=auth)
    assert resp.status_code == 429
    assert resp.headers["retry-after"] == "40"
    assert resp.json() == {
        "success": False,
        "error": {"code": "RATE_LIMITED", "message": "Rate limit exceeded", "request_id": None},
    }
    limited.clock.advance(40)
    assert (await client.get("/api/auth/me", headers=auth)).status_code == 200


async def test_authentication_runs_before_limiting(limited: Twin, client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    for _ in range(5):
        await client.get("/api/auth/me", headers=auth)
    assert (await client.get("/api/auth/me", headers=auth)).status_code == 429
    assert (await client.get("/api/auth/me")).status_code == 401
    assert (
        await client.get("/api/auth/me", headers={"Authorization": "Bearer bad.to.ken"})
    ).status_code == 401


async def test_public_routes_are_not_limited(client: httpx.AsyncClient) -> None:
    assert {(await client.get("/api/health")).status_code for _ in range(20)} == {200}


async def test_clients_are_keyed_separately(client: httpx.AsyncClient) -> None:
    admin = await admin_token(client)
    other = (
        await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
    ).json()["token"]
    for _ in range(5):
        await client.get("/api/auth/me", headers={"Authorization": f"Bearer {admin}"})
    assert (await client.get("/api/auth/me", headers={"Authorization": f"Bearer {admin}"})).status_code == 429
    assert (await client.get("/api/auth/me", headers={"Authorization": f"Bearer {other}"})).status_code == 200


async def test_a_storm_lowers_the_limit_for_a_while(
    settings: Settings, limited: Twin, client: httpx.AsyncClient, ctl: httpx.AsyncClient
) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    resp = await ctl.post("/ratelimit/automation/storm", json={"limit": 2, "seconds": 30})
    assert resp.json() == {"limit": 2, "base_limit": 5, "storm_until": 1767225630.0, "rejected": 0}
    codes = [(await client.get("/api/auth/me", headers=auth)).status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    limited.clock.advance(61)
    assert (await ctl.get("/ratelimit/automation")).json()["limit"] == 5
    assert [(await client.get("/api/auth/me", headers=auth)).status_code for _ in range(5)] == [200] * 5
    await ctl.post("/ratelimit/automation/storm", json={"limit": 1, "seconds": 100})
    assert (await ctl.delete("/ratelimit/automation/storm")).json()["storm_until"] is None


@pytest.mark.parametrize("body", [{"limit": 0, "seconds": 5}, {"limit": 2}, {"limit": 2, "seconds": -1}])
async def test_bad_storms_are_refused(ctl: httpx.AsyncClient, body: dict) -> None:
    assert (await ctl.post("/ratelimit/automation/storm", json=body)).status_code == 400
    assert (await ctl.get("/ratelimit/nope")).status_code == 404


async def test_release_0917_rate_limit_body(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, rate_limit=1, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        await client.get("/api/auth/me", headers=auth)
        resp = await client.get("/api/auth/me", headers=auth)
        assert resp.status_code == 429 and resp.headers["retry-after"] == "60"
        assert resp.json() == {"error": "Rate limit exceeded", "retry_after": 60}
