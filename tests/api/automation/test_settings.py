"""Server settings (jwt-or-api-key): timezone, retention, agent and device defaults, durable state."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import admin_token
from twin.automation.server import automation_of
from twin.automation.settings import device_defaults
from twin.serve import Twin

ROUTES = [
    ("GET", "/api/settings/timezone", None),
    ("PUT", "/api/settings/timezone", {"timezone": "UTC"}),
    ("GET", "/api/settings/timezones", None),
    ("GET", "/api/settings/retention", None),
    ("PUT", "/api/settings/retention", {"enabled": False}),
    ("POST", "/api/settings/retention/cleanup", None),
    ("GET", "/api/settings/agent", None),
    ("PUT", "/api/settings/agent", {"max_rounds": 5}),
    ("GET", "/api/settings/device", None),
    ("PUT", "/api/settings/device", {"auto_onboard_enabled": False}),
]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    return bearer(await admin_token(automation))


async def call(client: httpx.AsyncClient, method: str, path: str, body=None, headers=None) -> httpx.Response:
    return await client.request(method, path, json=body, headers=headers)


def data(resp: httpx.Response, status: int = 200) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["success"] is True and "timestamp" in body["meta"]
    return body["data"]


def error(resp: httpx.Response, status: int, code: str) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["success"] is False and body["error"]["code"] == code
    return body["error"]["message"]


# Auth ------------------------------------------------------------------------------------------
async def test_every_settings_route_needs_auth(automation: httpx.AsyncClient) -> None:
    for method, path, body in ROUTES:
        error(await call(automation, method, path, body), 401, "UNAUTHORIZED")
        error(await call(automation, method, path, body, bearer("not-a-jwt")), 401, "UNAUTHORIZED")
        error(await call(automation, method, path, body, {"X-API-Key": "nmk_wrong"}), 401, "UNAUTHORIZED")


async def test_api_keys_work_and_scopes_apply(twin: Twin, automation: httpx.AsyncClient) -> None:
    def key(permissions: list[str]) -> dict[str, str]:
        return {"X-API-Key": automation_of(twin.world).api_keys.create("ci", permissions)[0]}

    full, read_only = key([]), key(["settings:read"])
    for method, path, body in ROUTES:
        assert (await call(automation, method, path, body, full)).status_code == 200, path
    assert data(await automation.get("/api/settings/timezone", headers=read_only))["timezone"] == "UTC"
    resp = await automation.put("/api/settings/timezone", json={"timezone": "Asia/Tokyo"}, headers=read_only)
    error(resp, 403, "FORBIDDEN")


# Timezone --------------------------------------------------------------------------------------
async def test_timezone_defaults_then_updates(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    assert data(await automation.get("/api/settings/timezone", headers=auth)) == {
        "timezone": "Asia/Shanghai",
        "is_default": True,
    }
    resp = await automation.put("/api/settings/timezone", json={"timezone": "Europe/Berlin"}, headers=auth)
    assert data(resp) == {"success": True, "timezone": "Europe/Berlin"}
    assert data(await automation.get("/api/settings/timezone", headers=auth)) == {
        "timezone": "Europe/Berlin",
        "is_default": False,
    }
    listed = data(await automation.get("/api/settings/timezones", headers=auth))["timezones"]
    assert {"id": "UTC", "name": "UTC (UTC+0)"} in listed and listed[0]["id"] == "Asia/Shanghai"


async def test_timezone_validation(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for bad in ("Mars/Olympus_Mons", "", "utc+8"):
        resp = await automation.put("/api/settings/timezone", json={"timezone": bad}, headers=auth)
        assert "Invalid timezone" in error(resp, 400, "BAD_REQUEST")
    for body in ({"timezone": 8}, {}, {"timezone": None}):
        error(
            await automation.put("/api/settings/timezone", json=body, headers=auth), 422, "VALIDATION_ERROR"
        )
    malformed = {**auth, "Content-Type": "application/json"}
    resp = await automation.put("/api/settings/timezone", content=b"{", headers=malformed)
    error(resp, 400, "BAD_REQUEST")
    assert data(await automation.get("/api/settings/timezone", headers=auth))["timezone"] == "Asia/Shanghai"


# Retention -------------------------------------------------------------------------------------
async def test_retention_defaults_partial_update_and_forever(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    assert data(await automation.get("/api/settings/retention", headers=auth)) == {
        "enabled": True,
        "interval_hours": 1,
        "default_retention": 720,
        "image_retention": 72,
    }
    resp = await automation.put(
        "/api/settings/retention", json={"interval_hours": 6, "default_retention": None}, headers=auth
    )
    expected = {"enabled": True, "interval_hours": 6, "default_retention": None, "image_retention": 72}
    assert data(resp) == expected
    assert data(await automation.get("/api/settings/retention", headers=auth)) == expected


RETENTION_CASES = [
    ({"interval_hours": 0}, 400),
    ({"interval_hours": -3}, 400),
    ({"default_retention": -1}, 400),
    ({"image_retention": 0}, 400),
    ({"interval_hours": "six"}, 422),
    ({"interval_hours": 1.5}, 422),
    ({"enabled": "yes"}, 422),
    ({"enabled": None}, 422),
    ({"interval_hours": None}, 422),
    ({"default_retention": "forever"}, 422),
]


async def test_retention_validation(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for body, status in RETENTION_CASES:
        resp = await automation.put("/api/settings/retention", json=body, headers=auth)
        error(resp, status, "BAD_REQUEST" if status == 400 else "VALIDATION_ERROR")
    assert data(await automation.get("/api/settings/retention", headers=auth))["interval_hours"] == 1


async def test_retention_cleanup_reports_cutoffs_on_the_world_clock(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(3600)
    now = int(twin.clock.now())
    result = data(await automation.post("/api/settings/retention/cleanup", headers=auth))
    assert result["success"] is True and result["ran_at"] == now
    assert result["default_cutoff"] == now - 720 * 3600 and result["image_cutoff"] == now - 72 * 3600
    await automation.put("/api/settings/retention", json={"image_retention": None}, headers=auth)
    assert (
        data(await automation.post("/api/settings/retention/cleanup", headers=auth))["image_cutoff"] is None
    )


# Agent -----------------------------------------------------------------------------------------
async def test_agent_settings(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    defaults = data(await automation.get("/api/settings/agent", headers=auth))
    assert defaults["max_rounds"] == 30 and defaults["default_thinking_enabled"] is None
    resp = await automation.put(
        "/api/settings/agent",
        json={"max_rounds": 10, "default_temperature": 1, "default_thinking_enabled": True},
        headers=auth,
    )
    updated = data(resp)
    assert updated == {
        **defaults,
        "max_rounds": 10,
        "default_temperature": 1.0,
        "default_thinking_enabled": True,
    }
    assert data(await automation.get("/api/settings/agent", headers=auth)) == updated
    for body in (
        {"max_rounds": 0},
        {"default_temperature": 2.5},
        {"default_top_p": 0},
        {"tool_concurrency": -1},
    ):
        error(await automation.put("/api/settings/agent", json=body, headers=auth), 400, "BAD_REQUEST")
    for body in ({"max_rounds": "ten"}, {"default_thinking_enabled": "on"}, {"default_top_p": None}):
        error(await automation.put("/api/settings/agent", json=body, headers=auth), 422, "VALIDATION_ERROR")
    assert data(await automation.get("/api/settings/agent", headers=auth)) == updated


# Device ----------------------------------------------------------------------------------------
async def test_device_settings_clamp_and_success_flag(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    assert data(await automation.get("/api/settings/device", headers=auth)) == {
        "default_offline_timeout_secs": 300,
        "auto_onboard_enabled": True,
    }
    resp = await automation.put(
        "/api/settings/device", json={"default_offline_timeout_secs": 3}, headers=auth
    )
    assert data(resp) == {"default_offline_timeout_secs": 10, "auto_onboard_enabled": True, "success": True}
    resp = await automation.put("/api/settings/device", json={"auto_onboard_enabled": False}, headers=auth)
    assert data(resp) == {"default_offline_timeout_secs": 10, "auto_onboard_enabled": False, "success": True}
    assert data(await automation.get("/api/settings/device", headers=auth)) == {
        "default_offline_timeout_secs": 10,
        "auto_onboard_enabled": False,
    }
    # What the devices area reads for the global default offline timeout.
    assert twin.automation.system.device_settings().default_offline_timeout_secs == 10
    assert device_defaults(twin.world).auto_onboard_enabled is False
    for body in (
        {"default_offline_timeout_secs": "300"},
        {"auto_onboard_enabled": 1},
        {"auto_onboard_enabled": None},
    ):
        error(await automation.put("/api/settings/device", json=body, headers=auth), 422, "VALIDATION_ERROR")


# Durability ------------------------------------------------------------------------------------
async def test_settings_survive_snapshot_reset_restore(
    automation: httpx.AsyncClient, control: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await automation.put("/api/settings/timezone", json={"timezone": "America/Chicago"}, headers=auth)
    await automation.put("/api/settings/retention", json={"interval_hours": 12}, headers=auth)
    await automation.put("/api/settings/agent", json={"max_rounds": 7}, headers=auth)
    await automation.put("/api/settings/device", json={"default_offline_timeout_secs": 600}, headers=auth)
    snap = (await control.post("/snapshots")).json()

    assert (await control.post("/reset")).status_code == 200
    fresh = bearer(await admin_token(automation, "other", "secret456"))
    assert data(await automation.get("/api/settings/timezone", headers=fresh))["is_default"] is True
    assert (
        data(await automation.get("/api/settings/device", headers=fresh))["default_offline_timeout_secs"]
        == 300
    )

    assert (await control.post(f"/snapshots/{snap['id']}/restore")).status_code == 200
    assert data(await automation.get("/api/settings/timezone", headers=auth))["timezone"] == "America/Chicago"
    assert data(await automation.get("/api/settings/retention", headers=auth))["interval_hours"] == 12
    assert data(await automation.get("/api/settings/agent", headers=auth))["max_rounds"] == 7
    assert (
        data(await automation.get("/api/settings/device", headers=auth))["default_offline_timeout_secs"]
        == 600
    )
