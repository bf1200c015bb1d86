"""The automation server's contract (release 0.9.24, the spec), as its clients rely on it: health,
the JWT login and its failures, API-key auth, the 401 envelope, the devices page and its 404, a
device type and a rule created and deleted again, and both event channels (SSE and WebSocket).
Run against every backend (see conftest.py); what a test creates is named per backend and removed."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
from websockets.asyncio.client import connect

from tests.contract.backends import Backend, Server

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.socket]

JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PAGINATION = {"page", "limit", "total", "total_pages", "has_next", "has_prev"}


def ok(resp: httpx.Response) -> dict:
    """An enveloped success's ``data``, with the envelope's ``meta`` checked."""
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["success"] is True and "error" not in body, body
    assert isinstance(body["meta"]["timestamp"], str) and UUID.fullmatch(body["meta"]["request_id"])
    return body["data"]


def failed(resp: httpx.Response, status: int, code: str) -> dict:
    """The one failure envelope: ``{"success": false, "error": {"code", "message", ...}}``."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["success"] is False and "data" not in body, body
    assert body["error"]["code"] == code and isinstance(body["error"]["message"], str), body
    return body["error"]


# Health and public routes ------------------------------------------------------------------------
async def test_health_answers_raw_json_without_auth(server: Server, http: httpx.AsyncClient) -> None:
    health = await http.get(server.url + "/api/health")
    assert health.status_code == 200
    body = health.json()
    assert body["status"] == "ok" and isinstance(body["service"], str) and isinstance(body["version"], str)
    assert (await http.get(server.url + "/api/health/live")).json() == {"status": "alive"}
    assert "ready" in (await http.get(server.url + "/api/health/ready")).json()


async def test_public_routes_answer_without_auth(server: Server, http: httpx.AsyncClient) -> None:
    network = ok(await http.get(server.url + "/api/system/network-info"))
    assert {"ip", "server_url", "server_url_source"} <= set(network)
    status = (await http.get(server.url + "/api/auth/status")).json()
    assert status["enabled"] is True and isinstance(status["key_count"], int)
    assert ok(await http.get(server.url + "/api/llm-backends/types"))


# Login and tokens --------------------------------------------------------------------------------
async def test_login_gives_a_jwt_and_the_user(server: Server, http: httpx.AsyncClient) -> None:
    await server.jwt(http)  # the twins' admin exists from here on
    resp = await http.post(server.url + "/api/auth/login", json=server.credentials())
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert JWT.fullmatch(body["token"]) and body["user"]["username"] == server.username
    assert body["user"]["role"] in ("admin", "user", "viewer") and isinstance(body["user"]["created_at"], int)
    bearer = {"Authorization": f"Bearer {body['token']}"}
    verify = await http.get(server.url + "/api/auth/verify", headers=bearer)
    assert verify.json()["authenticated"] is True and verify.json()["method"] == "jwt"
    assert (await http.post(server.url + "/api/auth/logout", headers=bearer)).status_code == 200
    assert (await http.get(server.url + "/api/auth/verify", headers=bearer)).status_code == 401  # revoked


async def test_a_wrong_password_is_401_unauthorized(server: Server, http: httpx.AsyncClient) -> None:
    await server.jwt(http)
    body = {"username": server.credentials()["username"], "password": "not-the-password-1"}
    error = failed(await http.post(server.url + "/api/auth/login", json=body), 401, "UNAUTHORIZED")
    assert error["message"] == "Invalid username or password"


@pytest.mark.parametrize(
    "body", [{"username": "admin"}, {"password": "x"}, {}], ids=["no-password", "no-username", "empty"]
)
async def test_a_login_missing_fields_is_422(server: Server, http: httpx.AsyncClient, body: dict) -> None:
    assert (await http.post(server.url + "/api/auth/login", json=body)).status_code == 422


async def test_an_api_key_authenticates_in_x_api_key(server: Server, http: httpx.AsyncClient) -> None:
    headers = {"X-API-Key": server.key()}
    assert (await http.get(server.url + "/api/auth/verify", headers=headers)).json() == {
        "authenticated": True,
        "method": "api_key",
    }
    assert isinstance(ok(await http.get(server.url + "/api/devices", headers=headers))["devices"], list)


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-jwt"}, {"X-API-Key": "nmk_" + "0" * 32}],
    ids=["none", "bad-jwt", "unknown-key"],
)
async def test_wrong_auth_is_the_401_envelope(server: Server, http: httpx.AsyncClient, headers: dict) -> None:
    failed(await http.get(server.url + "/api/devices", headers=headers), 401, "UNAUTHORIZED")


async def test_an_api_key_is_forbidden_on_admin_only_routes(server: Server, http: httpx.AsyncClient) -> None:
    failed(await http.get(server.url + "/api/users", headers={"X-API-Key": server.key()}), 403, "FORBIDDEN")


async def test_setup_is_closed_once_an_admin_exists(server: Server, http: httpx.AsyncClient) -> None:
    if server.first_run:
        await server.jwt(http)
    if (await http.get(server.url + "/api/setup/status")).json()["setup_required"]:
        pytest.skip("the server has no administrator yet; the suite never runs its first-run setup")
    body = {"username": "contract-probe", "password": "contract123"}
    failed(await http.post(server.url + "/api/setup/initialize", json=body), 403, "SETUP_ALREADY_COMPLETED")


async def test_the_route_list_names_each_routes_auth_class(server: Server, http: httpx.AsyncClient) -> None:
    routes = (await http.get(server.url + "/api/docs/routes.json", headers=await server.auth(http))).json()
    classes = {(route["method"], route["path"]): route["auth"] for route in routes}
    assert classes[("GET", "/api/health")] == "public"
    assert classes[("GET", "/api/devices")] == "jwt-or-api-key"
    assert classes[("POST", "/api/auth/login")] == "public"


# Devices -----------------------------------------------------------------------------------------
async def test_the_devices_page_envelope(server: Server, http: httpx.AsyncClient) -> None:
    auth = await server.auth(http)
    first = ok(await http.get(server.url + "/api/devices", params={"page": 1, "limit": 1}, headers=auth))
    paging = first["pagination"]
    assert set(paging) == PAGINATION and (paging["page"], paging["limit"]) == (1, 1)
    assert first["count"] == len(first["devices"]) <= 1 and paging["has_prev"] is False
    assert paging["has_next"] is (paging["total"] > 1) and paging["total_pages"] in (paging["total"], 1)
    for device in first["devices"]:
        assert device["id"] == device["device_id"] and device["status"] in (
            "online",
            "offline",
            "disconnected",
        )
        assert {"name", "device_type", "adapter_type", "last_seen", "online", "config"} <= set(device)
    if paging["has_next"]:
        second = ok(await http.get(server.url + "/api/devices", params={"page": 2, "limit": 1}, headers=auth))
        assert second["pagination"]["has_prev"] is True
        assert second["devices"][0]["device_id"] != first["devices"][0]["device_id"]


async def test_an_unknown_device_is_device_not_found(server: Server, http: httpx.AsyncClient) -> None:
    auth = await server.auth(http)
    for path in ("/api/devices/no-such-device-7f3a", "/api/devices/no-such-device-7f3a/telemetry"):
        failed(await http.get(server.url + path, headers=auth), 404, "DEVICE_NOT_FOUND")


async def test_a_device_without_connection_config_is_refused(server: Server, http: httpx.AsyncClient) -> None:
    body = {
        "device_id": "contract-probe-never",
        "device_type": "env_sensor",
        "name": "x",
        "adapter_type": "mqtt",
    }
    resp = await http.post(server.url + "/api/devices", json=body, headers=await server.auth(http))
    failed(resp, 422, "VALIDATION_ERROR")


async def test_a_device_type_is_created_read_and_deleted(
    backend: Backend, server: Server, http: httpx.AsyncClient
) -> None:
    auth = await server.auth(http)
    name = f"contract_probe_{backend.name}"
    template = {
        "device_type": name,
        "name": "Contract probe",
        "metrics": [{"name": "level", "display_name": "Level", "data_type": "float", "unit": "%"}],
        "commands": [],
    }
    url = f"{server.url}/api/device-types/{name}"
    try:
        made = ok(await http.post(server.url + "/api/device-types", json=template, headers=auth))
        assert made["registered"] is True and made["device_type"] == name
        full = ok(await http.get(url, headers=auth))
        assert full["metrics"][0]["name"] == "level" and full["metric_count"] == 1
        listed = ok(await http.get(server.url + "/api/device-types", headers=auth))
        assert name in [t["device_type"] for t in listed["device_types"]]
    finally:
        gone = ok(await http.delete(url, headers=auth))
    assert gone["deleted"] is True
    assert (await http.get(url, headers=auth)).status_code == 404


async def test_a_rule_is_created_read_and_deleted(
    backend: Backend, server: Server, http: httpx.AsyncClient
) -> None:
    auth = await server.auth(http)
    body = {"name": f"contract probe {backend.name}", "trigger": {"trigger_type": "manual"}, "actions": []}
    rule = ok(await http.post(server.url + "/api/rules", json=body, headers=auth))["rule"]
    url = f"{server.url}/api/rules/{rule['id']}"
    try:
        assert rule["name"] == body["name"] and rule["trigger"]["trigger_type"] == "manual"
        assert ok(await http.get(url, headers=auth))["rule"]["id"] == rule["id"]
        assert rule["id"] in [
            r["id"] for r in ok(await http.get(server.url + "/api/rules", headers=auth))["rules"]
        ]
    finally:
        gone = ok(await http.delete(url, headers=auth))
    assert gone["deleted"] is True
    failed(await http.get(url, headers=auth), 404, "NOT_FOUND")


async def test_a_rule_without_a_name_is_refused(server: Server, http: httpx.AsyncClient) -> None:
    auth = await server.auth(http)
    resp = await http.post(
        server.url + "/api/rules", json={"trigger": {"trigger_type": "manual"}}, headers=auth
    )
    assert resp.status_code in (400, 422) and resp.json()["success"] is False


# Events ------------------------------------------------------------------------------------------
async def test_the_sse_stream_opens_with_a_token_and_is_a_bare_401_without(
    server: Server, http: httpx.AsyncClient
) -> None:
    query = {"token": await server.jwt(http)} if server.username else {"api_key": server.key()}
    url = server.url + "/api/events/stream"
    async with http.stream("GET", url, params=query) as resp:
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    refused = await http.get(url)
    assert refused.status_code == 401 and refused.content == b""


async def test_the_websocket_signs_in_with_its_first_frame(server: Server, http: httpx.AsyncClient) -> None:
    frame = (
        {"type": "Auth", "token": await server.jwt(http)}
        if server.username
        else {"type": "Auth", "api_key": server.key()}
    )
    async with connect(server.ws("/api/events/ws"), open_timeout=20) as ws:
        await ws.send(json.dumps(frame))
        reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
        assert reply == {"type": "Authenticated", "message": "Authentication successful"}
    async with connect(server.ws("/api/events/ws"), open_timeout=20) as ws:
        await ws.send(json.dumps({"type": "Auth", "token": "not-a-jwt"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 20))["type"] == "Error"
