"""Server-side requests behind their fence (twin/automation/outbound.py), over real loopback sockets:
the instance probe refuses every spelling of a refused address before anything connects, follows a
redirect only to an address it may reach and never carries the stored key to another host; the Ollama
model list answers the vendor's 500s and never the far end's body; the channel test answers the
vendor's words, not the target's body."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
import pytest

from tests.api.support import assert_error
from tests.receivers import closed_port
from twin.automation import instances, outbound

KEY = "nmk_feedfacefeedfacefeedfacefeedface"


@dataclass
class Listener:
    url: str
    port: int
    heads: list[str] = field(default_factory=list)
    connections: int = 0


@asynccontextmanager
async def listener(host: str, answer: Callable[[str], bytes], port: int = 0) -> AsyncIterator[Listener]:
    """A raw HTTP server on ``host``: counts connections, keeps request heads, answers ``answer(head)``."""
    seen = Listener("", 0)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.connections += 1
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            seen.heads.append(head)
            writer.write(answer(head))
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, host, port)
    seen.port = server.sockets[0].getsockname()[1]
    seen.url = f"http://{host}:{seen.port}"
    try:
        yield seen
    finally:
        server.close()
        await server.wait_closed()


def reply(status: int, body: bytes = b"", **headers: str) -> Callable[[str], bytes]:
    extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
    head = f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n{extra}\r\n"
    return lambda _head: head.encode() + body


async def probe(automation: httpx.AsyncClient, auth: dict, url: str) -> httpx.Response:
    made = await automation.post(
        "/api/instances", json={"name": "R", "url": url, "api_key": KEY}, headers=auth
    )
    return await automation.post(f"/api/instances/{made.json()['data']['id']}/test", headers=auth)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "::1", "127.0.0.2", "0.0.0.0", "::ffff:127.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1",
     "169.254.169.254", "::ffff:169.254.169.254", "fd00:ec2::254"],
)  # fmt: skip
def test_the_instance_fence_holds_every_form_of_this_host(address: str) -> None:
    assert outbound.INSTANCE_FENCE.blocks(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["192.168.1.50", "10.0.0.7", "8.8.8.8", "2001:db8::1", "::ffff:192.168.1.5"]
)
def test_lan_and_public_instances_stay_reachable(address: str) -> None:
    assert not outbound.INSTANCE_FENCE.blocks(ipaddress.ip_address(address))


async def test_every_spelling_of_a_refused_address_is_refused_before_any_connect(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    async with listener("127.0.0.1", reply(200, b'{"status":"ok"}')) as home:
        port = home.port
        for url in (
            f"http://127.1:{port}",
            f"http://2130706433:{port}",
            f"http://0x7f.1:{port}",
            f"http://017700000001:{port}",
            f"http://[::ffff:127.0.0.1]:{port}",
            f"http://127.0.0.2:{port}",
            f"http://LOCALHOST.:{port}",
        ):
            resp = await probe(automation, auth, url)
            assert_error(resp, 400, "BAD_REQUEST")
            assert "Instance URL targets a blocked address (" in resp.json()["error"]["message"], url
        assert home.connections == 0 and home.heads == []


@pytest.fixture
def lan(monkeypatch: pytest.MonkeyPatch) -> None:
    """127.0.0.1 is this host; other loopback addresses stand for LAN hosts (traffic stays on loopback)."""
    narrowed = outbound.Fence((ipaddress.ip_network("127.0.0.1/32"),))
    monkeypatch.setattr(instances, "FENCE", narrowed)


async def test_a_redirect_to_a_refused_address_is_not_followed_and_carries_no_key(
    lan: None, automation: httpx.AsyncClient, auth: dict
) -> None:
    async with listener("127.0.0.1", reply(200, b'{"status":"ok"}')) as home:
        for location in (f"http://127.0.0.1:{home.port}/steal", f"http://2130706433:{home.port}/steal"):
            async with listener("127.0.0.2", reply(302, Location=location)) as remote:
                resp = await probe(automation, auth, remote.url)
                data = resp.json()["data"]
                assert (data["success"], data["status"]) == (False, "offline")
                assert data["error"] == f"error following redirect for url ({remote.url}/api/health)"
                assert len(remote.heads) == 1 and f"x-api-key: {KEY}" in remote.heads[0].lower()
        assert home.connections == 0 and home.heads == []


async def test_a_redirect_to_another_host_is_followed_without_the_key(
    lan: None, automation: httpx.AsyncClient, auth: dict
) -> None:
    async with listener("127.0.0.3", reply(200, b'{"status":"ok"}')) as other:
        moved = reply(302, Location=f"{other.url}/api/health")
        async with listener("127.0.0.2", moved) as remote:
            data = (await probe(automation, auth, remote.url)).json()["data"]
    assert data["success"] is True and data["status"] == "online"
    assert KEY in remote.heads[0]
    (head,) = other.heads
    assert KEY not in head and "x-api-key" not in head.lower()
    assert f"host: 127.0.0.3:{other.port}" in head.lower()


async def test_ollama_models_without_ollama_is_the_handlers_500(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    resp = await automation.get("/api/llm-backends/ollama/models", params={"endpoint": url}, headers=auth)
    assert_error(resp, 500, "INTERNAL_ERROR")
    assert resp.json()["error"]["message"].startswith("Failed to connect to Ollama: ")


async def test_ollama_models_never_echo_the_far_end(automation: httpx.AsyncClient, auth: dict) -> None:
    secret = b"root:$6$SECRET-HASH:19000:0:99999:7:::"
    for answer, message in (
        (reply(200, secret), "Failed to parse Ollama response: "),
        (reply(404, secret), "Ollama returned status: 404 Not Found"),
        (reply(200, b'{"models": "' + secret + b'"}'), "Failed to parse Ollama response: "),
    ):
        async with listener("127.0.0.1", answer) as far:
            resp = await automation.get(
                "/api/llm-backends/ollama/models", params={"endpoint": far.url}, headers=auth
            )
        assert_error(resp, 500, "INTERNAL_ERROR")
        assert resp.json()["error"]["message"].startswith(message) and b"SECRET" not in resp.content
    async with listener("127.0.0.1", reply(200, b'{"models":[{"name":"qwen3:8b","size":5}]}')) as ollama:
        ok = await automation.get(
            "/api/llm-backends/ollama/models", params={"endpoint": ollama.url}, headers=auth
        )
    assert ok.json()["data"] == {"models": [{"name": "qwen3:8b", "size": 5, "modified_at": None}], "count": 1}


async def test_ollama_models_never_reach_the_metadata_service(
    automation: httpx.AsyncClient, auth: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata address is refused before any connect (here its loopback stand-in, 127.0.0.9)."""
    fence = outbound.Fence((ipaddress.ip_network("127.0.0.9/32"),))
    monkeypatch.setattr(outbound, "METADATA_FENCE", fence)
    async with listener("127.0.0.9", reply(200, b'{"models":[]}')) as metadata:
        resp = await automation.get(
            "/api/llm-backends/ollama/models", params={"endpoint": metadata.url}, headers=auth
        )
        async with listener("127.0.0.1", reply(302, Location=f"{metadata.url}/api/tags")) as hop:
            moved = await automation.get(
                "/api/llm-backends/ollama/models", params={"endpoint": hop.url}, headers=auth
            )
    assert_error(resp, 500, "INTERNAL_ERROR")
    assert_error(moved, 500, "INTERNAL_ERROR")
    assert metadata.connections == 0 and len(hop.heads) == 1


async def test_the_channel_test_answers_the_vendors_words_not_the_targets_body(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    secret = b"internal page SECRET-BODY"
    failed = "Failed to send test message: Send failed: Webhook returned error: 404 Not Found"
    for status, words in ((200, "Test message sent successfully"), (404, failed)):
        async with listener("127.0.0.1", reply(status, secret)) as target:
            name = f"hook{status}"
            body = {"name": name, "channel_type": "webhook", "url": f"{target.url}/x"}
            assert (
                await automation.post("/api/messages/channels", json=body, headers=auth)
            ).status_code == 200
            resp = await automation.post(f"/api/messages/channels/{name}/test", headers=auth)
        data = resp.json()["data"]
        assert data["message"] == words and data["message_zh"] and b"SECRET" not in resp.content
        detail = await automation.get(f"/api/messages/channels/{name}", headers=auth)
        assert b"SECRET" not in detail.content
