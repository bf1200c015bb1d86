"""Containers and images of the app platform: REST in process; log streams, the exec shell and
the event-bus relay over real sockets (``?token=`` on the WebSocket, refusals before the upgrade)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.api.gateway.test_apps import install, while_time_runs
from tests.conftest import gateway_token
from tests.sockets import socket_settings, until
from twin.camera.wing import cameras_of
from twin.serve import Twin, build, start, stop

CID = "aipc-people-counter"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def running_app(gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]) -> None:
    await install(gateway, twin, auth)
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    assert resp.status_code == 200, resp.text


async def test_list_detail_stats_logs(gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]) -> None:
    await running_app(gateway, twin, auth)
    twin.clock.advance(12)
    page = (await gateway.get("/api/v1/containers", headers=auth)).json()["data"]
    assert page["total"] == 1 and page["page"] == 1 and page["page_size"] == 20
    assert page["status_count"] == {"all": 1, "running": 1, "stopped": 0, "error": 0}
    item = page["containers"][0]
    assert item["id"] == item["name"] == CID and item["status"] == item["state"] == "running"
    assert item["image"] == "people-counter:1.2.0" and item["created_at"].endswith("Z") and item["pid"] > 0
    assert (await gateway.get("/api/v1/containers", headers=auth, params={"state": "stopped"})).json()[
        "data"
    ]["total"] == 0
    detail = (await gateway.get(f"/api/v1/containers/{CID}", headers=auth)).json()["data"]
    assert detail["container"]["info"]["id"] == CID
    stats = (await gateway.get(f"/api/v1/containers/{CID}/stats", headers=auth)).json()["data"]["stats"]
    assert 0 < stats["memory_usage"] <= stats["memory_limit"] and stats["pids"] > 0
    logs = (await gateway.get(f"/api/v1/containers/{CID}/logs", headers=auth, params={"tail": 2})).json()[
        "data"
    ]
    assert len(logs["logs"]) == 2 and "INFO" in logs["logs"][-1]


async def test_stop_start_restart_remove(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await running_app(gateway, twin, auth)
    resp = await while_time_runs(twin, gateway.post(f"/api/v1/containers/{CID}/stop", headers=auth))
    assert resp.status_code == 200, resp.text
    app = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert app["state"] == "stopped"
    busy = await while_time_runs(twin, gateway.post(f"/api/v1/containers/{CID}/restart", headers=auth))
    assert busy.status_code == 200, busy.text
    refused = await gateway.delete(f"/api/v1/containers/{CID}", headers=auth)
    assert refused.status_code == 400 and refused.json()["code"] == 1001
    await while_time_runs(twin, gateway.post(f"/api/v1/containers/{CID}/stop", headers=auth))
    assert (await gateway.delete(f"/api/v1/containers/{CID}", headers=auth)).status_code == 200
    assert (await gateway.get("/api/v1/containers", headers=auth)).json()["data"]["total"] == 0


async def test_images_and_refused_pull(gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]) -> None:
    await running_app(gateway, twin, auth)
    images = (await gateway.get("/api/v1/images", headers=auth)).json()["data"]["images"]
    assert images[0]["name"] == "people-counter:1.2.0" and images[0]["tags"] == ["people-counter:1.2.0"]
    assert images[0]["id"].startswith("sha256:") and images[0]["size"] > 0
    in_use = await gateway.delete("/api/v1/images/people-counter:1.2.0", headers=auth)
    assert in_use.status_code == 500 and in_use.json()["code"] == 4003
    pull = await gateway.post("/api/v1/images/pull", headers=auth, json={"image": "nginx:latest"})
    assert pull.status_code == 500 and pull.json()["code"] == 4003
    assert "disabled" in pull.json()["error"]["detail"]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("GET", "/api/v1/containers/ghost", {}, 404, 4000),
        ("GET", "/api/v1/containers/ghost/stats", {}, 404, 4000),
        ("GET", "/api/v1/containers/ghost/logs", {}, 404, 4000),
        ("POST", "/api/v1/containers/ghost/start", {}, 404, 4000),
        ("POST", "/api/v1/containers/ghost/stop", {}, 404, 4000),
        ("DELETE", "/api/v1/containers/ghost", {}, 404, 4000),
        ("GET", "/api/v1/containers", {"params": {"page": 0}}, 400, 1004),
        ("GET", "/api/v1/containers", {"params": {"page_size": "x"}}, 400, 1001),
        ("GET", "/api/v1/containers/ghost/logs", {"params": {"tail": "x"}}, 400, 1001),
        ("DELETE", "/api/v1/images/ghost:1", {}, 404, 4000),
        ("POST", "/api/v1/images/pull", {"json": {}}, 400, 1001),
        ("POST", "/api/v1/images/pull", {"content": b"{"}, 400, 1001),
    ],
)
async def test_failures(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    method: str,
    path: str,
    kwargs: dict,
    status: int,
    code: int,
) -> None:
    resp = await gateway.request(method, path, headers=auth, **kwargs)
    assert resp.status_code == status, resp.text
    assert resp.json()["code"] == code


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/containers"),
        ("GET", "/api/v1/containers/x"),
        ("GET", "/api/v1/containers/x/logs/stream"),
        ("POST", "/api/v1/containers/x/restart"),
        ("GET", "/api/v1/images"),
        ("POST", "/api/v1/images/pull"),
        ("DELETE", "/api/v1/images/x"),
        ("GET", "/api/v1/events/topics"),
        ("POST", "/api/v1/events/publish"),
    ],
)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


# Over real sockets --------------------------------------------------------------------------------
@pytest.fixture
async def live(tmp_path: Path):
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient(base_url=base) as http:
        token = await gateway_token(http)
        try:
            yield twin, http, {"Authorization": token}, base.replace("http://", "ws://")
        finally:
            await stop(running)


@pytest.mark.socket
async def test_exec_shell_and_log_streams(live) -> None:
    twin, http, auth, ws = live
    await running_app(http, twin, auth)
    raw = auth["Authorization"].removeprefix("Bearer ")
    async with connect(f"{ws}/api/v1/containers/{CID}/exec/ws?token={raw}&command=/bin/sh") as shell:
        assert (await shell.recv()) == b"/ # "
        await shell.send(json.dumps({"type": "resize", "cols": 100, "rows": 30}))
        await shell.send(b"hostname\n")
        assert (await shell.recv()).decode().startswith(CID)
        await shell.send(b"rm -rf /\n")
        assert b"not found" in await shell.recv()
        await shell.send(b"exit\n")
        await shell.recv()
        with pytest.raises(ConnectionClosed):
            await shell.recv()
    async with connect(f"{ws}/api/v1/containers/{CID}/logs/ws?token={raw}&tail=1") as logs:
        assert " INFO " in await logs.recv()  # the backlog (tail=1) first
        twin.clock.advance(5)
        line = await asyncio.wait_for(logs.recv(), 30)
        assert "INFO" in line


@pytest.mark.socket
async def test_websocket_refusals_before_the_upgrade(live) -> None:
    _, _, auth, ws = live
    for path in (f"/api/v1/containers/{CID}/exec/ws", "/api/v1/events/stream"):
        with pytest.raises(InvalidStatus) as err:
            async with connect(f"{ws}{path}"):
                pass
        assert err.value.response.status_code == 401
        assert json.loads(err.value.response.body)["code"] == 2000
    raw = auth["Authorization"].removeprefix("Bearer ")
    with pytest.raises(InvalidStatus) as err:
        async with connect(f"{ws}/api/v1/containers/ghost/exec/ws?token={raw}"):
            pass
    assert err.value.response.status_code == 404


@pytest.mark.socket
async def test_event_stream_relays_everything_and_drops_clients_when_the_bus_stops(live) -> None:
    twin, http, auth, ws = live
    raw = auth["Authorization"].removeprefix("Bearer ")
    camera = cameras_of(twin.world)["cam-01"]
    async with connect(f"{ws}/api/v1/events/stream?token={raw}&topic=ignored") as stream:
        await until(lambda: camera.events.clients)
        body = {"topic": "app/people-counter/alarm", "payload": {"zone": 2}}
        published = await http.post("/api/v1/events/publish", headers=auth, json=body)
        event_id = published.json()["data"]["event_id"]
        frame = json.loads(await asyncio.wait_for(stream.recv(), 30))
        assert frame["topic"] == "app/people-counter/alarm" and frame["event_id"] == event_id
        assert json.loads(frame["payload"]) == {"zone": 2}  # a JSON-encoded string, parsed again
        assert frame["payload_type"] == "json" and frame["source"] == "" and frame["timestamp_ns"] > 0
        camera.events.stop()
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(stream.recv(), 30)
    with pytest.raises(InvalidStatus) as err:  # while the bus is down a reconnect is refused
        async with connect(f"{ws}/api/v1/events/stream?token={raw}"):
            pass
    assert err.value.response.status_code == 503
    camera.events.start()
    async with connect(f"{ws}/api/v1/events/stream?token={raw}"):  # and works once it is back
        await until(lambda: camera.events.clients)
