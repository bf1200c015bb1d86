"""The control plane: clock, reset, seed, snapshot/restore, and what the vendor APIs then answer."""

from __future__ import annotations

import httpx
import jwt
import pytest

from tests.conftest import SCENARIOS, admin_token, gateway_token
from tests.sockets import until
from twin.sensors import sensors_of
from twin.serve import build
from twin.settings import Settings


async def timestamps(automation: httpx.AsyncClient, gateway: httpx.AsyncClient) -> dict[str, float]:
    """Every world timestamp the two APIs return: uptime, a fresh JWT's iat, the device's times."""
    await automation.post("/api/setup/initialize", json={"username": "someone", "password": "abc12345"})
    login = await automation.post("/api/auth/login", json={"username": "someone", "password": "abc12345"})
    key = (await gateway.get("/api/v1/auth/public-key")).json()["data"]
    return {
        "uptime": (await automation.get("/api/health/status")).json()["uptime"],
        "jwt.iat": jwt.decode(login.json()["token"], options={"verify_signature": False})["iat"],
        "gateway.health.time": (await gateway.get("/api/v1/system/health")).json()["data"]["time"],
        "gateway.public_key.unix_timestamp": key["unix_timestamp"],
    }


async def test_clock_read_pause_resume_speed(control: httpx.AsyncClient) -> None:
    clock = (await control.get("/clock")).json()
    assert clock == {
        "mode": "step",
        "speed": 1.0,
        "paused": False,
        "sim_time": 0.0,
        "epoch": 1767225600.0,
        "unix_time": 1767225600.0,
    }
    assert (await control.post("/clock/pause")).json()["paused"] is True
    assert (await control.post("/clock/resume")).json()["paused"] is False
    assert (await control.put("/clock/speed", json={"speed": 60})).json()["speed"] == 60


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/clock/speed", {"speed": 0}),
        ("PUT", "/clock/speed", {"speed": "fast"}),
        ("PUT", "/clock/speed", {}),
        ("POST", "/clock/advance", {"seconds": -5}),
        ("POST", "/clock/advance", {"seconds": 5, "extra": 1}),
        ("PUT", "/seed", {"seed": -1}),
    ],
)
async def test_bad_control_input_is_400(
    control: httpx.AsyncClient, method: str, path: str, body: dict
) -> None:
    resp = await control.request(method, path, json=body)
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid_input"


async def test_run_to_the_past_is_refused(control: httpx.AsyncClient) -> None:
    await control.post("/clock/advance", json={"seconds": 100})
    resp = await control.post("/clock/run-to", json={"sim_time": 50})
    assert resp.status_code == 400 and "past" in resp.json()["error"]["message"]
    assert (await control.post("/clock/run-to", json={"sim_time": 150})).json()["sim_time"] == 150


async def test_advancing_3600_moves_every_api_timestamp_by_exactly_3600(
    control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    before = await timestamps(automation, gateway)
    await control.post("/clock/advance", json={"seconds": 3600})
    after = await timestamps(automation, gateway)
    assert {k: after[k] - before[k] for k in before} == dict.fromkeys(before, 3600)


async def test_advance_delivers_telemetry_on_the_world_clock(twin, control: httpx.AsyncClient) -> None:
    sub = twin.automation.bus.subscribe(maxlen=5000)
    await control.post("/clock/advance", json={"seconds": 3600})
    events = list(iter(sub.get_nowait, None))
    telemetry = [e for e in events if e.kind.value == "device.telemetry"]
    assert len(telemetry) == 3 * 361  # 3 sensors, samples at 0, 10, ..., 3600
    assert telemetry[-1].data["timestamp"] == 1767225600 + 3600


async def test_snapshot_reset_restore_gives_identical_answers(
    control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    token = await admin_token(automation)
    gw_token = await gateway_token(gateway)
    await control.post("/clock/advance", json={"seconds": 1234})

    async def answers() -> list:
        auth = {"Authorization": f"Bearer {token}"}
        return [
            (await automation.get("/api/setup/status")).json(),
            (await automation.get("/api/auth/me", headers=auth)).json(),
            (await automation.get("/api/health/status")).json(),
            (await gateway.get("/api/v1/system/health")).json(),
            (await gateway.get("/api/v1/system/info", headers={"Authorization": gw_token})).status_code,
            (await control.get("/clock")).json(),
        ]

    expected = await answers()
    snap = (await control.post("/snapshots")).json()
    assert snap["sim_time"] == 1234

    reset = await control.post("/reset")
    assert reset.json()["sim_time"] == 0
    assert (await automation.get("/api/setup/status")).json()["setup_required"] is True
    assert (await gateway.get("/api/v1/system/info", headers={"Authorization": gw_token})).status_code == 401

    restored = await control.post(f"/snapshots/{snap['id']}/restore")
    assert restored.json()["sim_time"] == 1234
    assert await answers() == expected


async def test_restore_unknown_snapshot_is_404(control: httpx.AsyncClient) -> None:
    resp = await control.post("/snapshots/snap-999/restore")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"


async def test_seed_resets_the_world_with_the_new_seed(twin, control: httpx.AsyncClient) -> None:
    assert (await control.get("/seed")).json() == {"seed": 1234}
    await control.post("/clock/advance", json={"seconds": 50})
    before = sensors_of(twin.world).groups["env_sensor"].current("env_sensor-0001")
    resp = await control.put("/seed", json={"seed": 99})
    assert resp.json()["seed"] == 99 and resp.json()["clock"]["sim_time"] == 0
    await control.post("/clock/advance", json={"seconds": 50})
    assert sensors_of(twin.world).groups["env_sensor"].current("env_sensor-0001") != before


async def test_fault_endpoints_name_servers(control: httpx.AsyncClient) -> None:
    assert set((await control.get("/faults")).json()) == {"automation", "cam-01"}
    resp = await control.post("/faults/nosuch/latency", json={"seconds": 1})
    assert resp.status_code == 404


async def test_clock_sleep_moves_step_time_and_holds_at_the_stop(twin, control: httpx.AsyncClient) -> None:
    import asyncio

    resp = await control.post("/clock/sleep", json={"seconds": 12.5})
    assert resp.status_code == 200 and resp.json()["sim_time"] == 12.5
    bad = await control.post("/clock/sleep", json={"seconds": -1})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    missing = await control.post("/clock/sleep", json={})
    assert missing.status_code == 400

    twin.control.stop_at = 20.0
    held = asyncio.create_task(control.post("/clock/sleep", json={"seconds": 60}))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not held.done() and twin.control.stopped.is_set()
    assert twin.clock.state().sim_time == 20.0
    held.cancel()


# The console's readings and the live scenario runs ------------------------------------------------


@pytest.fixture
def live(twin) -> None:
    """Scenarios run on the world from the control plane, as ``twin run`` sets them up."""
    from twin.scenario.live import LiveScenarios

    twin.control.scenarios = LiveScenarios(twin.control)


async def test_fleet_lists_devices_with_their_recent_values_and_the_cameras(
    control: httpx.AsyncClient,
) -> None:
    await control.post("/clock/advance", json={"seconds": 95})
    fleet = (await control.get("/fleet", params={"points": 4, "limit": 2})).json()
    assert fleet["clock"]["sim_time"] == 95
    sensors = fleet["sensors"]
    assert (sensors["total"], sensors["page"], len(sensors["devices"])) == (3, 1, 2)
    first = sensors["devices"][0]
    assert first["id"] == "env_sensor-0001" and first["status"] == "online" and first["simulated"]
    assert first["times"] == [60.0, 70.0, 80.0, 90.0]
    assert set(first["metrics"]) == {"temperature", "humidity"}
    assert all(len(v) == 4 and all(isinstance(x, float) for x in v) for v in first["metrics"].values())
    [camera] = fleet["cameras"]
    assert camera["id"] == "cam-01" and camera["powered"]
    assert camera["services"] == {"camera": True, "event_bus": True}
    assert {"soc_temp_c", "npu_percent", "root_percent", "data_percent"} <= set(camera["metrics"])


async def test_fleet_gives_each_metric_its_unit_from_the_device_type(control: httpx.AsyncClient) -> None:
    devices = (await control.get("/fleet", params={"points": 1})).json()["sensors"]["devices"]
    assert all(d["units"] == {} for d in devices)  # the test scenario's metrics name no unit
    twin = build(Settings(scenario=SCENARIOS / "default.yaml", step=True))
    transport = httpx.ASGITransport(app=twin.control_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://c") as c:
        devices = (await c.get("/fleet", params={"points": 1})).json()["sensors"]["devices"]
    assert devices[0]["units"] == {"temperature": "°C", "humidity": "%", "battery": "%"}


async def test_fleet_shows_a_gap_as_none_and_a_spike_added(control: httpx.AsyncClient) -> None:
    await control.post("/clock/advance", json={"seconds": 30})
    await control.post(
        "/actions/telemetry_spike",
        json={"params": {"device": "env_sensor-0002", "metric": "humidity", "delta": 50, "seconds": 25}},
    )
    gap = {"device": "env_sensor-0003", "seconds": 25}
    await control.post("/actions/telemetry_gap", json={"params": gap})
    await control.post("/clock/advance", json={"seconds": 30})
    devices = (await control.get("/fleet", params={"points": 4})).json()["sensors"]["devices"]
    spiked, gapped = devices[1]["metrics"]["humidity"], devices[2]["metrics"]["temperature"]
    assert devices[1]["times"] == [30.0, 40.0, 50.0, 60.0]  # the windows cover the ticks at 40 and 50
    assert [round(v - spiked[0]) // 10 for v in spiked] == [0, 5, 5, 0]
    assert [v is None for v in gapped] == [False, True, True, False]


@pytest.mark.parametrize(
    "query", [{"page": 0}, {"limit": 0}, {"limit": 5000}, {"points": 0}, {"points": 1000}, {"page": "x"}]
)
async def test_fleet_refuses_bad_paging(control: httpx.AsyncClient, query: dict) -> None:
    resp = await control.get("/fleet", params=query)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_input"


async def test_camera_detail_and_an_unknown_camera(control: httpx.AsyncClient) -> None:
    detail = (await control.get("/cameras/cam-01")).json()
    assert detail["state"]["powered"] is True
    assert detail["lens"]["zoom_limit"] == {"min_pos": 0, "max_pos": 2000}
    assert {p["name"] for p in detail["partitions"]} >= {"root", "data"}
    assert all(0 <= p["usage_percent"] <= 100 and p["free"] >= 0 for p in detail["partitions"])
    assert detail["apps"] == []
    assert {s["config"]["stream_id"] for s in detail["streams"]} == {"main", "sub", "third"}
    assert "soc_temp_c" in detail["peripherals"] and detail["info"]["version"]
    missing = await control.get("/cameras/cam-99")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": "not_found", "message": "no camera 'cam-99'"}}


async def test_a_camera_that_is_down_says_so(control: httpx.AsyncClient) -> None:
    await control.post("/actions/camera_restart", json={"params": {"camera": "cam-01"}})
    await control.post("/clock/advance", json={"seconds": 5})
    [camera] = (await control.get("/fleet")).json()["cameras"]
    assert camera["powered"] is False and camera["down_until"] == pytest.approx(42.0)
    assert camera["metrics"] == {}
    assert (await control.get("/cameras/cam-01")).json()["state"]["powered"] is False


async def test_clock_mode_switches_and_refuses_an_unknown_mode(control: httpx.AsyncClient) -> None:
    assert (await control.put("/clock/mode", json={"mode": "realtime"})).json()["mode"] == "realtime"
    assert (await control.put("/clock/mode", json={"mode": "step"})).json()["mode"] == "step"
    for body in ({"mode": "fast"}, {}, {"mode": "step", "speed": 2}):
        resp = await control.put("/clock/mode", json=body)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_input"


async def test_snapshots_are_listed_oldest_first(control: httpx.AsyncClient) -> None:
    assert (await control.get("/snapshots")).json() == {"snapshots": []}
    first = (await control.post("/snapshots")).json()
    await control.post("/clock/advance", json={"seconds": 10})
    second = (await control.post("/snapshots")).json()
    listed = (await control.get("/snapshots")).json()["snapshots"]
    assert listed == [
        {"id": first["id"], "sim_time": 0.0, "seed": 1234, "label": ""},
        {"id": second["id"], "sim_time": 10.0, "seed": 1234, "label": ""},
    ]


async def test_a_snapshot_takes_a_label_and_can_be_deleted(control: httpx.AsyncClient) -> None:
    taken = await control.post("/snapshots", json={"label": "before the storm"})
    assert taken.status_code == 200 and taken.json()["label"] == "before the storm"
    other = (await control.post("/snapshots", json={})).json()
    assert other["label"] == ""
    deleted = await control.delete(f"/snapshots/{taken.json()['id']}")
    assert deleted.status_code == 200 and deleted.json() == {"deleted": taken.json()["id"]}
    assert [s["id"] for s in (await control.get("/snapshots")).json()["snapshots"]] == [other["id"]]
    for gone in (taken.json()["id"], "snap-999"):
        resp = await control.delete(f"/snapshots/{gone}")
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
        assert gone in resp.json()["error"]["message"]
    restore = await control.post(f"/snapshots/{taken.json()['id']}/restore")
    assert restore.status_code == 404


@pytest.mark.parametrize(
    "body",
    [{"label": 5}, {"label": ["a"]}, {"label": None}, {"label": "x" * 201}, {"name": "a"}, [1]],
)
async def test_a_bad_snapshot_label_is_400(control: httpx.AsyncClient, body: object) -> None:
    resp = await control.post("/snapshots", json=body)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_input"
    assert (await control.get("/snapshots")).json() == {"snapshots": []}


async def test_action_log_says_when_each_action_started_and_ends(control: httpx.AsyncClient) -> None:
    await control.post("/clock/advance", json={"seconds": 5})
    timed = (await control.post("/actions/latency", json={"params": {"seconds": 1}, "for": 20})).json()
    held = (await control.post("/actions/network_hang", json={"params": {}})).json()
    await control.post("/clock/advance", json={"seconds": 30})
    log = {a["id"]: a for a in (await control.get("/actions")).json()["log"]}
    assert log[timed["id"]] | {"params": None} == {
        "id": timed["id"], "action": "latency", "params": None, "at": 5.0, "undo_at": 25.0,
        "ended_at": 25.0, "active": False,
    }  # fmt: skip
    assert log[held["id"]]["active"] is True and log[held["id"]]["undo_at"] is None
    later = (await control.get("/actions", params={"since_id": timed["id"]})).json()["log"]
    assert [a["id"] for a in later] == [held["id"]]
    bad = await control.get("/actions", params={"since_id": -1})
    assert bad.status_code == 400


async def test_journal_filters_by_client_and_lists_filter_values(
    control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    assert (await control.get("/journal/filters")).json()["last_seq"] == 0
    await automation.get("/api/health")
    await automation.get("/api/nope", headers={"X-Forwarded-For": "10.0.0.9"})
    filters = (await control.get("/journal/filters")).json()
    assert filters["servers"] == ["automation"] and filters["last_seq"] == 2
    assert 404 in filters["statuses"] and "unmatched" in filters["routes"]
    client = filters["clients"][0]
    entries = (await control.get("/journal", params={"client": client})).json()["entries"]
    assert len(entries) == 2
    assert (await control.get("/journal", params={"client": "nobody"})).json()["entries"] == []
    assert (await control.get("/journal", params={"status": "x"})).status_code == 400


SCENARIO = """
name: console_check
seed: 1234
clock: {mode: step, epoch: 1767225600}
fleet:
  sensors:
    - {type: env_sensor, count: 2, period: 10, metrics: {temperature: {kind: sine, mean: 20, amplitude: 2}}}
  cameras: {count: 1}
timeline:
  - {at: 10, do: latency, params: {server: automation, seconds: 1}, for: 20}
expectations:
  - expect: no_unknown_routes
stop: {at: 60}
"""


async def test_scenario_library_and_load_failures(live, control: httpx.AsyncClient) -> None:
    library = {s["name"]: s for s in (await control.get("/scenarios")).json()["scenarios"]}
    assert library["flaky_network"]["cameras"] == 1 and library["fleet_1000"]["sensors"] == 1000
    assert "schema" not in library
    for body, status in [
        ({}, 400),
        ({"name": "flaky_network", "yaml": SCENARIO}, 400),
        ({"name": "no_such_scenario"}, 404),
        ({"name": "../scenarios/flaky_network"}, 404),
        ({"name": 7}, 400),
        ({"yaml": "name: x\nseed: -1\n"}, 400),
        ({"yaml": "{unclosed"}, 400),
        ({"yaml": SCENARIO, "extra": 1}, 400),
    ]:
        resp = await control.post("/scenario/load", json=body)
        assert resp.status_code == status, (body, resp.text)
        assert resp.json()["error"]["code"] == {400: "invalid_input", 404: "not_found"}[status]
    bad = await control.post("/scenario/load", json={"yaml": "name: x\nfleet: {cameras: {colour: red}}\n"})
    assert "fleet.cameras" in bad.json()["error"]["message"]
    named = {"yaml": "name: x\nbogus: 1\n", "filename": "mine.yaml"}
    message = (await control.post("/scenario/load", json=named)).json()["error"]["message"]
    assert message.startswith("mine.yaml:2")
    assert (await control.get("/scenario")).json()["loaded"] is None


async def test_scenario_run_failures(live, control: httpx.AsyncClient) -> None:
    resp = await control.post("/scenario/run")
    assert resp.status_code == 409 and resp.json()["error"]["message"] == "no scenario loaded"
    assert (await control.delete("/scenario/run")).status_code == 409
    assert (await control.get("/scenario/report")).status_code == 404
    await control.post("/scenario/load", json={"name": "camera_scenes"})
    mismatch = await control.post("/scenario/run")
    assert mismatch.status_code == 409 and "needs cameras ['cam-01', 'cam-02', 'cam-03']" in mismatch.text
    await control.post("/scenario/load", json={"yaml": SCENARIO})
    for body in ({"mode": "fast"}, {"speed": 0}, {"drive": "sometimes"}, {"later": True}):
        resp = await control.post("/scenario/run", json=body)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_input"


async def test_without_live_scenarios_the_control_plane_runs_none(control: httpx.AsyncClient) -> None:
    for method, path in [("GET", "/scenarios"), ("POST", "/scenario/run"), ("GET", "/scenario/report")]:
        resp = await control.request(method, path)
        assert resp.status_code == 404 and "runs no scenarios" in resp.json()["error"]["message"]


async def test_a_scenario_runs_on_the_live_world_and_is_judged_as_it_goes(
    live, twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    await control.post("/clock/advance", json={"seconds": 500})
    await control.post("/actions/network_hang", json={"params": {}})
    loaded = (await control.post("/scenario/load", json={"yaml": SCENARIO, "filename": "check.yaml"})).json()
    params = {"server": "automation", "seconds": 1}
    step = {"at": 10.0, "after": None, "do": "latency", "params": params, "for": 20.0}
    assert loaded["loaded"]["timeline"] == [step]
    assert loaded["loaded"]["expectations"][0]["expect"] == "no_unknown_routes"
    started = (await control.post("/scenario/run", json={"drive": False})).json()
    run = started["run"]
    assert started["clock"]["sim_time"] == 0 and run["state"] == "running" and run["mode"] == "step"
    assert twin.faults["automation"].hang is False  # faults from before the run are cleared
    assert [v["outcome"] for v in run["verdicts"]] == ["inconclusive"]  # nothing used the servers yet
    assert (await control.post("/scenario/run")).status_code == 409
    assert (await control.post("/scenario/load", json={"name": "flaky_network"})).status_code == 409

    await automation.get("/api/health")
    await control.post("/clock/advance", json={"seconds": 15})
    run = (await control.get("/scenario")).json()["run"]
    assert [v["outcome"] for v in run["verdicts"]] == ["passed"]
    assert [(a["action"], a["at"], a["undo_at"], a["active"]) for a in run["actions"]] == [
        ("latency", 10.0, 30.0, True)
    ]
    await control.post("/clock/advance", json={"seconds": 20})  # past the latency: the clock is not driven
    await automation.get("/api/nope")
    run = (await control.get("/scenario")).json()["run"]
    assert [v["outcome"] for v in run["verdicts"]] == ["failed"] and run["requests"] == 2

    await control.post("/clock/run-to", json={"sim_time": 60})

    async def finished() -> bool:
        return (await control.get("/scenario")).json()["run"]["state"] == "finished"

    await until(finished)
    run = (await control.get("/scenario")).json()["run"]
    assert run["sim_time"] == 60 and run["outcome"] == "failed" and run["passed"] is False
    assert run["actions"][0]["ended_at"] == 30.0
    report = await control.get("/scenario/report")
    assert report.status_code == 200 and "console_check" in report.text and "/api/nope" in report.text
    assert (await control.delete("/scenario/run")).status_code == 409


async def test_a_run_ends_when_stopped_or_when_the_world_is_reset(live, control: httpx.AsyncClient) -> None:
    await control.post("/scenario/load", json={"yaml": SCENARIO})
    await control.post("/scenario/run", json={"drive": False})
    await control.post("/clock/advance", json={"seconds": 12})
    stopped = (await control.delete("/scenario/run")).json()["run"]
    assert stopped["state"] == "stopped" and stopped["sim_time"] == 12
    await control.post("/scenario/run", json={"drive": False})
    await control.post("/clock/advance", json={"seconds": 5})
    await control.post("/reset")

    async def aborted() -> bool:
        return (await control.get("/scenario")).json()["run"]["state"] == "aborted"

    assert await aborted()  # at once: the reset ends the run before it rebuilds the world
    run = (await control.get("/scenario")).json()["run"]
    assert run["sim_time"] == 5 and run["errors"] == ["the world was reset during the run"]
