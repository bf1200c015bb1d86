"""SSE /api/events/stream over a real socket: query authentication, filters, keep-alive in world time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest

from api.automation.routers import events as events_router
from hardware.ports.events import EventKind
from tests.api.automation.test_events_ws import api_key, live_twin
from tests.conftest import admin_token
from tests.sockets import until
from twin.automation.server import automation_of
from twin.sensors import sensors_of
from twin.serve import Twin

pytestmark = pytest.mark.socket


@pytest.fixture
async def live():
    async with live_twin() as value:
        yield value


class SseReader:
    """Reads ``event:``/``data:`` messages and comment lines off a streaming response."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks: AsyncIterator[bytes] = response.aiter_raw()
        self._next: asyncio.Future[bytes] | None = None
        self._buffer = b""

    async def next_block(self, timeout: float = 30.0) -> bytes:
        """The next message or comment; ``TimeoutError`` if none comes (the read stays pending, so
        a timeout does not end the stream)."""
        while b"\n\n" not in self._buffer:
            if self._next is None:
                self._next = asyncio.ensure_future(anext(self._chunks))
            done, _ = await asyncio.wait({self._next}, timeout=timeout)
            if not done:
                raise TimeoutError
            self._buffer += self._next.result()
            self._next = None
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        return block

    async def events(self, count: int) -> list[tuple[str, dict]]:
        got = []
        while len(got) < count:
            block = await self.next_block()
            if block.startswith(b":"):
                continue
            lines = dict(line.split(b": ", 1) for line in block.split(b"\n"))
            got.append((lines[b"event"].decode(), json.loads(lines[b"data"])))
        return got


def stream(http: httpx.AsyncClient, query: str):
    return http.stream("GET", "/api/events/stream" + query)


async def test_token_in_the_query_streams_device_metrics(live) -> None:
    twin, base, token = live
    async with httpx.AsyncClient(base_url=base, timeout=10) as http, stream(http, f"?token={token}") as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        twin.clock.advance(0)
        events = await SseReader(resp).events(6)
    assert {name for name, _ in events} == {"DeviceMetric"}
    name, envelope = events[0]
    assert envelope["type"] == name and set(envelope) == {"id", "type", "timestamp", "source", "data"}
    values = {(e["data"]["device_id"], e["data"]["metric"]): e["data"]["value"] for _, e in events}
    fleet = sensors_of(twin.world).by_device["env_sensor-0003"]
    assert {m: values[("env_sensor-0003", m)] for m in ("temperature", "humidity")} == fleet.values_of(
        "env_sensor-0003", 0.0
    )


async def test_missing_or_bad_credentials_are_a_bare_401(live) -> None:
    _, base, token = live
    async with httpx.AsyncClient(base_url=base) as http:
        for query in ("", "?token=", "?token=not-a-jwt", "?api_key=nmk_nope", "?token=nmk_nope", "?x=1"):
            resp = await http.get("/api/events/stream" + query)
            assert resp.status_code == 401 and resp.content == b"", query
        # The query is the only way in: a header is not read.
        header_only = await http.get("/api/events/stream", headers={"Authorization": f"Bearer {token}"})
        assert header_only.status_code == 401 and header_only.content == b""


async def test_api_key_in_the_query_and_scope(live) -> None:
    twin, base, token = live
    good = await api_key(base, token, ["events:read"])
    scoped_out = await api_key(base, token, ["devices"])
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        refused = await http.get(f"/api/events/stream?api_key={scoped_out}")
        assert refused.status_code == 401 and refused.content == b""
        async with stream(http, f"?api_key={good}") as resp:
            assert resp.status_code == 200
            twin.clock.advance(0)
            assert len(await SseReader(resp).events(6)) == 6


async def test_event_type_and_category_filters(live) -> None:
    twin, base, token = live
    async with (
        httpx.AsyncClient(base_url=base, timeout=10) as http,
        stream(http, f"?token={token}&event_type=DeviceCommandResult&event_type=DeviceDiscovered") as typed,
        stream(http, f"?token={token}&category=device") as device,
        stream(http, f"?token={token}&category=alert") as alert,
    ):
        twin.clock.advance(0)
        twin.automation.devices.send_command("env_sensor-0001", "reboot", {})
        await twin_webhook(twin, "new-field-device")
        got = await SseReader(typed).events(2)
        assert [name for name, _ in got] == ["DeviceCommandResult", "DeviceDiscovered"]
        assert got[1][1]["data"]["device_id"] == "new-field-device"
        device_events = await SseReader(device).events(8)
        # category=device: metrics and command results, not discoveries (as the server has it)
        assert {name for name, _ in device_events} == {"DeviceMetric", "DeviceCommandResult"}
        assert device_events[6][1]["id"] == got[0][1]["id"]
        with pytest.raises(TimeoutError):
            await SseReader(alert).next_block(timeout=0.3)


async def twin_webhook(twin: Twin, device_id: str) -> None:
    twin.automation.ingest.webhook(device_id, {"temperature": 20.0})


async def test_keepalive_after_30_s_of_world_time_without_events(live) -> None:
    twin, base, token = live
    client = httpx.AsyncClient(base_url=base, timeout=10)
    async with client as http, stream(http, f"?token={token}&category=rule") as resp:
        reader = SseReader(resp)
        await asyncio.sleep(0)  # nothing is due before world time moves
        twin.clock.advance(29)
        with pytest.raises(TimeoutError):
            await reader.next_block(timeout=0.3)
        twin.clock.advance(1)
        assert await reader.next_block() == b":keepalive"
        twin.clock.advance(30)
        assert await reader.next_block() == b":keepalive"


async def test_disconnecting_releases_the_subscription_and_drops_are_counted(live) -> None:
    twin, base, token = live
    bus = twin.world.bus
    before = len(bus._subs)
    async with httpx.AsyncClient(base_url=base, timeout=10) as http, stream(http, f"?token={token}") as resp:
        assert resp.status_code == 200
        assert len(bus._subs) == before + 1
    await until(lambda: len(bus._subs) == before)
    # A subscriber that cannot keep up loses the oldest events, counted on the bus (/metrics).
    sub = twin.automation.bus.subscribe(frozenset({EventKind.DEVICE_TELEMETRY}), maxlen=2)
    twin.clock.advance(0)
    assert sub.dropped == 1 and bus.dropped >= 1
    async with httpx.AsyncClient(base_url=base) as http:
        metrics = (await http.get("/api/metrics")).text
    assert f"event_bus_events_dropped_total {bus.dropped}" in metrics
    sub.close()


async def test_posted_events_are_custom_events_on_the_stream(live) -> None:
    _, base, token = live
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        httpx.AsyncClient(base_url=base, timeout=10) as http,
        stream(http, f"?token={token}") as everything,
        stream(http, f"?token={token}&category=device") as device,
    ):
        posted = await http.post(
            "/api/events", json={"event_type": "door_opened", "data": {"door": 3}}, headers=auth
        )
        assert posted.status_code == 200
        assert posted.json() == {"success": True, "event_type": "door_opened", "source": "api"}
        named = await http.post(
            "/api/events", json={"event_type": "x", "data": [1], "source": "line-2"}, headers=auth
        )
        assert named.json()["source"] == "line-2"
        (name, first), (_, second) = await SseReader(everything).events(2)
        with pytest.raises(TimeoutError):
            await SseReader(device).next_block(timeout=0.3)  # Custom is in no category
    assert name == "Custom" and first["type"] == "Custom" and first["source"] == "api"
    assert first["data"] == {"custom_type": "door_opened", "data": {"door": 3}}
    assert second["source"] == "line-2" and second["data"] == {"custom_type": "x", "data": [1]}


async def test_post_events_failure_paths(twin: Twin, automation: httpx.AsyncClient) -> None:
    token = await admin_token(automation)
    auth = {"Authorization": f"Bearer {token}"}
    unauthenticated = await automation.post("/api/events", json={"event_type": "x", "data": 1})
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"]["code"] == "UNAUTHORIZED"
    bad_token = await automation.post(
        "/api/events", json={"event_type": "x", "data": 1}, headers={"Authorization": "Bearer nope"}
    )
    assert bad_token.status_code == 401
    for body in (
        {"data": 1},
        {"event_type": "", "data": 1},
        {"event_type": 5, "data": 1},
        {"event_type": "x" * 257, "data": 1},
        {"event_type": "x"},
        {"event_type": "x", "data": 1, "source": 7},
        [1, 2],
    ):
        resp = await automation.post("/api/events", json=body, headers=auth)
        assert resp.status_code == 422 and resp.json()["error"]["code"] == "VALIDATION_ERROR", body
    not_json = await automation.post(
        "/api/events", content=b"{", headers=auth | {"Content-Type": "application/json"}
    )
    assert not_json.status_code == 400 and not_json.json()["success"] is False
    too_big = await automation.post(
        "/api/events", json={"event_type": "x", "data": "a" * (1 << 20)}, headers=auth
    )
    assert too_big.status_code == 400 and too_big.json()["error"]["code"] == "BAD_REQUEST"
    read_only = {"X-API-Key": automation_of(twin.world).api_keys.create("ro", ["events:read"])[0]}
    refused = await automation.post("/api/events", json={"event_type": "x", "data": 1}, headers=read_only)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "FORBIDDEN"


async def test_a_connection_that_falls_behind_loses_the_oldest_and_says_so(
    live, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    twin, base, token = live
    monkeypatch.setattr(events_router, "SUBSCRIPTION_QUEUE", 2)
    dropped_before = twin.world.bus.dropped
    async with httpx.AsyncClient(base_url=base, timeout=10) as http, stream(http, f"?token={token}") as resp:
        twin.clock.advance(0)  # three sensors' samples land at once in a queue of two
        got = await SseReader(resp).events(4)
        assert {e["data"]["device_id"] for _, e in got} == {"env_sensor-0002", "env_sensor-0003"}
    assert twin.world.bus.dropped == dropped_before + 1
    assert "events sse: connection falling behind, 1 events dropped so far" in caplog.text
