"""A preinstalled app has been running since the camera booted in the world's past: at t=0 it is
running, its log holds the lines of that time, and it goes on from there."""

from __future__ import annotations

import json
import time

import httpx

from tests.conftest import gateway_token
from twin.camera.app_runtime import TICK_S
from twin.camera.container_records import LOG_BUFFER
from twin.camera.wing import cameras_of
from twin.fleet import CameraSpec, WorldConfig
from twin.past import DEFAULT_HISTORY_S
from twin.serve import build
from twin.settings import DEFAULT_SCENARIO, Settings
from twin.wings import KINDS
from twin.world import World

APP = "object-detector"


def camera_world(seed: int = 3, history: float = DEFAULT_HISTORY_S) -> World:
    config = WorldConfig(seed=seed, history=history, cameras=CameraSpec(1, apps=(APP,)))
    return World(config, kinds=KINDS)


def messages(world: World, n: int = 0) -> list[str]:
    return [line.message for line in cameras_of(world)["cam-01"].apps.logs(APP, n)]


def test_at_t0_the_app_has_been_running_since_boot() -> None:
    world = camera_world()
    camera = cameras_of(world)["cam-01"]
    info = camera.apps.get(APP)
    assert info.state == "running" and info.pid > 0
    ticks = int(DEFAULT_HISTORY_S / TICK_S)
    assert info.started_at == int(camera.clock.now() - ticks * TICK_S)
    assert camera.power.uptime() == DEFAULT_HISTORY_S
    lines = camera.apps.logs(APP, 5)
    assert [ln.message.split(":")[0] for ln in lines] == [f"frame {ticks - i}" for i in range(4, -1, -1)]
    assert lines[-1].timestamp_ns == int(world.epoch * 1e9)  # the last frame of the past is at t=0
    assert len(camera.apps.logs(APP, 0)) == LOG_BUFFER  # bounded as the live log is
    stats = camera.ai.stats()
    assert stats.model_stats[0].total_inferences == ticks * 15
    assert stats.cpu_utilization > 0 and stats.ram_total_kib == 4 * 1024**2 and stats.ram_used_kib > 0


def test_the_live_frames_continue_the_past() -> None:
    world = camera_world()
    ticks = int(DEFAULT_HISTORY_S / TICK_S)
    world.env.run(until=2 * TICK_S + 1)
    tail = messages(world, 3)
    assert [m.split(":")[0] for m in tail] == [f"frame {ticks + k}" for k in range(3)]
    assert not any(m.startswith("Starting") for m in messages(world))  # it started a week ago


def test_a_short_past_keeps_the_start_lines() -> None:
    world = camera_world(history=60.0)
    lines = messages(world)
    assert lines[:2] == [
        "Starting Object detector v1.0.0",
        "Subscribed to inference results of model yolov8n on stream main",
    ]
    assert len(lines) == 2 + 12 and lines[-1].startswith("frame 12:")


def test_same_seed_same_past_logs() -> None:
    assert messages(camera_world(3)) == messages(camera_world(3))
    assert messages(camera_world(3)) != messages(camera_world(4))


def test_without_a_past_the_app_starts_at_t0() -> None:
    world = camera_world(history=0.0)
    camera = cameras_of(world)["cam-01"]
    assert camera.apps.get(APP).state != "running" and messages(world) == []
    world.env.run(until=60)
    assert camera.apps.get(APP).state == "running"
    assert messages(world)[0] == "Starting Object detector v1.0.0"


def test_the_past_logs_survive_restore_and_reset() -> None:
    world = camera_world()
    before = messages(world)
    snap = world.snapshot()
    world.env.run(until=30)
    world.restore(snap)
    restored = messages(world)  # the newest lines, as many as the durable platform keeps of a log
    assert len(restored) >= 100 and restored == before[-len(restored) :]
    assert cameras_of(world)["cam-01"].apps.get(APP).state == "running"
    world.reset()
    assert messages(world) == before


async def test_make_run_world_answers_five_log_lines_at_t0() -> None:
    twin = build(Settings(scenario=DEFAULT_SCENARIO, step=True))
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    async with httpx.AsyncClient(transport=transport, base_url="http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        resp = await gateway.get(f"/api/v1/apps/{APP}/logs", headers=auth, params={"max_lines": 5})
        assert resp.status_code == 200
        lines = [json.loads(line) for line in resp.text.splitlines()]
        assert len(lines) == 5 and all(line["message"].startswith("frame ") for line in lines)
        stats = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
        assert stats["cpu_utilization"] > 0 and stats["ram_total_kib"] > 0 and stats["ram_used_kib"] > 0
        for bad in ({"Authorization": "Bearer nope"}, {}):
            assert (await gateway.get("/api/v1/ai/stats", headers=bad)).status_code == 401


def test_the_event_log_has_the_boot_of_the_past() -> None:
    world = camera_world()
    camera = cameras_of(world)["cam-01"]
    entries = camera.admin.event_logs("", "", "", "", "", 0, 0)["entries"]
    boot = next(e for e in entries if e["event_type"] == "system.boot")
    week_ago = camera.clock.now() - DEFAULT_HISTORY_S
    assert boot["timestamp"].startswith(time.strftime("%Y-%m-%dT%H:%M", time.gmtime(week_ago)))
