"""The default scenario (what `make run` loads) is demo-ready: its camera runs the sample
object-detector app from assets/, so a client sees a running app, its NDJSON logs and its detection
events from the first minute. And assets/ is what scripts/make_assets.py writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from hardware.ports.events import EventKind
from tests.conftest import gateway_token
from twin.camera.event_bus import covered
from twin.camera.preinstall import package
from twin.camera.wing import cameras_of
from twin.serve import build
from twin.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
async def default_world():
    twin = build(Settings(scenario=ROOT / "scenarios" / "default.yaml", step=True))
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    async with httpx.AsyncClient(transport=transport, base_url="http://cam-01") as gateway:
        yield twin, gateway, {"Authorization": await gateway_token(gateway)}


async def test_default_scenario_runs_the_detection_app(default_world) -> None:
    twin, gateway, auth = default_world
    twin.clock.advance(60)
    apps = (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]
    assert [(a["id"], a["state"]) for a in apps] == [("object-detector", "running")]
    resp = await gateway.get("/api/v1/apps/object-detector/logs", headers=auth, params={"max_lines": 5})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in resp.text.splitlines()]
    assert len(lines) == 5 and all(set(line) == {"timestamp", "level", "message"} for line in lines)
    assert all(line["message"].startswith("frame ") for line in lines)
    camera = cameras_of(twin.world)["cam-01"]
    assert camera.ai.subscriptions["object-detector"].model_id == "yolov8n"
    assert any(
        covered("app/object-detector/detections", [t])
        for t in camera.apps.apps["object-detector"].manifest.publish
    )


async def test_default_scenario_draws_the_detections(default_world) -> None:
    twin, gateway, auth = default_world
    config = (await gateway.get("/api/v1/media/config", headers=auth)).json()["data"]
    assert config["ai_overlay"]["enabled"] is True
    sub = twin.world.bus.subscribe([EventKind.CAMERA_DETECTIONS])
    twin.clock.advance(60)
    events = []
    while (event := sub.get_nowait()) is not None:
        events.append(event.data)
    assert len(events) >= 59 and any(e["count"] for e in events)


async def test_unknown_app_logs_and_missing_package(default_world) -> None:
    _, gateway, auth = default_world
    resp = await gateway.get("/api/v1/apps/nope/logs", headers=auth, params={"max_lines": 5})
    assert resp.status_code == 500 and resp.json()["code"] == 3002
    assert (await gateway.get("/api/v1/apps", headers={})).status_code == 401
    with pytest.raises(ValueError, match=r"needs app\.yaml"):
        package("no-such-app")


def test_assets_are_what_the_script_writes() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_assets.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout
