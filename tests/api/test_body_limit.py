"""Request body limits read while the body streams in (api/body_limit.py), on a small app and on
both vendor apps: which answer, in whose shape, and whether the app had read the body."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, Request
from starlette.responses import PlainTextResponse

from api import body_limit
from api.automation import limits
from api.body_limit import Limit
from api.gateway import errors as gateway_errors
from tests.conftest import admin_token
from twin.serve import Twin

MiB = 1024 * 1024


def small_app(limit: Limit) -> tuple[FastAPI, list[int]]:
    """An app whose one route reads the body and says how long it was."""
    app = FastAPI()
    reads: list[int] = []

    @app.post("/echo")
    async def echo(request: Request) -> PlainTextResponse:
        body = await request.body()
        reads.append(len(body))
        return PlainTextResponse(str(len(body)))

    @app.post("/ignore")
    async def ignore() -> PlainTextResponse:
        return PlainTextResponse("ignored")

    body_limit.install(app, lambda method, path: limit, limit.size)
    return app, reads


def refusal(text: str):
    return lambda: PlainTextResponse(text, status_code=413)


async def chunks(n: int, size: int) -> AsyncIterator[bytes]:
    for _ in range(n):
        yield b"x" * size


def client(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_a_body_within_the_limit_arrives_whole() -> None:
    app, reads = small_app(Limit(100, on_read=refusal("read"), on_declared=refusal("declared")))
    async with client(app) as http:
        resp = await http.post("/echo", content=b"x" * 100)
        assert (resp.status_code, resp.text) == (200, "100")
        resp = await http.post("/echo", content=chunks(10, 10))
        assert (resp.status_code, resp.text) == (200, "100")
    assert reads == [100, 100]


async def test_a_declared_length_over_the_limit_is_refused_before_the_app() -> None:
    app, reads = small_app(Limit(100, on_read=refusal("read"), on_declared=refusal("declared")))
    async with client(app) as http:
        for path in ("/echo", "/ignore"):
            resp = await http.post(path, content=b"x" * 101)
            assert (resp.status_code, resp.text) == (413, "declared")
    assert reads == []


async def test_a_streamed_body_is_refused_at_the_chunk_that_passes_the_limit() -> None:
    app, reads = small_app(Limit(100, on_read=refusal("read"), on_declared=refusal("declared")))
    async with client(app) as http:
        resp = await http.post("/echo", content=chunks(11, 10))
        assert (resp.status_code, resp.text) == (413, "read")
        assert (await http.post("/ignore", content=chunks(11, 10))).text == "ignored"
    assert reads == []


async def test_a_limit_without_a_declared_check_acts_only_when_the_body_is_read() -> None:
    app, reads = small_app(Limit(100, on_read=refusal("read")))
    async with client(app) as http:
        assert (await http.post("/ignore", content=b"x" * 101)).text == "ignored"
        resp = await http.post("/echo", content=b"x" * 101)
        assert (resp.status_code, resp.text) == (413, "read")
    assert reads == []


# The vendor apps -------------------------------------------------------------------------------
def test_automation_limits_follow_its_router() -> None:
    assert limits.limit_of("PUT", "/api/dashboards/d1") is limits.LAYERED
    assert limits.limit_of("GET", "/api/users") is limits.LAYERED
    assert limits.limit_of("POST", "/api/devices/webhook").size == 8 * MiB
    assert limits.limit_of("POST", "/api/devices/lab-1/webhook").size == 8 * MiB
    assert limits.limit_of("POST", "/api/extensions/upload/file").size == 512 * MiB
    assert limits.limit_of("POST", "/api/frontend-components").size == 5 * MiB
    assert limits.limit_of("POST", "/api/auth/login") is limits.DEFAULT
    assert limits.limit_of("POST", "/api/no/such/route") is limits.DEFAULT
    assert limits.DEFAULT.on_declared is None and limits.DEFAULT.size == 2 * MiB


async def test_automation_refuses_a_declared_length_before_authentication(
    automation: httpx.AsyncClient,
) -> None:
    origin = {"Origin": "http://console"}
    resp = await automation.put("/api/settings/timezone", content=b" " * (10 * MiB + 1), headers=origin)
    assert resp.status_code == 413
    assert resp.text == "length limit exceeded"
    assert resp.headers["content-type"] == "text/plain; charset=utf-8"
    assert resp.headers["access-control-allow-origin"] == "*"


async def test_automation_refuses_a_streamed_body_as_its_extractor(automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}", "Content-Type": "application/json"}
    resp = await automation.put("/api/settings/timezone", content=chunks(11, MiB), headers=auth)
    assert (resp.status_code, resp.text) == (413, limits.EXTRACTOR_413)
    login = await automation.post("/api/auth/login", content=b" " * (2 * MiB + 1), headers=auth)
    assert (login.status_code, login.text) == (413, limits.EXTRACTOR_413)
    webhook = await automation.post("/api/devices/webhook", content=chunks(9, MiB), headers=auth)
    assert (webhook.status_code, webhook.text) == (413, limits.EXTRACTOR_413)
    within = await automation.post("/api/auth/login", content=b" " * (2 * MiB), headers=auth)
    assert within.status_code == 400  # whitespace only: read, then refused as JSON


@pytest.mark.parametrize("method", ["POST", "PUT"])
async def test_gateway_refuses_as_its_nginx(twin: Twin, method: str) -> None:
    """A declared 1 GiB + 1 is answered with nginx's page; the body is never read."""
    size = gateway_errors.NGINX_LIMIT.size + 1
    scope_headers = [(b"content-length", str(size).encode()), (b"content-type", b"application/json")]
    sent: list[dict] = []

    async def receive() -> dict:
        raise AssertionError("the body was read")

    async def send(message: dict) -> None:
        sent.append(message)

    app = twin.gateway_apps["cam-01"]
    scope = {"type": "http", "method": method, "path": "/api/v1/device-info", "headers": scope_headers}
    await app({**scope, "query_string": b"", "root_path": "", "http_version": "1.1"}, receive, send)
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    assert start["status"] == 413
    assert dict(start["headers"])[b"content-type"] == b"text/html"
    assert body.decode() == gateway_errors.NGINX_413


async def test_a_multipart_upload_past_its_limit_is_413(
    automation: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extension upload's own limit (512 MiB, made small here) holds while the form is parsed."""
    key = ("POST", "/api/extensions/upload/file")
    monkeypatch.setitem(limits.UPLOADS, key, Limit(3 * MiB, on_read=limits.UPLOADS[key].on_read))
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    files = {"file": ("ext.tar.gz", b"\0" * (3 * MiB), "application/gzip")}
    resp = await automation.post("/api/extensions/upload/file", files=files, headers=auth)
    assert (resp.status_code, resp.text) == (413, limits.EXTRACTOR_413)


async def test_a_client_that_leaves_while_its_body_is_read_is_not_a_server_error() -> None:
    app, reads = small_app(Limit(1024, on_read=refusal("read")))
    sent: list[dict] = []
    messages = iter([{"type": "http.request", "body": b"x", "more_body": True}, {"type": "http.disconnect"}])

    async def receive() -> dict:
        return next(messages)

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http", "http_version": "1.1", "method": "POST", "path": "/echo", "raw_path": b"/echo",
        "query_string": b"", "headers": [], "scheme": "http", "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 1), "root_path": "",
    }  # fmt: skip
    await app(scope, receive, send)
    assert reads == [] and sent[0]["status"] == 499
