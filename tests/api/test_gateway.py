"""The edge gateway app over a simulated camera: envelope, login (RSA and plaintext), token sources."""

from __future__ import annotations

import base64

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding

from tests.conftest import gateway_token
from twin.serve import Twin

UNAUTHORIZED = {
    "code": 2000,
    "message": "Unauthorized",
    "error": {"type": "auth", "detail": "Invalid or missing authentication token"},
}


async def test_health_is_public(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.get("/api/v1/system/health")
    assert resp.json() == {
        "code": 0,
        "message": "Success",
        "data": {"status": "healthy", "time": 1767225600, "service": "platform-api"},
    }


async def test_public_key_and_rsa_login(gateway: httpx.AsyncClient) -> None:
    data = (await gateway.get("/api/v1/auth/public-key")).json()["data"]
    assert data["algorithm"] == "RSA-2048/PKCS1v15"
    key = serialization.load_pem_public_key(data["public_key"].encode())
    assert key.key_size == 2048
    cipher = base64.b64encode(key.encrypt(b"password", padding.PKCS1v15())).decode()
    resp = await gateway.post(
        "/api/login", json={"username": "admin", "password": cipher, "timestamp": data["unix_timestamp"]}
    )
    assert resp.status_code == 200
    token = resp.json()["data"]["token"]
    assert token.startswith("Bearer ") and len(token) == len("Bearer ") + 43
    assert resp.json()["data"]["username"] == "admin"


async def test_plaintext_login_and_token_sources(gateway: httpx.AsyncClient) -> None:
    token = await gateway_token(gateway)
    raw = token.removeprefix("Bearer ")
    assert (await gateway.get("/api/v1/system/info", headers={"Authorization": token})).status_code == 200
    assert (await gateway.get("/api/v1/system/info", headers={"Authorization": raw})).status_code == 200
    assert (await gateway.get(f"/api/v1/system/info?token={raw}")).status_code == 200
    assert (await gateway.get("/api/v1/system/info", headers={"X-API-Key": raw})).status_code == 200
    # A present Authorization header is the only source checked.
    resp = await gateway.get(f"/api/v1/system/info?token={raw}", headers={"Authorization": "Bearer junk"})
    assert resp.status_code == 401
    info = (await gateway.get("/api/v1/system/info", headers={"Authorization": token})).json()["data"]
    assert info == {
        "version": "0.1.0",
        "services": {"ai-runtime": True, "event-bus": True, "device-control": True, "app-manager": True},
    }


async def test_protected_route_without_token(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.get("/api/v1/system/info")
    assert resp.status_code == 401
    assert resp.headers["www-authenticate"] == "Bearer"
    assert resp.json() == UNAUTHORIZED


async def test_bad_credentials(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.post("/api/login", json={"username": "admin", "password": "nope"})
    assert resp.status_code == 401
    assert resp.json() == {
        "code": 2000,
        "message": "Unauthorized",
        "error": {"type": "auth", "detail": "Invalid username or password"},
    }


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"username": "admin"}',
        b'{"username": "", "password": "x"}',
        b'{"username": "admin", "password": "password", "timestamp": "soon"}',
    ],
)
async def test_malformed_login_is_1001(gateway: httpx.AsyncClient, body: bytes) -> None:
    resp = await gateway.post("/api/login", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 400
    assert resp.json() == {
        "code": 1001,
        "message": "Invalid request",
        "error": {"detail": "Invalid input format"},
    }


async def test_timestamp_skew_is_1005(twin: Twin, gateway: httpx.AsyncClient) -> None:
    now = int(twin.clock.now())
    ok = await gateway.post(
        "/api/login", json={"username": "admin", "password": "password", "timestamp": now - 299}
    )
    assert ok.status_code == 200
    resp = await gateway.post(
        "/api/login", json={"username": "admin", "password": "password", "timestamp": now - 301}
    )
    assert resp.status_code == 400
    assert resp.json()["code"] == 1005
    assert resp.json()["message"] == "Request timestamp out of allowed window"


async def test_logout_is_public_idempotent_and_revokes(gateway: httpx.AsyncClient) -> None:
    token = await gateway_token(gateway)
    for _ in range(2):
        resp = await gateway.post("/api/v1/logout", headers={"Authorization": token})
        assert resp.json() == {"code": 0, "message": "Success"}
    assert (await gateway.get("/api/v1/system/info", headers={"Authorization": token})).status_code == 401
    assert (await gateway.post("/api/v1/logout")).status_code == 200


async def test_unknown_path_and_wrong_method_get_the_spa_404(gateway: httpx.AsyncClient) -> None:
    for resp in (
        await gateway.get("/api/v1/nope"),
        await gateway.delete("/api/v1/system/health"),
        await gateway.get("/api/login"),
    ):
        assert resp.status_code == 404
        assert resp.json() == {"code": 404, "message": "Not found"}


async def test_cors_preflight_is_answered_before_auth(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.options(
        "/api/v1/system/info", headers={"Origin": "http://ui", "Access-Control-Request-Method": "GET"}
    )
    assert resp.status_code == 200
    assert resp.headers["access-control-allow-origin"] == "*"


async def test_the_devices_api_description_is_public_and_byte_identical(gateway) -> None:
    from api.gateway.routers.auth import SWAGGER

    resp = await gateway.get("/api/v1/swagger.yaml")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/yaml")
    assert resp.content == SWAGGER.read_bytes() and resp.text.startswith("openapi: 3.0.3")
