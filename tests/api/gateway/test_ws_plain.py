"""A plain HTTP GET (no upgrade) on the gateway's eight WebSocket routes: the device's auth middleware
answers first (401/2000 without a token, not the 404 of an unknown route), then the handler's own
checks before the upgrade (the H.264 stream id), then gorilla/websocket's 400 "Bad Request"."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import gateway_token

WS_PATHS = (
    "/api/v1/events/stream",
    "/api/v1/h264/main",
    "/api/v1/containers/abc/logs/ws",
    "/api/v1/containers/abc/exec/ws",
    "/api/v1/terminal/ws",
    "/api/v1/logs/stream/ws",
    "/api/v1/audio/stream",
    "/api/v1/audio/talk",
)


@pytest.mark.parametrize("path", WS_PATHS)
async def test_plain_get_without_token_is_401(gateway: httpx.AsyncClient, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}):
        resp = await gateway.get(path, headers=headers)
        assert resp.status_code == 401 and resp.json()["code"] == 2000, (path, resp.text)


@pytest.mark.parametrize("path", WS_PATHS)
async def test_plain_get_with_token_is_refused_by_the_upgrader(gateway: httpx.AsyncClient, path: str) -> None:
    resp = await gateway.get(path, headers={"Authorization": await gateway_token(gateway)})
    assert resp.status_code == 400 and resp.text == "Bad Request\n"
    assert resp.headers["sec-websocket-version"] == "13"
    assert resp.headers["content-type"].startswith("text/plain")


async def test_h264_checks_come_before_the_upgrade(gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway)}
    unknown = await gateway.get("/api/v1/h264/nope", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["code"] == 4000
    assert unknown.json()["error"]["detail"] == "Stream not found: nope"
    dotted = await gateway.get("/api/v1/h264/a..b", headers=auth)
    assert dotted.status_code == 400 and dotted.json()["code"] == 1001
    other = await gateway.post("/api/v1/terminal/ws", headers=auth)  # Gin's NoRoute: no method 405
    assert other.status_code == 404 and other.json() == {"code": 404, "message": "Not found"}
