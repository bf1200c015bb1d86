"""Shards of one world in this process: the same trace as one process, actions on the shard that
holds their target, one control plane over all of them."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.cluster.local import LocalCoordinator
from twin.cluster.control import ClusterClock, ClusterControl, control_app
from twin.cluster.merge import canonical, trace_hash
from twin.cluster.plan import split
from twin.cluster.run import merged_record, relay
from twin.scenario.model import load_scenario
from twin.scenario.runner import RunOptions, run, runner_settings, trace_of
from twin.serve import world_config

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "scenarios" / "site_shards.yaml"


async def sharded(source: Path, shards: int, stop_at: float) -> LocalCoordinator:
    settings = runner_settings(source, RunOptions(step=True))
    config, _, _ = world_config(settings, load_scenario(source))
    scenario = load_scenario(source)
    coordinator = LocalCoordinator(settings, split(config, shards))
    await coordinator.start()
    for t in range(0, int(stop_at) + 1, 3):
        times = coordinator.run_to(float(t))
        assert {x.sim_time for x in times} == {float(t)}, times  # every shard at the barrier's time
        relay(coordinator, scenario)  # what starts another shard's 'after' steps, at each barrier
    return coordinator


def merged_trace(coordinator: LocalCoordinator, end: float) -> list[str]:
    records = coordinator.records()
    runs = sorted((t, r.name, i, n, p) for r in records for t, i, n, p in r.actions)
    numbered = [(t, k, n, p) for k, (t, _, _, n, p) in enumerate(runs, 1)]
    return trace_of(merged_record(records, end, None, False), numbered)


async def test_four_shards_give_the_single_process_trace_byte_for_byte() -> None:
    single = await run(SITE, RunOptions(step=True, stop_at=600))
    coordinator = await sharded(SITE, 4, 600)
    try:
        assert [s.slice.cameras for s in coordinator.specs] == [
            ("cam-01",),
            ("cam-02",),
            ("cam-03",),
            ("cam-04",),
        ]
        trace = merged_trace(coordinator, 600)
    finally:
        await coordinator.stop()
    assert len(trace) > 10 and any("camera.power_up cam-02" in line for line in trace)
    assert canonical(trace) == canonical(single.trace)
    assert trace_hash(trace) == trace_hash(single.trace)


async def test_each_step_runs_on_the_shard_holding_its_target() -> None:
    coordinator = await sharded(SITE, 2, 130)
    try:
        acted = {name: [a[2] for a in r.actions] for name, r in ((r.name, r) for r in coordinator.records())}
    finally:
        await coordinator.stop()
    assert acted == {  # cam-01 and cam-02 and the sensors on shard-0, cam-03 and cam-04 on shard-1
        "shard-0": ["camera_restart", "session_drop", "telemetry_gap"],
        "shard-1": ["partition_fill", "core_dump", "ntp_jump"],
    }


async def test_an_event_on_one_shard_starts_a_step_on_another_at_its_time() -> None:
    coordinator = await sharded(SITE, 2, 300)
    try:
        spikes = [a for a in coordinator.shards["shard-0"].record().actions if a[2] == "telemetry_spike"]
        up = [
            e.at for e in coordinator.shards["shard-1"].record().events if e.kind.value == "camera.power_up"
        ]
    finally:
        await coordinator.stop()
    assert len(spikes) == 1 and spikes[0][0] == pytest.approx(up[-1] + 20)  # cam-04 up + 20 s, on shard-0


@pytest.fixture
async def plane():
    coordinator = await sharded(SITE, 2, 0)
    clock = ClusterClock(coordinator, coordinator_mode(), 1.0, coordinator.info["shard-0"]["epoch"])
    control = ClusterControl(coordinator, clock, 23)
    app, token = control_app(control, coordinator, runner_settings(SITE, RunOptions(step=True)))
    assert token is None  # on loopback
    transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 5000))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        yield client, coordinator, control
    await coordinator.stop()


def coordinator_mode():
    from hardware.ports.types import ClockMode

    return ClockMode.STEP


async def test_the_control_plane_advances_every_shard(plane) -> None:
    client, coordinator, _ = plane
    r = await client.post("/clock/advance", json={"seconds": 42})
    assert r.status_code == 200 and r.json()["sim_time"] == 42
    assert {t.sim_time for t in coordinator.times()} == {42.0}
    assert (await client.post("/clock/advance", json={"seconds": -1})).status_code == 400
    r = await client.post("/clock/run-to", json={"sim_time": 10})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input"


async def test_actions_go_to_their_shard_and_unknown_targets_are_refused(plane) -> None:
    client, coordinator, _ = plane
    r = await client.post(
        "/actions/partition_fill", json={"params": {"camera": "cam-04", "partition": "root"}, "for": 60}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["shard"] == "shard-1" and body["id"] == 1
    assert [a[2] for a in coordinator.shards["shard-1"].record().actions] == ["partition_fill"]
    assert coordinator.shards["shard-0"].record().actions == []
    r = await client.post("/actions/partition_fill", json={"params": {"camera": "cam-09"}})
    assert r.status_code == 404 and "cam-09" in r.json()["error"]["message"]
    r = await client.post("/actions/no_such_action", json={"params": {}})
    assert r.status_code in (400, 404)
    assert (await client.get("/actions")).json()  # the log lists what ran
    r = await client.delete("/actions/1")
    assert r.status_code == 200
    assert coordinator.shards["shard-1"].control("active_actions") == []


async def test_snapshot_and_restore_every_shard_at_one_time(plane) -> None:
    client, coordinator, control = plane
    await client.post("/clock/advance", json={"seconds": 100})
    r = await client.post("/snapshots", json={"label": "t100"})
    assert r.status_code == 200, r.text
    snap = r.json()["id"]
    manifest = control.manifest(snap)
    assert manifest["sim_time"] == 100 and set(manifest["shards"]) == {"shard-0", "shard-1"}
    await client.post("/clock/advance", json={"seconds": 50})
    r = await client.post(f"/snapshots/{snap}/restore")
    assert r.status_code == 200 and r.json()["sim_time"] == 100
    assert {t.sim_time for t in coordinator.times()} == {100.0}
    assert (await client.post("/snapshots/snap-99/restore")).status_code == 404


async def test_fleet_lists_every_member_with_its_shard(plane) -> None:
    client, _, _ = plane
    body = (await client.get("/fleet")).json()
    where = {m["name"]: m["shard"] for m in body["members"]}
    assert where == {"automation": "shard-0", "mqtt": "shard-0", "cam-01": "shard-0", "cam-02": "shard-0",
                     "cam-03": "shard-1", "cam-04": "shard-1"}  # fmt: skip
    cam = next(m for m in body["members"] if m["name"] == "cam-03")
    assert set(cam["urls"]) == {"http", "https", "rtsp"}
    assert all(
        url.startswith(("http://127.0.0.1", "https://127.0.0.1", "rtsp://127.0.0.1"))
        for url in cam["urls"].values()
    )
    async with httpx.AsyncClient() as http:  # the address is the shard's own server
        assert (await http.get(cam["urls"]["http"] + "/api/v1/system/info")).status_code == 401
    assert [s["state"] for s in body["shards"]] == ["running", "running"]
    assert [c["id"] for c in body["cameras"]] == ["cam-01", "cam-02", "cam-03", "cam-04"]  # the console's
    assert body["sensors"]["total"] == 40 and len(body["sensors"]["devices"]) == 40
    detail = (await client.get("/cameras/cam-04")).json()
    assert detail["state"]["id"] == "cam-04" and "partitions" in detail
    assert (await client.get("/cameras/cam-09")).status_code == 404


async def test_realtime_anchors_keep_shards_within_one_slice(plane) -> None:
    client, coordinator, _ = plane
    await client.put("/clock/mode", json={"mode": "realtime"})
    await client.put("/clock/speed", json={"speed": 10})
    await asyncio.sleep(0.2)
    for shard in coordinator.shards.values():
        shard.twin.clock.tick()
    anchor = coordinator.anchor
    now = time.time()
    for t in coordinator.times():
        assert (
            abs(t.sim_time - anchor.sim_time(now)) <= 0.01 * 10 + 0.05 * 10
        )  # a slice, and the ticks' spread
    r = await client.post("/clock/pause")
    assert r.json()["paused"] is True
    await asyncio.sleep(0.1)
    for shard in coordinator.shards.values():
        shard.twin.clock.tick()
    assert len({t.sim_time for t in coordinator.times()}) == 1  # paused: all at the anchor's time


async def test_beyond_loopback_the_control_plane_asks_for_its_token(plane, tmp_path) -> None:
    _, coordinator, control = plane
    settings = dataclasses.replace(
        runner_settings(SITE, RunOptions(step=True)), control_host="0.0.0.0", state_dir=tmp_path
    )
    app, token = control_app(control, coordinator, settings)
    assert token and (tmp_path / "control-token").read_text().strip() == token
    transport = httpx.ASGITransport(app=app, client=("10.0.0.9", 5000))
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{socket.gethostname()}") as client:
        assert (await client.get("/clock")).status_code == 401
        assert (await client.post("/clock/advance", json={"seconds": 1})).status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        assert (await client.get("/fleet", headers=auth)).status_code == 200


async def test_epoch_now_is_the_coordinators_on_every_shard(tmp_path) -> None:
    text = SITE.read_text().replace("epoch: 1767225600", "epoch: now")
    source = tmp_path / "site_now.yaml"
    source.write_text(text)
    settings = runner_settings(source, RunOptions(step=True))
    config, _, _ = world_config(settings, load_scenario(source))
    coordinator = LocalCoordinator(settings, split(config, 4))
    for shard in coordinator.shards.values():
        shard.wall_now = 1_800_000_000.7
    await coordinator.start()
    try:
        assert {info["epoch"] for info in coordinator.info.values()} == {1_800_000_000.0}
    finally:
        await coordinator.stop()


async def test_a_shard_takes_only_its_control_calls_by_name(plane) -> None:
    _, coordinator, _ = plane
    with pytest.raises(ValueError, match="no control call"):
        coordinator.shards["shard-0"].control("reset")
