"""Auth classes of the automation API: public, jwt-or-api-key (scoped, expiring keys), jwt-only."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings

DEFAULT_KEY = "nmk_" + "ab" * 16
"""The operator's key (``NEOMIND_API_KEY``): only an API key may manage API keys."""
OPERATOR = {"X-API-Key": DEFAULT_KEY}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, api_key=DEFAULT_KEY)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def new_key(client: httpx.AsyncClient, **body) -> str:
    resp = await client.post("/api/auth/keys", json={"name": "ci", **body}, headers=OPERATOR)
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
    key = await new_key(automation)
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
    assert (await automation.get("/api/auth/status")).json() == {
        "enabled": True,
        "key_count": 1,
        "has_default_key": True,
    }
    resp = await automation.post("/api/auth/keys", json={"name": "ci"}, headers=OPERATOR)
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

    listed = (await automation.get("/api/auth/keys", headers={"X-API-Key": key})).json()["keys"]
    assert [k["name"] for k in listed] == ["Default API Key", "ci"] and listed[1]["id"] == key_id
    assert listed[1]["preview"].endswith("…")
    assert key not in str(listed)  # the secret is shown once, at creation
    assert (await automation.get("/api/auth/status")).json()["key_count"] == 2

    gone = await automation.delete(f"/api/auth/keys/{key_id}", headers=OPERATOR)
    assert gone.json() == {"message": f"API key {key_id} deleted", "success": True}
    again = await automation.delete(f"/api/auth/keys/{key_id}", headers=OPERATOR)
    assert again.status_code == 200 and again.json() == {
        "message": f"API key {key_id} not found",
        "success": False,
    }
    resp = await automation.get("/api/auth/me", headers={"X-API-Key": key})
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "Invalid API key"


async def test_api_key_scopes(automation: httpx.AsyncClient) -> None:
    read_auth = await new_key(automation, permissions=["auth:read"])
    devices = await new_key(automation, permissions=["devices"])
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": read_auth})).json()["role"] == "user"
    resp = await automation.post("/api/auth/logout", headers={"X-API-Key": read_auth})
    assert resp.status_code == 403
    assert resp.json()["error"] == {
        "code": "FORBIDDEN",
        "message": "API key lacks permission 'auth:write'",
        "request_id": None,
    }
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": devices})).status_code == 403
    # A scoped key cannot manage keys: refused by its scope, or (in scope) for lacking '*'.
    assert (
        await automation.post("/api/auth/keys", json={"name": "x"}, headers={"X-API-Key": devices})
    ).status_code == 403
    resp = await automation.get("/api/auth/keys", headers={"X-API-Key": read_auth})
    assert resp.status_code == 403
    assert resp.json()["error"]["message"] == "Managing API keys requires a key with '*'"


@pytest.mark.parametrize("perm", ["", "devices:delete", "Devices", "a/b"])
async def test_bad_permissions_are_refused(automation: httpx.AsyncClient, perm: str) -> None:
    resp = await automation.post(
        "/api/auth/keys", json={"name": "x", "permissions": [perm]}, headers=OPERATOR
    )
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "BAD_REQUEST"


async def test_api_keys_expire_on_the_world_clock(twin: Twin, automation: httpx.AsyncClient) -> None:
    key = await new_key(automation, expires_in_days=1)
    assert (await automation.get("/api/auth/me", headers={"X-API-Key": key})).status_code == 200
    twin.clock.advance(86_400)
    resp = await automation.get("/api/auth/me", headers={"X-API-Key": key})
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "API key has expired"
    past = await automation.post("/api/auth/keys", json={"name": "x", "expires_at": 1}, headers=OPERATOR)
    assert past.status_code == 400


async def test_new_key_bodies_are_checked(automation: httpx.AsyncClient) -> None:
    assert (await automation.get("/api/auth/keys")).status_code == 401
    assert (await automation.post("/api/auth/keys", json={}, headers=OPERATOR)).status_code == 422
    assert (await automation.post("/api/auth/keys", json={"name": 5}, headers=OPERATOR)).status_code == 422
    blank = await automation.post("/api/auth/keys", json={"name": " "}, headers=OPERATOR)
    assert blank.status_code == 400


def invalid_key(release: str) -> dict:
    if release == "0.9.17":
        return {"error": "Invalid API key", "status": 401}
    return {
        "success": False,
        "error": {"code": "UNAUTHORIZED", "message": "Invalid API key", "request_id": None},
    }


@pytest.mark.parametrize("release", ["0.9.24", "0.9.17"])
async def test_key_handlers_authenticate_the_caller_again_as_an_api_key(
    settings: Settings, release: str
) -> None:
    """The hybrid check lets a JWT through, then each /auth/keys handler reads the key again from
    ``X-API-Key``, else from ``Bearer``: a JWT there is no key, so a web session cannot manage keys."""
    twin = build(dataclasses.replace(settings, release=release))
    async with _client(twin.automation_app, "http://automation") as client:
        admin = await admin_token(client)
        user = await regular_user(client, admin)
        key = await new_key(client)
        scratch = await client.post("/api/auth/keys", json={"name": "scratch"}, headers=OPERATOR)
        key_id = scratch.json()["info"]["id"]
        calls = (
            ("GET", "/api/auth/keys", None),
            ("POST", "/api/auth/keys", {"name": "x"}),
            ("DELETE", f"/api/auth/keys/{key_id}", None),
        )
        refused = (bearer(admin), bearer(user), bearer(admin) | {"X-API-Key": "nmk_" + "0" * 32})
        for method, path, body in calls:
            for headers in refused:
                resp = await client.request(method, path, json=body, headers=headers)
                assert (resp.status_code, resp.json()) == (401, invalid_key(release)), (method, headers)
        assert (await client.get("/api/auth/keys", headers=bearer(key))).status_code == 200  # key as Bearer
        as_both = bearer(admin) | {"X-API-Key": key}  # the JWT passes the hybrid check, the key the handler
        assert (await client.post("/api/auth/keys", json={"name": "y"}, headers=as_both)).status_code == 200
        gone = await client.delete(f"/api/auth/keys/{key_id}", headers=as_both)
        assert gone.json()["success"] is True
        assert [k["name"] for k in (await client.get("/api/auth/keys", headers=OPERATOR)).json()["keys"]] == [
            "Default API Key",
            "ci",
            "y",
        ]
        expiring = await new_key(client, expires_in_days=1)
        twin.clock.advance(86_400)
        resp = await client.get("/api/auth/keys", headers=bearer(admin) | {"X-API-Key": expiring})
        assert (resp.status_code, resp.json()) == (401, invalid_key(release))
    twin.world.store.close()


# GET /auth/verify (public) -------------------------------------------------------------------
async def credentials(twin: Twin, client: httpx.AsyncClient) -> dict[str, str]:
    """An expired JWT, a revoked one, then a fresh admin JWT and a key."""
    await admin_token(client)

    async def login() -> str:
        resp = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        return resp.json()["token"]

    expired = await login()
    twin.clock.advance(7 * 86_400 + 31)  # the lifetime, and past the 30 s of skew
    revoked = await login()
    assert (await client.post("/api/auth/logout", headers=bearer(revoked))).status_code == 200
    return {"jwt": await login(), "expired": expired, "revoked": revoked, "key": await new_key(client)}


VERIFY_CASES: list[tuple[str, Callable[[dict[str, str]], dict[str, str]], str | None]] = [
    ("JWT as Bearer", lambda c: bearer(c["jwt"]), "jwt"),
    ("key in X-API-Key", lambda c: {"X-API-Key": c["key"]}, "api_key"),
    ("key as Bearer", lambda c: bearer(c["key"]), None),
    ("lowercase bearer", lambda c: {"Authorization": f"bearer {c['jwt']}"}, None),
    ("expired JWT", lambda c: bearer(c["expired"]), None),
    ("revoked JWT", lambda c: bearer(c["revoked"]), None),
    ("garbage", lambda c: bearer("garbage"), None),
    ("unknown key", lambda c: {"X-API-Key": "nmk_" + "0" * 32}, None),
    ("nothing", lambda c: {}, None),
    ("JWT and an unknown key", lambda c: bearer(c["jwt"]) | {"X-API-Key": "nmk_x"}, "jwt"),
    # A JWT that fails falls through to the key header.
    ("expired JWT and a key", lambda c: bearer(c["expired"]) | {"X-API-Key": c["key"]}, "api_key"),
    ("revoked JWT and a key", lambda c: bearer(c["revoked"]) | {"X-API-Key": c["key"]}, "api_key"),
    ("garbage and a key", lambda c: bearer("garbage") | {"X-API-Key": c["key"]}, "api_key"),
    ("key as Bearer and in X-API-Key", lambda c: bearer(c["key"]) | {"X-API-Key": c["key"]}, "api_key"),
    (
        "lowercase bearer and a key",
        lambda c: {"Authorization": f"bearer {c['jwt']}", "X-API-Key": c["key"]},
        "api_key",
    ),
    ("Basic and a key", lambda c: {"Authorization": "Basic YTpi", "X-API-Key": c["key"]}, "api_key"),
]


@pytest.mark.parametrize("release", ["0.9.24", "0.9.17"])
async def test_verify_reports_a_jwt_or_an_x_api_key(settings: Settings, release: str) -> None:
    # no camera or sensor: the week a token lives is simulated, and they would fill it with work
    twin = build(dataclasses.replace(settings, release=release, cameras=0, sensors=0))
    async with _client(twin.automation_app, "http://automation") as client:
        creds = await credentials(twin, client)
        me = (await client.get("/api/auth/me", headers=bearer(creds["jwt"]))).json()
        if release == "0.9.17":
            required: dict = {"error": "Authentication required", "status": 401}
        else:
            error = {"code": "UNAUTHORIZED", "message": "Authentication required", "request_id": None}
            required = {"success": False, "error": error}
        for name, headers, method in VERIFY_CASES:
            resp = await client.get("/api/auth/verify", headers=headers(creds))
            if method is None:
                assert (resp.status_code, resp.json()) == (401, required), name
            elif method == "jwt":
                user = {"id": me["id"], "username": "admin", "role": "admin"}
                assert resp.json() == {"authenticated": True, "method": "jwt", "user": user}, name
            else:
                assert resp.json() == {"authenticated": True, "method": "api_key"}, name
    twin.world.store.close()


async def test_default_key_from_the_environment(settings: Settings) -> None:
    raw = "nmk_" + "cd" * 16
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
USER_ROUTES = (
    ("GET", "/api/users", None),
    ("POST", "/api/users", {"username": "zed", "password": "pw1234"}),
    ("DELETE", "/api/users/admin", None),
)


async def test_users_endpoints_are_jwt_only(automation: httpx.AsyncClient) -> None:
    admin = await admin_token(automation)
    key = await new_key(automation)
    resp = await automation.get("/api/users")
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "Missing Authorization header"
    user = await regular_user(automation, admin)
    for method, path, body in USER_ROUTES:
        for headers in ({"X-API-Key": key}, bearer(key), bearer(admin) | {"X-API-Key": key}):
            resp = await automation.request(method, path, json=body, headers=headers)
            assert resp.status_code == 403 and resp.json()["error"]["code"] == "FORBIDDEN", (path, headers)
        resp = await automation.request(method, path, json=body, headers=bearer(user))
        assert resp.status_code == 400 and resp.json()["error"] == {
            "code": "BAD_REQUEST",
            "message": "Admin access required",
            "request_id": None,
        }
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
    key = await new_key(automation)
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
        await admin_token(client)
        resp = await client.post("/api/auth/login", json={"username": "admin", "password": "bad"})
        assert resp.status_code == 401
        assert resp.json() == {"error": "Invalid username or password", "status": 401}
        missing = await client.get("/api/auth/me")
        assert missing.json() == {
            "error": "Authentication required. Provide a valid JWT token or API key.",
            "status": 401,
        }
        # Setup errors used the envelope in both releases.
        again = await client.post("/api/setup/initialize", json={"username": "x1x", "password": "abc12345"})
        assert again.json()["error"]["code"] == "SETUP_ALREADY_COMPLETED"


async def test_release_0917_users_routes_read_only_a_bearer_jwt(settings: Settings) -> None:
    """The 0.9.17 JWT middleware reads ``Authorization: Bearer`` and nothing else, and the handler
    refuses a non-administrator with 400."""
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        admin = await admin_token(client)
        user = await regular_user(client, admin)
        key = await new_key(client)
        for method, path, body in USER_ROUTES:
            for headers, message in (
                ({"X-API-Key": key}, "Missing Authorization header"),
                (bearer(key), "Invalid token: malformed"),
                ({"Authorization": f"bearer {admin}"}, "Invalid Authorization format"),
                ({"Authorization": admin}, "Invalid Authorization format"),
                (bearer(user), None),
            ):
                resp = await client.request(method, path, json=body, headers=headers)
                if message is None:
                    assert (resp.status_code, resp.json()) == (
                        400,
                        {"error": "Admin access required", "status": 400},
                    )
                else:
                    assert (resp.status_code, resp.json()) == (401, {"error": message, "status": 401}), (
                        headers
                    )
        listed = await client.get("/api/users", headers=bearer(admin) | {"X-API-Key": "ignored"})
        assert [u["username"] for u in listed.json()["users"]] == ["admin", "alice"]
    twin.world.store.close()


async def test_a_verified_token_is_remembered_by_itself_and_forgotten_at_logout(twin, automation) -> None:
    token = (
        await automation.post("/api/setup/initialize", json={"username": "cached", "password": "abc12345"})
    ).json()["token"]
    users = twin.automation.users
    assert (await automation.get("/api/devices", headers=bearer(token))).status_code == 200
    assert token in users._verified  # the next request is one lookup, no hash
    other = users.login("cached", "abc12345").token
    assert users.authenticate(other).username == "cached"
    assert (await automation.post("/api/auth/logout", headers=bearer(token))).status_code == 200
    assert token not in users._verified and other in users._verified  # only that session is forgotten
    refused = await automation.get("/api/devices", headers=bearer(token))
    assert refused.status_code == 401 and refused.json()["error"]["message"] == "Session has been revoked"
    assert (await automation.get("/api/devices", headers=bearer(other))).status_code == 200
