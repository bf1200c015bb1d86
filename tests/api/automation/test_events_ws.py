"""WS /api/events/ws over a real socket: authentication, batching, filters, heartbeat in world time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator

import httpx
import pytest
import uvicorn
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from hardware.ports.events import EventKind
from tests.sockets import socket_settings, until
from twin.sensors import sensors_of
from twin.serve import Twin, build

pytestmark = pytest.mark.socket
OPERATOR_KEY = "nmk_" + "ab" * 16
"""The operator's key (``NEOMIND_API_KEY``): only an API key may create API keys."""


@contextlib.asynccontextmanager
async def serving(twin: Twin) -> AsyncIterator[str]:
    """The twin's automation app alone on a free loopback port; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        twin.automation_app, log_level="warning", lifespan="off", ws="websockets-sansio",
        ws_per_message_deflate=False, timeout_graceful_shutdown=1,
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "server failed to start"
        await asyncio.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@contextlib.asynccontextmanager
async def live_twin(**settings) -> AsyncIterator[tuple[Twin, str, str]]:
    """(twin, base URL, admin JWT) with the test world in step mode at sim time 0."""
    twin = build(socket_settings(api_key=OPERATOR_KEY, **settings))
    async with serving(twin) as base:
        async with httpx.AsyncClient(base_url=base) as http:
            resp = await http.post(
                "/api/setup/initialize", json={"username": "admin", "password": "secret123"}
            )
            token = resp.json()["token"]
        yield twin, base, token
    twin.world.store.close()


@pytest.fixture
async def live() -> AsyncIterator[tuple[Twin, str, str]]:
    async with live_twin() as value:
        yield value


async def api_key(base: str, token: str, permissions: list[str] | None = None) -> str:
    async with httpx.AsyncClient(base_url=base) as http:
        body = {"name": "realtime"} | ({"permissions": permissions} if permissions is not None else {})
        resp = await http.post("/api/auth/keys", json=body, headers={"X-API-Key": OPERATOR_KEY})
        assert resp.status_code == 200, resp.text
        return resp.json()["api_key"]


def ws_url(base: str, query: str = "") -> str:
    return base.replace("http://", "ws://") + "/api/events/ws" + query


async def recv_json(ws: ClientConnection, timeout: float = 30.0) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), timeout))


async def open_authenticated(base: str, token: str, query: str = "") -> ClientConnection:
    ws = await connect(ws_url(base, query))
    await ws.send(json.dumps({"type": "Auth", "token": token}))
    assert await recv_json(ws) == {"type": "Authenticated", "message": "Authentication successful"}
    ping = await recv_json(ws)
    assert ping["type"] == "ping" and ping["timestamp"] == 1767225600
    return ws


async def events_until(ws: ClientConnection, count: int) -> list[dict]:
    """Envelopes from batches (and bare immediate envelopes) until ``count`` have arrived."""
    got: list[dict] = []
    while len(got) < count:
        frame = await recv_json(ws)
        if frame.get("batch") is True:
            assert 1 <= len(frame["events"]) <= 10
            got.extend(frame["events"])
        elif frame.get("type") != "ping":
            got.append(frame)
    return got


async def test_auth_frame_then_batched_device_metrics(live) -> None:
    twin, base, token = live
    ws = await open_authenticated(base, token)
    try:
        twin.clock.advance(0)  # the t=0 sample: 3 sensors x 2 metrics
        twin.clock.advance(10)  # and the t=10 one
        events = await events_until(ws, 12)
    finally:
        await ws.close()
    assert {e["type"] for e in events} == {"DeviceMetric"}
    first = events[0]
    assert set(first) == {"id", "type", "timestamp", "source", "data"}
    assert set(first["data"]) == {"device_id", "metric", "value", "timestamp", "quality"}
    assert first["source"] == f"adapter:mqtt:{first['data']['device_id']}"
    assert [e["timestamp"] for e in events] == [1767225600] * 6 + [1767225610] * 6
    assert len({e["id"] for e in events}) == 12
    current = sensors_of(twin.world).by_device["env_sensor-0001"].values_of("env_sensor-0001", 10.0)
    last = {
        e["data"]["metric"]: e["data"]["value"]
        for e in events[6:]
        if e["data"]["device_id"] == "env_sensor-0001"
    }
    assert last == current


async def test_api_key_in_the_query_and_in_the_auth_frame(live) -> None:
    twin, base, token = live
    key = await api_key(base, token)
    async with connect(ws_url(base, f"?api_key={key}")) as ws:
        assert (await recv_json(ws)) == {"type": "Authenticated", "message": "Authentication successful"}
        assert (await recv_json(ws))["type"] == "ping"
        twin.clock.advance(0)
        assert len(await events_until(ws, 6)) == 6
    async with connect(ws_url(base)) as ws:
        await ws.send(json.dumps({"type": "Auth", "api_key": key}))
        assert (await recv_json(ws))["type"] == "Authenticated"


BAD_FIRST_FRAMES = [
    ({"type": "Auth", "token": "not-a-jwt"}, "Invalid or expired token"),
    ({"type": "Auth", "api_key": "nmk_wrong"}, "Invalid or expired token"),
    ({"type": "Auth"}, "Authentication required"),
    ({"type": "Auth", "token": 42}, "Authentication required"),
    ({"type": "Hello"}, "Authentication required"),
    ("not json", "Authentication required"),
    (b"\x00binary", "Authentication required"),
]


async def test_bad_first_frames_are_refused_and_closed(live) -> None:
    _, base, _ = live
    for first_frame, message in BAD_FIRST_FRAMES:
        async with connect(ws_url(base)) as ws:
            await ws.send(first_frame if isinstance(first_frame, str | bytes) else json.dumps(first_frame))
            assert await recv_json(ws) == {"type": "Error", "message": message}, first_frame
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)


async def test_token_in_the_query_is_ignored_and_a_bad_api_key_is_refused(live) -> None:
    _, base, token = live
    async with connect(ws_url(base, f"?token={token}")) as ws:
        await ws.send(json.dumps({"type": "Hello"}))
        assert (await recv_json(ws))["message"] == "Authentication required"
    async with connect(ws_url(base, "?api_key=nmk_nope")) as ws:
        assert await recv_json(ws) == {"type": "Error", "message": "Invalid API key"}
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 30)


async def test_a_key_without_events_scope_is_refused(live) -> None:
    _, base, token = live
    key = await api_key(base, token, ["devices:read"])
    async with connect(ws_url(base, f"?api_key={key}")) as ws:
        assert (await recv_json(ws))["type"] == "Error"


async def test_category_and_event_type_filters(live) -> None:
    twin, base, token = live
    by_type = await open_authenticated(base, token, "?event_type=DeviceCommandResult")
    by_category = await open_authenticated(base, token, "?category=rule")
    everything = await open_authenticated(base, token, "?category=all")
    try:
        twin.clock.advance(0)
        twin.automation.devices.send_command("env_sensor-0002", "reboot", {"delay": 1})
        got = await events_until(by_type, 1)
        assert [e["type"] for e in got] == ["DeviceCommandResult"]
        data = got[0]["data"]
        assert data["type"] == "DeviceCommandResult" and data["device_id"] == "env_sensor-0002"
        assert data["command"] == "reboot" and data["success"] is True
        all_events = await events_until(everything, 7)
        assert [e["type"] for e in all_events][-1] == "DeviceCommandResult"
        assert got[0]["id"] == all_events[-1]["id"]  # the same change has the same id everywhere
        with pytest.raises(TimeoutError):
            await recv_json(by_category, timeout=0.3)
    finally:
        for ws in (by_type, by_category, everything):
            await ws.close()


async def test_partial_batches_are_flushed_and_immediate_types_come_bare(live) -> None:
    twin, base, token = live
    ws = await open_authenticated(base, token, "?category=all")
    try:
        twin.world.emit(
            EventKind.DEVICE_METRIC,
            "field-1",
            metric="t",
            value={"a": 1},
            timestamp=1767225601.0,
            quality=0.5,
        )
        frame = await recv_json(ws)  # one event: a batch of one, flushed by the timer
        assert frame["batch"] is True and len(frame["events"]) == 1
        data = frame["events"][0]["data"]
        assert data == {
            "device_id": "field-1",
            "metric": "t",
            "value": '{"a":1}',
            "timestamp": 1767225601,
            "quality": 0.5,
        }
        if "AGENT_EXECUTION_COMPLETED" in EventKind.__members__:
            twin.world.emit(
                EventKind["AGENT_EXECUTION_COMPLETED"], "agent-1", agent_id="agent-1", success=True
            )
            bare = await recv_json(ws)
            assert bare["type"] == "AgentExecutionCompleted" and "batch" not in bare
            assert bare["data"]["type"] == "AgentExecutionCompleted" and bare["data"]["agent_id"] == "agent-1"
    finally:
        await ws.close()


async def test_heartbeat_pings_in_world_time_and_times_out_without_pongs(live) -> None:
    twin, base, token = live
    answering = await open_authenticated(base, token, "?category=rule")
    silent = await open_authenticated(base, token, "?category=rule")
    try:
        for step in (1, 2, 3):
            twin.clock.advance(30)
            ping = await recv_json(answering)
            assert ping == {"type": "ping", "timestamp": 1767225600 + 30 * step}
            await answering.send(json.dumps({"type": "pong"}))
            if step < 3:
                assert (await recv_json(silent))["type"] == "ping"
        # 90 s without a pong: more than 60 s at the third beat
        assert await recv_json(silent) == {"type": "Error", "message": "Heartbeat timeout"}
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(silent.recv(), 30)
        twin.clock.advance(30)
        assert (await recv_json(answering))["type"] == "ping"
    finally:
        await answering.close()
        await silent.close()


async def test_closing_the_socket_releases_the_subscription(live) -> None:
    twin, base, token = live
    before = len(twin.world.bus._subs)
    ws = await open_authenticated(base, token)
    assert len(twin.world.bus._subs) == before + 1
    await ws.close()
    await until(lambda: len(twin.world.bus._subs) == before)


async def test_realtime_paths_are_not_rate_limited(live) -> None:
    twin, base, token = live
    twin.automation_app.state.limiter.storm(1, 600)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        rest = [(await http.get("/api/devices", headers=auth)).status_code for _ in range(2)]
        assert rest == [200, 429]  # the storm is on for REST...
        for _ in range(3):  # ...but not for WS and SSE
            ws = await open_authenticated(base, token)
            await ws.close()
            async with http.stream("GET", f"/api/events/stream?token={token}") as sse:
                assert sse.status_code == 200


async def test_release_0917_also_serves_the_earlier_paths() -> None:
    async with live_twin(release="0.9.17") as (twin, base, token):
        ws = await connect(base.replace("http://", "ws://") + "/api/events")
        await ws.send(json.dumps({"type": "Auth", "token": token}))
        assert (await recv_json(ws))["type"] == "Authenticated"
        async with httpx.AsyncClient(base_url=base, timeout=10) as http:
            async with http.stream("GET", f"/api/events?token={token}") as sse:
                assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
                twin.clock.advance(0)
                ws_events = await events_until(ws, 6)
                chunk = b""
                async for part in sse.aiter_raw():
                    chunk += part
                    if chunk.count(b"event: DeviceMetric") == 6:
                        break
            await ws.close()
            assert {e["type"] for e in ws_events} == {"DeviceMetric"}
            assert (await http.get("/api/events?token=bad")).status_code == 401


async def test_release_0924_does_not_serve_the_earlier_paths(live) -> None:
    _, base, token = live
    with pytest.raises(InvalidStatus):
        async with connect(base.replace("http://", "ws://") + "/api/events"):
            pass
    async with httpx.AsyncClient(base_url=base) as http:
        assert (await http.get(f"/api/events?token={token}")).status_code in (404, 405)
