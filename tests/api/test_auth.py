"""Auth classes of the automation API: public, jwt-or-api-key (scoped, expiring keys), jwt-only."""

from __future__ import annotations

import dataclasses
import re

import httpx
import pytest

from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def new_key(client: httpx.AsyncClient, token: str, **body) -> str:
    resp = await client.post("/api/auth/keys", json={"name": "ci", **body}, headers=bearer(token))
    assert resp.status_code == 200, resp.text
    return resp.json()["api_key"]


async def regular_user(client: httpx.AsyncClient, admin: str, name: str = "alice") -> str:
    resp = await client.post(
        "/api/users", json={"username": name, "password": "pw1234"}, headers=bearer(admin)
    )
    assert resp.status_code == 201
    login = await client.post("/api/auth/login", json={"username": name, "password": "pw1234"})
    return login.json()["token"]


# Registration --------------------------------------------------------------------------------
async def test_registration_is_disabled_until_an_admin_enables_it(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    resp = await automation.post("/api/auth/register", json={"username": "bob", "password": "pw1234"})
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "FORBIDDEN"
    resp = await automation.put(
        "/api/settings/auth", json={"registration_enabled": True}, headers=bearer(admin)
    )
    assert resp.json()["data"] == {"registration_enabled": True}
    resp = await automation.post(
        "/api/auth/register", json={"username": "bob", "password": "pw1234", "role": "admin"}
    )
    assert resp.status_code == 201
    assert resp.json()["user"]["role"] == "user"  # the requested role is ignored
    again = await automation.post("/api/auth/register", json={"username": "bob", "password": "pw1234"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "CONFLICT"
    for body in ({"username": "bo", "password": "pw1234"}, {"username": "carol", "password": "pw1"}):
        assert (await automation.post("/api/auth/register", json=body)).status_code == 400
    assert (await automation.post("/api/auth/register", json={"username": "x"})).status_code == 422


async def test_auth_settings_need_an_admin_jwt(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    key = await new_key(automation, admin)
    user = await regular_user(automation, admin)
    assert (await automation.get("/api/settings/auth")).status_code == 401
    resp = await automation.get("/api/settings/auth", headers={"X-API-Key": key})
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "FORBIDDEN"
    assert (await automation.get("/api/settings/auth", headers=bearer(user))).status_code == 403
    assert (await automation.get("/api/settings/auth", headers=bearer(admin))).json()["data"] == {
        "registration_enabled": False
    }
    bad = await automation.put(
        "/api/settings/auth", json={"registration_enabled": "yes please"}, headers=bearer(admin)
    )
    assert bad.status_code == 422


# API keys ------------------------------------------------------------------------------------
async def test_api_key_lifecycle(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    assert (await automation.get("/api/auth/status")).json() == {
        "enabled": True,
        "key_count": 0,
        "has_default_key": False,
    }
    resp = await automation.post("/api/auth/keys", json={"name": "ci"}, headers=bearer(admin))
    body = resp.json()
    assert re.fullmatch(r"nmk_[0-9a-f]{32}", body["api_key"])
    assert body["info"]["permissions"] == ["*"] and body["info"]["active"] is True
    key, key_id = body["api_key"], body["info"]["id"]

    me = await automation.get("/api/auth/me", headers={"X-API-Key": key})
    assert me.json() == {
        "id": f"apikey:{key_id}",
        "username": "ci",
        "role": "admin",
        "created_at": 1767225600,
    }
    assert (await automation.get("/api/auth/me", headers=bearer(key))).status_code == 200  # key as Bearer
    verify = await automation.get("/api/auth/verify", headers={"X-API-Key": key})
    assert verify.json() == {"authenticated": True, "method": "api_key"}
    assert (await automation.get("/api/auth/verify", headers=bearer(key))).status_code == 401  # header only

    listed = (await automation.get("/api/auth/keys", headers={"X-API-Key": key})).json()["keys"]
    assert [k["id"] for k in listed] == [key_id] and listed[0]["preview"].endswith("…")
    assert key not in str(listed)  # the secret is shown once, at creation
    assert (await automation.get("/api/auth/status")).json()["key_count"] == 1

    gone = await automation.delete(f"/api/auth/keys/{key_id}", headers=bearer(admin))
    assert gone.json() == {"message": f"API key {key_id} deleted", "success": True}
    again = await automation.delete(f"/api/auth/keys/{key_id}", headers=bearer(admin))
    assert again.status_code == 200 and again.json()["success"] is False
    resp = await automation.get("/api/auth/me", headers={"X-API-Key": key})
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "Invalid API key"


async def test_api_key_scopes(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    read_auth = await new_key(automation, admin, permissions=["auth:read"])
    devices = await new_key(automation, admin, permissions=["devices"])
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": read_auth})).json()["role"] == "user"
    resp = await automation.post("/api/auth/logout", headers={"X-API-Key": read_auth})
    assert resp.status_code == 403
    assert resp.json()["error"] == {
        "code": "FORBIDDEN",
        "message": "API key lacks permission 'auth:write'",
        "request_id": None,
    }
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": devices})).status_code == 403
    # A scoped key is no administrator: it cannot mint keys.
    assert (
        await automation.post("/api/auth/keys", json={"name": "x"}, headers={"X-API-Key": devices})
    ).status_code == 403


@pytest.mark.parametrize("perm", ["", "devices:delete", "Devices", "a/b"])
async def test_bad_permissions_are_refused(automation: httpx.AsyncClient, perm: str) -> None:
    admin = await admin_token(automation)
    resp = await automation.post(
        "/api/auth/keys", json={"name": "x", "permissions": [perm]}, headers=bearer(admin)
    )
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "BAD_REQUEST"


async def test_api_keys_expire_on_the_world_clock(twin: Twin, automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    key = await new_key(automation, admin, expires_in_days=1)
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": key})).status_code == 200
    twin.clock.advance(86_400)
    resp = await automation.get("/api/auth/me", headers={"X-API-Key": key})
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "API key has expired"
    past = await automation.post("/api/auth/keys", json={"name": "x", "expires_at": 1}, headers=bearer(admin))
    assert past.status_code == 400


async def test_managing_keys_needs_an_admin(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    user = await regular_user(automation, admin)
    assert (await automation.get("/api/auth/keys")).status_code == 401
    assert (await automation.get("/api/auth/keys", headers=bearer(user))).status_code == 403
    assert (await automation.post("/api/auth/keys", json={}, headers=bearer(admin))).status_code == 422
    assert (
        await automation.post("/api/auth/keys", json={"name": " "}, headers=bearer(admin))
    ).status_code == 400


async def test_default_key_from_the_environment(settings: Settings) -> None:
    raw = "nmk_" + "ab" * 16
    twin = build(dataclasses.replace(settings, api_key=raw))
    async with _client(twin.automation_app, "http://automation") as client:
        assert (await client.get("/api/auth/status")).json() == {
            "enabled": True,
            "key_count": 1,
            "has_default_key": True,
        }
        assert (await client.get("/api/auth/me", headers={"X-API-Key": raw})).json()[
            "username"
        ] == "Default API Key"


# JWT-only (admin) endpoints ------------------------------------------------------------------
async def test_users_endpoints_are_jwt_only(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    key = await new_key(automation, admin)
    resp = await automation.get("/api/users")
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "Missing Authorization header"
    for headers in ({"X-API-Key": key}, bearer(key)):
        resp = await automation.get("/api/users", headers=headers)
        assert resp.status_code == 403 and resp.json()["error"]["code"] == "FORBIDDEN"
    user = await regular_user(automation, admin)
    resp = await automation.get("/api/users", headers=bearer(user))
    assert resp.status_code == 403 and resp.json()["error"]["message"] == "Admin access required"
    users = (await automation.get("/api/users", headers=bearer(admin))).json()["users"]
    assert [(u["username"], u["role"]) for u in users] == [("admin", "admin"), ("alice", "user")]


async def test_user_administration(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    alice = await regular_user(automation, admin)
    dup = await automation.post(
        "/api/users", json={"username": "alice", "password": "pw1234"}, headers=bearer(admin)
    )
    assert dup.status_code == 409
    bad_role = await automation.post(
        "/api/users", json={"username": "zed", "password": "pw1234", "role": "root"}, headers=bearer(admin)
    )
    assert bad_role.status_code == 400
    assert (await automation.delete("/api/users/admin", headers=bearer(admin))).status_code == 400
    assert (await automation.delete("/api/users/ghost", headers=bearer(admin))).status_code == 404
    resp = await automation.delete("/api/users/alice", headers=bearer(admin))
    assert resp.json() == {"message": "User 'alice' deleted successfully"}
    assert (await automation.get("/api/auth/me", headers=bearer(alice))).status_code == 401


async def test_change_password(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    wrong = await automation.post(
        "/api/auth/change-password",
        json={"old_password": "nope", "new_password": "newpw1"},
        headers=bearer(admin),
    )
    assert wrong.status_code == 400
    short = await automation.post(
        "/api/auth/change-password",
        json={"old_password": "secret123", "new_password": "x"},
        headers=bearer(admin),
    )
    assert short.status_code == 400
    ok = await automation.post(
        "/api/auth/change-password",
        json={"old_password": "secret123", "new_password": "newpw1"},
        headers=bearer(admin),
    )
    assert ok.json() == {"message": "Password changed successfully"}
    login = await automation.post("/api/auth/login", json={"username": "admin", "password": "newpw1"})
    assert login.status_code == 200
    key = await new_key(automation, admin)
    as_key = await automation.post(
        "/api/auth/change-password",
        json={"old_password": "a", "new_password": "bbbbbb"},
        headers={"X-API-Key": key},
    )
    assert as_key.status_code == 403


# The earlier release ---------------------------------------------------------------------------
async def test_release_0917_auth_error_shapes(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        admin = await admin_token(client)
        resp = await client.post("/api/auth/login", json={"username": "admin", "password": "bad"})
        assert resp.status_code == 401
        assert resp.json() == {"error": "Invalid username or password", "status": 401}
        missing = await client.get("/api/auth/me")
        assert missing.json() == {
            "error": "Authentication required. Provide a valid JWT token or API key.",
            "status": 401,
        }
        user = await regular_user(client, admin)
        resp = await client.get("/api/users", headers=bearer(user))
        assert resp.status_code == 400 and resp.json() == {"error": "Admin access required", "status": 400}
        # Setup errors used the envelope in both releases.
        again = await client.post("/api/setup/initialize", json={"username": "x1x", "password": "abc12345"})
        assert again.json()["error"]["code"] == "SETUP_ALREADY_COMPLETED"
