"""The automation backend app over the twin: envelopes, health, setup, login, errors."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from tests.conftest import admin_token
from twin.serve import build
from twin.settings import Settings


async def test_health_endpoints_answer_raw_json(automation: httpx.AsyncClient) -> None:
    assert (await automation.get("/api/health")).json() == {
        "status": "ok",
        "service": "edge-ai-agent",
        "version": "0.9.24",
    }
    status = (await automation.get("/api/health/status")).json()
    assert status["status"] == "healthy" and status["uptime"] == 0
    assert (await automation.get("/api/health/live")).json() == {"status": "alive"}
    ready = await automation.get("/api/health/ready")
    assert ready.status_code == 200
    assert set(ready.json()) == {"ready", "dependencies"}
    assert set(ready.json()["dependencies"]) == {"llm", "mqtt", "database"}


async def test_ready_is_200_even_when_not_ready(automation: httpx.AsyncClient) -> None:
    body = (await automation.get("/api/health/ready")).json()
    assert body["dependencies"]["mqtt"] is False  # no broker in-process
    assert body["ready"] is True  # readiness is database && llm


async def test_setup_creates_the_first_admin_then_refuses(automation: httpx.AsyncClient) -> None:
    assert (await automation.get("/api/setup/status")).json()["setup_required"] is True
    resp = await automation.post(
        "/api/setup/initialize", json={"username": "admin", "password": "secret123", "email": "a@b.io"}
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["message"] == "Admin account created successfully"
    assert body["user"]["role"] == "admin" and body["user"]["created_at"] == 1767225600
    assert body["token"].count(".") == 2
    again = await automation.post(
        "/api/setup/initialize", json={"username": "other", "password": "secret123"}
    )
    assert again.status_code == 403
    assert again.json()["error"]["code"] == "SETUP_ALREADY_COMPLETED"
    assert (await automation.get("/api/setup/status")).json()["setup_required"] is False


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"username": "ab", "password": "secret123"}, "INVALID_USERNAME"),
        ({"username": "admin", "password": "short1"}, "WEAK_PASSWORD"),
        ({"username": "admin", "password": "lettersonly"}, "WEAK_PASSWORD"),
        ({"username": "admin", "password": "secret123", "email": "nope"}, "INVALID_EMAIL"),
    ],
)
async def test_setup_validation_errors(automation: httpx.AsyncClient, body: dict, code: str) -> None:
    resp = await automation.post("/api/setup/initialize", json=body)
    assert resp.status_code == 400
    assert resp.json() == {
        "success": False,
        "error": {"code": code, "message": resp.json()["error"]["message"], "request_id": None},
    }


async def test_missing_fields_and_wrong_types_are_422(automation: httpx.AsyncClient) -> None:
    for body in ({"username": "admin"}, {"username": 5, "password": "x"}):
        resp = await automation.post("/api/auth/login", json=body)
        assert resp.status_code == 422
        assert resp.json()["error"]["code"] == "VALIDATION_ERROR"


async def test_malformed_json_is_400(automation: httpx.AsyncClient) -> None:
    resp = await automation.post(
        "/api/auth/login", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400
    assert resp.json()["success"] is False and resp.json()["error"]["code"] == "BAD_REQUEST"


async def test_login_and_protected_route(automation: httpx.AsyncClient) -> None:
    await admin_token(automation)
    resp = await automation.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
    assert resp.status_code == 200
    token = resp.json()["token"]
    assert resp.json()["user"]["username"] == "admin"
    me = await automation.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert me.json()["role"] == "admin"
    verify = await automation.get("/api/auth/verify", headers={"Authorization": f"Bearer {token}"})
    assert verify.json()["authenticated"] is True and verify.json()["method"] == "jwt"


async def test_bad_credentials_use_the_unified_envelope(automation: httpx.AsyncClient) -> None:
    await admin_token(automation)
    for body in ({"username": "admin", "password": "wrong"}, {"username": "ghost", "password": "secret123"}):
        resp = await automation.post("/api/auth/login", json=body)
        assert resp.status_code == 401
        assert resp.json() == {
            "success": False,
            "error": {"code": "UNAUTHORIZED", "message": "Invalid username or password", "request_id": None},
        }


async def test_protected_route_without_or_with_bad_token(automation: httpx.AsyncClient) -> None:
    assert (await automation.get("/api/auth/me")).status_code == 401
    resp = await automation.get("/api/auth/me", headers={"Authorization": "Bearer not.a.jwt"})
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"


async def test_logout_revokes_the_session(automation: httpx.AsyncClient) -> None:
    token = await admin_token(automation)
    auth = {"Authorization": f"Bearer {token}"}
    assert (await automation.post("/api/auth/logout", headers=auth)).json() == {
        "message": "Logged out successfully"
    }
    resp = await automation.get("/api/auth/me", headers=auth)
    assert resp.status_code == 401
    assert resp.json()["error"]["message"] == "Session has been revoked"


async def test_tokens_expire_after_seven_days_of_world_time(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, cameras=0, sensors=0))  # the week is simulated: no devices
    transport = httpx.ASGITransport(app=twin.automation_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://automation") as automation:
        auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
        twin.clock.advance(7 * 86_400)
        assert (await automation.get("/api/auth/me", headers=auth)).status_code == 200  # 30 s skew allowed
        twin.clock.advance(31)
        resp = await automation.get("/api/auth/me", headers=auth)
        assert resp.status_code == 401 and resp.json()["error"]["message"] == "Token has expired"
    twin.world.store.close()


async def test_unknown_route_and_wrong_method(automation: httpx.AsyncClient) -> None:
    resp = await automation.get("/api/no/such/route")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND"
    resp = await automation.delete("/api/health")
    assert resp.status_code == 405 and resp.json()["success"] is False


async def test_success_envelope_shape() -> None:
    from api.automation.schemas import ok, rfc3339_nanos

    assert rfc3339_nanos(1767225600.5) == "2026-01-01T00:00:00.500000000Z"
    body = ok({"x": 1}, 1767225600.0).body
    import json

    parsed = json.loads(body)
    assert parsed["success"] is True and parsed["data"] == {"x": 1}
    assert set(parsed["meta"]) == {"timestamp", "request_id"}
