"""Remote instances over HTTP: the local instance, CRUD with the key masked and encrypted as the web
app decrypts it, the health probe over a real loopback socket (and the addresses it refuses),
refusals in the vendor's envelope, durability across a restart on the same state directory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from ipaddress import ip_network
from pathlib import Path

import httpx
import pytest

from tests.api.lists import API_KEY, build_twin
from tests.api.support import assert_error
from tests.conftest import _client
from tests.receivers import closed_port
from twin.automation import instances, outbound
from twin.serve import Twin

KEY = "nmk_0123456789abcdef0123456789abcdef"
CIPHER = b"NeoMind2024!@#"
HOST = "127.0.0.2"
"""A loopback address standing for a host on the LAN (:func:`lan`)."""


@pytest.fixture(autouse=True)
def lan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests keep their traffic on loopback: here only 127.0.0.1 (and the metadata address) is this
    host, so 127.0.0.2 stands for a LAN host the probe may reach. The real fence refuses all of
    127.0.0.0/8 (tests/api/automation/test_outbound.py)."""
    narrowed = outbound.Fence((ip_network("127.0.0.1/32"), ip_network("169.254.169.254/32")))
    monkeypatch.setattr(instances, "FENCE", narrowed)


def decrypt(hex_key: str) -> str:
    """The web app's ``decryptApiKey``."""
    data = bytes.fromhex(hex_key)
    return bytes(b ^ CIPHER[i % len(CIPHER)] for i, b in enumerate(data)).decode()


@asynccontextmanager
async def health_server(status: int) -> AsyncIterator[tuple[str, list[str]]]:
    """A backend on 127.0.0.2 answering ``status`` to anything; yields its URL and the requests' heads."""
    heads: list[str] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append((await reader.readuntil(b"\r\n\r\n")).decode("latin-1"))
        body = b'{"status":"ok"}'
        writer.write(
            b"HTTP/1.1 %d X\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (status, len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, HOST, 0)
    try:
        yield f"http://{HOST}:{server.sockets[0].getsockname()[1]}", heads
    finally:
        server.close()
        await server.wait_closed()


async def test_the_local_instance_and_crud(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    listed = (await automation.get("/api/instances", headers=auth)).json()["data"]
    assert listed == {
        "instances": [
            {
                "id": "local-default",
                "name": "Local",
                "url": "http://localhost:9375",
                "api_key": None,
                "is_local": True,
                "last_status": "online",
                "last_checked_at": 1767225600,
                "created_at": 1767225600,
            }
        ]
    }
    twin.clock.advance(10)
    body = {"name": "Factory-1", "url": "http://192.0.2.50:9375", "api_key": KEY}
    created = (await automation.post("/api/instances", json=body, headers=auth)).json()["data"]
    assert created["id"].startswith("inst_") and len(created["id"]) == 13
    assert created["api_key"] == "nmk_0123****" and decrypt(created["encrypted_key"]) == KEY
    assert (created["is_local"], created["last_status"], created["last_checked_at"]) == (
        False,
        "unknown",
        None,
    )
    assert created["created_at"] == 1767225610
    assert (await automation.get(f"/api/instances/{created['id']}", headers=auth)).json()["data"] == created

    resp = await automation.put(
        f"/api/instances/{created['id']}", json={"name": "F2", "api_key": "short"}, headers=auth
    )
    assert resp.json()["data"]["name"] == "F2" and resp.json()["data"]["api_key"] == "****"
    resp = await automation.put(f"/api/instances/{created['id']}", json={"api_key": ""}, headers=auth)
    cleared = resp.json()["data"]
    assert cleared["api_key"] is None and "encrypted_key" not in cleared and cleared["url"] == body["url"]

    resp = await automation.delete(f"/api/instances/{created['id']}", headers=auth)
    assert resp.json()["data"] == {"deleted": True}
    resp = await automation.delete(f"/api/instances/{created['id']}", headers=auth)
    assert resp.json()["data"] == {"deleted": True}  # as the server: an unknown id is no error
    assert [
        i["id"] for i in (await automation.get("/api/instances", headers=auth)).json()["data"]["instances"]
    ] == ["local-default"]


async def test_the_health_probe(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    async with health_server(200) as (url, heads):
        body = {"name": "Up", "url": url + "/", "api_key": KEY}
        up = (await automation.post("/api/instances", json=body, headers=auth)).json()["data"]
        twin.clock.advance(5)
        probe = (await automation.post(f"/api/instances/{up['id']}/test", headers=auth)).json()["data"]
        assert probe["success"] is True and probe["status"] == "online" and "error" not in probe
        assert isinstance(probe["latency_ms"], int)
        assert heads[0].startswith("GET /api/health HTTP/1.1") and f"x-api-key: {KEY}" in heads[0].lower()
    got = (await automation.get(f"/api/instances/{up['id']}", headers=auth)).json()["data"]
    assert (got["last_status"], got["last_checked_at"]) == ("online", 1767225605)

    async with health_server(503) as (url, _):
        down = (
            await automation.post("/api/instances", json={"name": "Sick", "url": url}, headers=auth)
        ).json()
        probe = (await automation.post(f"/api/instances/{down['data']['id']}/test", headers=auth)).json()[
            "data"
        ]
        assert (probe["success"], probe["status"], probe["error"]) == (False, "offline", "HTTP 503")

    gone = f"http://{HOST}:{closed_port()}"
    resp = await automation.post("/api/instances", json={"name": "Gone", "url": gone}, headers=auth)
    probe = (await automation.post(f"/api/instances/{resp.json()['data']['id']}/test", headers=auth)).json()
    assert probe["data"]["status"] == "offline"
    assert probe["data"]["error"] == f"error sending request for url ({gone}/api/health)"

    for blocked, target in (("http://localhost:1", "//localhost"), ("http://127.0.0.1:9", "//127.0.0.1"),
                            ("http://169.254.169.254/x", "169.254.169.254")):  # fmt: skip
        resp = await automation.post("/api/instances", json={"name": "B", "url": blocked}, headers=auth)
        test = await automation.post(f"/api/instances/{resp.json()['data']['id']}/test", headers=auth)
        assert_error(test, 400, "BAD_REQUEST")
        assert f"blocked address ({target})" in test.json()["error"]["message"]
    assert_error(await automation.post("/api/instances/local-default/test", headers=auth), 400, "BAD_REQUEST")


async def test_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    for body, code in (
        ({"url": "http://a"}, "VALIDATION_ERROR"),
        ({"name": "a"}, "VALIDATION_ERROR"),
        ({"name": 1, "url": "http://a"}, "VALIDATION_ERROR"),
        ({"name": "a", "url": "http://a", "api_key": 5}, "VALIDATION_ERROR"),
    ):
        assert_error(await automation.post("/api/instances", json=body, headers=auth), 422, code)
    for body, message in (
        ({"name": "", "url": "http://a"}, "Name cannot be empty"),
        ({"name": "a", "url": ""}, "URL cannot be empty"),
        ({"name": "a", "url": "ftp://a"}, "URL must start with http:// or https://"),
    ):
        assert_error(
            await automation.post("/api/instances", json=body, headers=auth), 400, "BAD_REQUEST", message
        )
    resp = await automation.put("/api/instances/local-default", json={"url": "nope"}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "URL must start with http:// or https://")
    resp = await automation.put("/api/instances/local-default", json={"name": False}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    resp = await automation.delete("/api/instances/local-default", headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "Invalid input: Cannot delete the local instance")
    missing = "Instance inst_nope not found"
    assert_error(await automation.get("/api/instances/inst_nope", headers=auth), 404, "NOT_FOUND", missing)
    resp = await automation.put("/api/instances/inst_nope", json={"name": "x"}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND", missing)
    assert_error(
        await automation.post("/api/instances/inst_nope/test", headers=auth), 404, "NOT_FOUND", missing
    )
    for method, path in (
        ("GET", "/api/instances"),
        ("POST", "/api/instances"),
        ("GET", "/api/instances/local-default"),
        ("PUT", "/api/instances/local-default"),
        ("DELETE", "/api/instances/local-default"),
        ("POST", "/api/instances/local-default/test"),
    ):
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
        resp = await automation.request(method, path, json={}, headers={"X-API-Key": "nmk_" + "0" * 32})
        assert_error(resp, 401, "UNAUTHORIZED")


async def test_instances_survive_a_restart(tmp_path: Path) -> None:
    key = {"X-API-Key": API_KEY}
    twin = build_twin(tmp_path / "state")
    async with _client(twin.automation_app, "http://automation") as client:
        body = {"name": "Factory", "url": "https://192.0.2.7", "api_key": KEY}
        created = (await client.post("/api/instances", json=body, headers=key)).json()["data"]
        listed = (await client.get("/api/instances", headers=key)).json()["data"]
    twin.world.store.close()

    again = build_twin(tmp_path / "state")
    async with _client(again.automation_app, "http://automation") as client:
        assert (await client.get("/api/instances", headers=key)).json()["data"] == listed
        assert (await client.get(f"/api/instances/{created['id']}", headers=key)).json()["data"] == created
        second = (await client.post("/api/instances", json=body, headers=key)).json()["data"]
        assert second["id"] != created["id"]  # a new run never mints an id an earlier one stored
