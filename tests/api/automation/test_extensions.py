"""Extensions over HTTP (in-process) and the ``/extensions/:id/stream`` session over a real socket:
binary ``push_output`` frames when asked and confirmed, text frames with base64 otherwise."""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from hardware.ports.events import EventKind
from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from tests.sockets import socket_settings
from twin.automation.server import automation_of
from twin.camera.video.scene import scene_of
from twin.serve import Twin, build, start, stop
from twin.settings import Settings

JPEG = b"\xff\xd8"


# HTTP ------------------------------------------------------------------------------------------
async def test_installed_extensions_are_public_and_shaped_like_the_vendor(
    automation: httpx.AsyncClient,
) -> None:
    resp = await automation.get("/api/extensions")
    rows = resp.json()["data"]
    assert resp.status_code == 200 and [r["id"] for r in rows] == ["weather-forecast", "camera-stream"]
    assert {
        "id",
        "name",
        "version",
        "state",
        "file_path",
        "loaded_at",
        "health_status",
        "enabled",
        "commands",
    } <= set(rows[0])
    assert rows[0]["state"] == "Running" and rows[0]["file_path"].startswith("/var/lib/neomind/extensions/")
    assert rows[0]["commands"][0]["id"] == "get_current"
    assert (await automation.get("/api/extensions/weather-forecast")).status_code == 200  # the read side
    assert_error(await automation.delete("/api/extensions/weather-forecast"), 401, "UNAUTHORIZED")


async def test_detail_health_commands_components_assets(automation: httpx.AsyncClient, auth: dict) -> None:
    detail = (await automation.get("/api/extensions/camera-stream", headers=auth)).json()["data"]
    assert detail["extension_type"] == "video"
    health = (await automation.get("/api/extensions/camera-stream/health", headers=auth)).json()["data"]
    assert health["healthy"] is True and health["active_sessions"] == 0
    commands = (await automation.get("/api/extensions/weather-forecast/commands", headers=auth)).json()[
        "data"
    ]
    assert [c["id"] for c in commands["commands"]] == ["get_current", "get_forecast"]
    comps = (await automation.get("/api/extensions/camera-stream/components", headers=auth)).json()["data"]
    assert comps["extension_name"] == "Camera Stream" and comps["components"][0]["type"] == "live-view"
    every = (await automation.get("/api/extensions/dashboard-components", headers=auth)).json()["data"]
    assert {c["extension_id"] for c in every} == {"weather-forecast", "camera-stream"}
    live = next(c for c in every if c["type"] == "live-view")
    assert live["bundle_url"] == "/api/extensions/camera-stream/assets/live-view.js"
    assert live["data_binding"]["required_fields"] == [] and live["size_constraints"]["max_w"] == 0
    bundle = await automation.get(live["bundle_url"])
    assert bundle.status_code == 200
    asset = await automation.get("/api/extensions/camera-stream/assets/live-view.js", headers=auth)
    assert asset.status_code == 200 and asset.headers["content-type"].startswith("application/javascript")
    for bad in ("nope.js", "../../../etc/passwd", "%2Fetc%2Fpasswd"):
        resp = await automation.get(f"/api/extensions/camera-stream/assets/{bad}", headers=auth)
        assert resp.status_code == 404, bad
    cap = (await automation.get("/api/extensions/camera-stream/stream/capability", headers=auth)).json()[
        "data"
    ]
    assert cap["capability"]["mode"] == "push" and cap["capability"]["supported_data_types"] == ["image/jpeg"]
    types = (await automation.get("/api/extensions/types", headers=auth)).json()["data"]["types"]
    assert "video" in types


async def test_commands_are_deterministic_and_refused_like_the_vendor(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    url = "/api/extensions/weather-forecast/command"
    body = {"command": "get_current", "args": {"city": "Shenzhen"}}
    events = twin.world.bus.subscribe({EventKind.EXTENSION_COMMAND_COMPLETED})
    first = (await automation.post(url, json=body, headers=auth)).json()["data"]
    assert events.get_nowait().data["command"] == "get_current"
    again = (await automation.post(url, json=body, headers=auth)).json()["data"]
    assert first["success"] is True and first["output"] == again["output"]
    assert first["output"]["city"] == "Shenzhen" and -50 < first["output"]["temperature_c"] < 60
    forecast = await automation.post(
        url, json={"command": "get_forecast", "args": {"city": "Oslo", "hours": 3}}, headers=auth
    )
    assert len(forecast.json()["data"]["output"]["hourly"]) == 3
    snap = await automation.post(
        "/api/extensions/camera-stream/command", json={"command": "snapshot"}, headers=auth
    )
    truth = scene_of(twin.world, "cam-01").boxes(twin.world.env.now)  # the camera's ground truth
    assert [o["label"] for o in snap.json()["data"]["output"]["objects"]] == [b.label for b in truth]

    assert_error(
        await automation.post(url, json={"command": "get_current", "args": {}}, headers=auth),
        400,
        "BAD_REQUEST",
    )
    bad_hours = {"command": "get_forecast", "args": {"city": "Oslo", "hours": 99}}
    assert_error(await automation.post(url, json=bad_hours, headers=auth), 400, "BAD_REQUEST")
    assert_error(await automation.post(url, json={"command": "launch"}, headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.post(url, json={"args": {}}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(
        await automation.post(url, json={"command": "get_current", "args": []}, headers=auth),
        422,
        "VALIDATION_ERROR",
    )
    resp = await automation.post("/api/extensions/nope/command", json={"command": "x"}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND")
    assert_error(await automation.post(url, json=body), 401, "UNAUTHORIZED")


async def test_sync_scans_the_directory_and_installs_synchronously(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    automation_of(twin.world).extensions.place_manifest("broken.json", {"id": "broken"})
    automation_of(twin.world).extensions.place_manifest(
        "echo.json",
        {
            "id": "echo",
            "name": "Echo",
            "version": "1.0.0",
            "commands": [{"id": "say", "response": {"ok": 1}}],
        },
    )
    report = (await automation.post("/api/extensions/sync", headers=auth)).json()["data"]
    assert report["scanned"] == 5
    assert report["installed"] == ["echo", "energy-meter"]
    assert report["skipped"] == ["camera-stream", "weather-forecast"]
    assert report["failed"] == [{"file": "broken.json", "reason": "missing name"}]
    ids = [r["id"] for r in (await automation.get("/api/extensions")).json()["data"]]
    assert ids == ["weather-forecast", "camera-stream", "echo", "energy-meter"]
    said = await automation.post(
        "/api/extensions/echo/command", json={"command": "say", "args": {"x": 2}}, headers=auth
    )
    assert said.json()["data"]["output"] == {"ok": 1, "args": {"x": 2}}
    again = (await automation.post("/api/extensions/sync", headers=auth)).json()["data"]
    assert again["installed"] == [] and len(again["skipped"]) == 4
    assert_error(await automation.post("/api/extensions/sync"), 401, "UNAUTHORIZED")


async def test_release_0917_answered_install_failures_with_200(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        reg = await client.post("/api/auth/register", json={"username": "first", "password": "secret1"})
        auth = {"Authorization": f"Bearer {reg.json()['token']}"}
        resp = await client.post("/api/frontend-components/market/install", json={"id": "nope"}, headers=auth)
        assert resp.status_code == 200 and resp.json()["success"] is False
        assert (await client.get("/api/extensions/camera-stream")).status_code == 200  # public then
        discovered = (await client.post("/api/extensions/discover", headers=auth)).json()["data"]
        assert discovered["installed"] == ["energy-meter"]
        url = "/api/extensions/weather-forecast/commands/get_current"
        resp = await client.post(url, json={"city": "Oslo"}, headers=auth)
        assert resp.json()["data"]["output"]["city"] == "Oslo"
        assert (await client.post(url, json={"city": "Oslo"})).status_code == 401


async def test_enable_disable_and_uninstall(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/extensions/weather-forecast"
    resp = await automation.patch(f"{url}/enabled", json={"enabled": False}, headers=auth)
    assert resp.json()["data"] == {"id": "weather-forecast", "enabled": False, "state": "Stopped"}
    body = {"command": "get_current", "args": {"city": "Oslo"}}
    assert_error(await automation.post(f"{url}/command", json=body, headers=auth), 409, "CONFLICT")
    assert_error(
        await automation.patch(f"{url}/enabled", json={"enabled": "no"}, headers=auth),
        422,
        "VALIDATION_ERROR",
    )
    await automation.patch(f"{url}/enabled", json={"enabled": True}, headers=auth)
    assert (await automation.post(f"{url}/command", json=body, headers=auth)).status_code == 200
    resp = await automation.delete(url, headers=auth)
    assert resp.json()["data"] == {"id": "weather-forecast", "deleted": True}
    assert_error(await automation.get(url, headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.delete(url, headers=auth), 404, "NOT_FOUND")
    sessions = (await automation.get("/api/extensions/camera-stream/stream/sessions", headers=auth)).json()[
        "data"
    ]
    assert sessions == {"extension_id": "camera-stream", "sessions": [], "count": 0}


async def test_administration_routes(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    url = "/api/extensions/weather-forecast"
    body = {"command": "get_current", "args": {"city": "Oslo"}}
    resp = await automation.patch(
        f"{url}/commands/get_current/enabled", json={"enabled": False}, headers=auth
    )
    assert resp.json()["data"] == {"id": "weather-forecast", "command": "get_current", "enabled": False}
    assert_error(await automation.post(f"{url}/command", json=body, headers=auth), 409, "CONFLICT")
    detail = (await automation.get(url, headers=auth)).json()["data"]
    assert detail["disabled_commands"] == ["get_current"] and detail["commands"][0]["disabled"] is True
    await automation.patch(f"{url}/commands/get_current/enabled", json={"enabled": True}, headers=auth)
    invoked = await automation.post(f"{url}/invoke", json=body, headers=auth)
    assert invoked.json()["data"]["output"]["city"] == "Oslo"
    resp = await automation.patch(f"{url}/commands/launch/enabled", json={"enabled": False}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND")

    assert (await automation.post(f"{url}/stop", headers=auth)).json()["data"]["state"] == "Stopped"
    assert (await automation.post(f"{url}/start", headers=auth)).json()["data"]["state"] == "Running"
    twin.clock.advance(30)
    reloaded = (await automation.post(f"{url}/reload", headers=auth)).json()["data"]
    assert reloaded["loaded_at"] == 1767225630

    config = {"units": "metric", "refresh_s": 600}
    resp = await automation.put(f"{url}/config", json={"config": config}, headers=auth)
    assert resp.json()["data"] == {"id": "weather-forecast", "config": config}
    assert (await automation.get(f"{url}/config", headers=auth)).json()["data"]["config"] == config
    assert_error(
        await automation.put(f"{url}/config", json={"config": [1]}, headers=auth), 422, "VALIDATION_ERROR"
    )

    logs = (await automation.get(f"{url}/logs", headers=auth)).json()["data"]
    messages = [line["message"] for line in logs["logs"]]
    assert messages[0].startswith("installed weather-forecast") and "reloaded" in messages
    assert "command get_current disabled" in messages and "configuration updated" in messages
    assert (await automation.delete(f"{url}/logs", headers=auth)).json()["data"]["cleared"] == logs["count"]
    assert (await automation.get(f"{url}/logs", headers=auth)).json()["data"]["count"] == 0

    desc = (await automation.get("/api/extensions/camera-stream/descriptor", headers=auth)).json()["data"]
    assert desc["assets"] == ["live-view.js"] and desc["stream"]["mode"] == "push"
    subs = (await automation.get(f"{url}/event-subscriptions", headers=auth)).json()["data"]
    assert subs == {"extension_id": "weather-forecast", "subscriptions": [], "count": 0}
    caps = (await automation.get("/api/extensions/capabilities", headers=auth)).json()["data"]
    assert [c["extension_id"] for c in caps["capabilities"]] == ["camera-stream"]
    status = (await automation.get("/api/extensions/sync-status", headers=auth)).json()["data"]
    assert status["synced_at"] is None
    await automation.post("/api/extensions/sync", headers=auth)
    status = (await automation.get("/api/extensions/sync-status", headers=auth)).json()["data"]
    assert status["synced_at"] == 1767225630 and status["installed"] == ["energy-meter"]
    for method, path in [("POST", "/api/extensions/nope/reload"), ("GET", "/api/extensions/nope/logs")]:
        assert_error(await automation.request(method, path, headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.post(f"{url}/reload"), 401, "UNAUTHORIZED")


# The stream session over a real socket ----------------------------------------------------------
@dataclasses.dataclass
class Server:
    twin: Twin
    ws: str
    token: str


async def _serve(tmp_path: Path, **overrides) -> AsyncIterator[Server]:
    twin = build(socket_settings(**overrides))
    running = await start(twin, tmp_path)
    base = running.url("automation")
    try:
        async with httpx.AsyncClient(base_url=base) as http:
            token = await admin_token(http) if overrides.get("release") != "0.9.17" else await _register(http)
        yield Server(twin, base.replace("http://", "ws://") + "/api/extensions", token)
    finally:
        await stop(running)


async def _register(http: httpx.AsyncClient) -> str:
    resp = await http.post("/api/auth/register", json={"username": "first", "password": "secret1"})
    return resp.json()["token"]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    async for s in _serve(tmp_path):
        yield s


@pytest.fixture
async def old_server(tmp_path: Path) -> AsyncIterator[Server]:
    async for s in _serve(tmp_path, release="0.9.17"):
        yield s


def parse_binary(frame: bytes) -> tuple[int, int, int, dict, bytes]:
    kind, version, sequence, meta_len = struct.unpack(">BBQI", frame[:14])
    meta = json.loads(frame[14 : 14 + meta_len])
    return kind, version, sequence, meta, frame[14 + meta_len :]


async def open_session(ws, config: dict | None) -> dict:
    await ws.send(json.dumps({"type": "hello"}))
    capability = json.loads(await ws.recv())
    assert capability["type"] == "capability" and capability["capability"]["mode"] == "push"
    await ws.send(json.dumps({"type": "init", "config": config} if config is not None else {"type": "init"}))
    created = json.loads(await ws.recv())
    assert created["type"] == "session_created" and created["session_id"]
    return created


@pytest.mark.socket
async def test_a_client_asking_for_binary_gets_binary_push_output_frames(server: Server) -> None:
    async with connect(f"{server.ws}/camera-stream/stream?token={server.token}") as ws:
        created = await open_session(ws, {"binary": True})
        assert created["binary"] is True
        async with httpx.AsyncClient() as http:
            url = server.ws.replace("ws://", "http://") + "/camera-stream/stream/sessions"
            listed = await http.get(url, headers={"Authorization": f"Bearer {server.token}"})
        assert listed.json()["data"]["sessions"][0]["session_id"] == created["session_id"]
        server.twin.clock.advance(1)
        frames = [await ws.recv() for _ in range(5)]
        assert all(isinstance(f, bytes) for f in frames)
        parsed = [parse_binary(f) for f in frames]
        assert [(p[0], p[1]) for p in parsed] == [(1, 1)] * 5
        assert [p[2] for p in parsed] == [0, 1, 2, 3, 4]
        meta = parsed[0][3]
        assert meta["type"] == "push_output" and meta["session_id"] == created["session_id"]
        assert meta["data_type"] == "image/jpeg" and "data" not in meta and "sequence" not in meta
        assert all(p[4].startswith(JPEG) for p in parsed)
        await ws.send(json.dumps({"type": "ack", "sequence": 4}))
        await ws.send(json.dumps({"type": "close"}))
        while isinstance(message := await ws.recv(), bytes):
            pass
        closed = json.loads(message)
        assert closed["type"] == "session_closed" and closed["total_frames"] >= 5
        assert closed["stats"]["output_chunks"] == closed["total_frames"]


@pytest.mark.socket
async def test_a_client_not_asking_gets_text_frames_with_base64(server: Server) -> None:
    async with connect(f"{server.ws}/camera-stream/stream?token={server.token}") as ws:
        created = await open_session(ws, None)
        assert created["binary"] is False
        server.twin.clock.advance(0.4)
        frames = [json.loads(await ws.recv()) for _ in range(2)]
    assert [f["type"] for f in frames] == ["push_output"] * 2 and [f["sequence"] for f in frames] == [0, 1]
    assert all(base64.b64decode(f["data"]).startswith(JPEG) for f in frames)
    scene, epoch = scene_of(server.twin.world, "cam-01"), server.twin.world.epoch
    assert [f["metadata"]["objects"] for f in frames] == [
        len(scene.boxes(f["timestamp"] - epoch)) for f in frames
    ]
    assert frames[1]["timestamp"] > frames[0]["timestamp"] and frames[0]["metadata"]["objects"] >= 2


@pytest.mark.socket
async def test_release_0917_never_confirms_binary(old_server: Server) -> None:
    async with connect(f"{old_server.ws}/camera-stream/stream?token={old_server.token}") as ws:
        created = await open_session(ws, {"binary": True})
        assert "binary" not in created
        old_server.twin.clock.advance(0.2)
        frame = await ws.recv()
    assert isinstance(frame, str) and json.loads(frame)["type"] == "push_output"


@pytest.mark.socket
async def test_stream_refusals(server: Server) -> None:
    for query in ("", "?token=bad", "?token=nmk_00000000000000000000000000000000"):
        with pytest.raises(InvalidStatus) as info:
            async with connect(f"{server.ws}/camera-stream/stream{query}"):
                pass
        assert info.value.response.status_code == 401
    async with connect(f"{server.ws}/weather-forecast/stream?token={server.token}") as ws:
        await ws.send(json.dumps({"type": "hello"}))
        assert json.loads(await ws.recv())["code"] == "NOT_SUPPORTED"
        await ws.send(json.dumps({"type": "init"}))
        assert json.loads(await ws.recv())["code"] == "PUSH_NOT_AVAILABLE"
        await ws.send("not json")
        error = json.loads(await ws.recv())
        assert error == {
            "type": "error",
            "code": "INVALID_FRAME",
            "message": error["message"],
            "retryable": False,
        }
    async with connect(f"{server.ws}/nope/stream?token={server.token}") as ws:
        await ws.send(json.dumps({"type": "init"}))
        assert json.loads(await ws.recv())["code"] == "EXTENSION_NOT_FOUND"
    async with connect(f"{server.ws}/camera-stream/stream?token={server.token}") as ws:
        await open_session(ws, None)
        await ws.send(b"\x00" * 12)
        assert json.loads(await ws.recv())["code"] == "INVALID_MODE"


async def test_upload_and_register_manifests(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    manifest = {
        "id": "lamp",
        "name": "Lamp",
        "version": "0.2.0",
        "commands": [{"id": "on", "response": {"on": True}}],
    }
    files = {"file": ("lamp.json", json.dumps(manifest).encode(), "application/json")}
    resp = await automation.post("/api/extensions/upload/file", files=files, headers=auth)
    assert resp.json()["data"] == {
        "id": "lamp", "installed": True, "file_path": "/var/lib/neomind/extensions/lamp.json",
    }  # fmt: skip
    said = await automation.post("/api/extensions/lamp/command", json={"command": "on"}, headers=auth)
    assert said.json()["data"]["output"] == {"on": True, "args": {}}
    resp = await automation.post("/api/extensions/upload/file", files=files, headers=auth)
    assert_error(resp, 409, "CONFLICT")
    bad = {"file": ("x.json", b"{nope", "application/json")}
    assert_error(
        await automation.post("/api/extensions/upload/file", files=bad, headers=auth), 400, "BAD_REQUEST"
    )
    wrong = {"file": ("x.zip", json.dumps(manifest | {"id": "z"}).encode(), "application/zip")}
    assert_error(
        await automation.post("/api/extensions/upload/file", files=wrong, headers=auth), 400, "BAD_REQUEST"
    )
    resp = await automation.post("/api/extensions/upload/file", json={"file": "x"}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST")

    path = {"file_path": "/var/lib/neomind/extensions/energy-meter.json"}
    resp = await automation.post("/api/extensions", json=path, headers=auth)
    assert resp.json()["data"]["id"] == "energy-meter"
    assert_error(await automation.post("/api/extensions", json=path, headers=auth), 409, "CONFLICT")
    for escape in ("/etc/passwd", "../../etc/passwd", "/var/lib/neomind/extensions/../../../etc/passwd"):
        resp = await automation.post("/api/extensions", json={"file_path": escape}, headers=auth)
        assert_error(resp, 404, "NOT_FOUND")
    assert_error(await automation.post("/api/extensions", json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post("/api/extensions/upload/file", files=files), 401, "UNAUTHORIZED")
