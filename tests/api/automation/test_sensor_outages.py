"""A simulated sensor taken offline, a telemetry gap and a spike: live (bus events, rules, device
status) and in the history a client pages through afterwards."""

from __future__ import annotations

import httpx
import pytest

from hardware.ports.events import EventKind
from tests.conftest import admin_token
from twin.automation.server import automation_of
from twin.sensors import sensors_of
from twin.serve import Twin

SENSOR = "env_sensor-0001"
OTHER = "env_sensor-0002"
EPOCH = 1_767_225_600
KINDS = (EventKind.DEVICE_TELEMETRY, EventKind.DEVICE_OFFLINE, EventKind.DEVICE_ONLINE)


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {await admin_token(automation)}"}


def drain(sub) -> list:
    return [event for _, event in sub.drain()]


async def history(
    client: httpx.AsyncClient, auth: dict[str, str], metric: str = "temperature", **params
) -> list:
    params = {"metric": metric, "start": EPOCH, "limit": 5000, **params}
    resp = await client.get(f"/api/devices/{SENSOR}/telemetry", params=params, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["data"][metric]


async def status_of(client: httpx.AsyncClient, auth: dict[str, str], device: str) -> str:
    devices = (await client.get("/api/devices", headers=auth)).json()["data"]["devices"]
    return next(d["status"] for d in devices if d["device_id"] == device)


async def test_offline_sensor_goes_quiet_is_noticed_after_the_timeout_and_comes_back(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    sub = twin.world.bus.subscribe(KINDS, maxlen=100_000)
    twin.clock.advance(100)
    resp = await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    assert resp.status_code == 200, resp.text
    twin.clock.advance(200)
    assert await status_of(automation, auth, SENSOR) == "online"  # 300 s timeout not yet passed
    twin.clock.advance(200)  # t=500: more than 300 s since the last report at t=100
    assert await status_of(automation, auth, SENSOR) == "offline"
    assert await status_of(automation, auth, OTHER) == "online"
    again = await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    assert again.status_code == 400 and "offline already" in again.json()["error"]["message"]

    events = drain(sub)
    mine = [e for e in events if e.source == SENSOR]
    assert [e.at for e in mine if e.kind is EventKind.DEVICE_TELEMETRY][-1] == 100.0
    offline = [e for e in mine if e.kind is EventKind.DEVICE_OFFLINE]
    assert len(offline) == 1 and 400 < offline[0].at < 401
    assert offline[0].data["reason"] == "heartbeat timeout"
    assert any(e.source == OTHER and e.at == 500.0 for e in events)  # the rest of the fleet carries on

    twin.clock.advance(5)  # t=505: back between two ticks
    assert (
        await control.post("/actions/device_online", json={"params": {"device": SENSOR}})
    ).status_code == 200
    twin.clock.advance(20)
    mine = [e for e in drain(sub) if e.source == SENSOR]
    assert [(e.kind, e.at) for e in mine] == [
        (EventKind.DEVICE_TELEMETRY, 510.0),
        (EventKind.DEVICE_ONLINE, 510.0),
        (EventKind.DEVICE_TELEMETRY, 520.0),
    ]
    assert await status_of(automation, auth, SENSOR) == "online"

    points = await history(automation, auth)
    stamps = [p["timestamp"] - EPOCH for p in points]
    assert 100 in stamps and 510 in stamps and not any(100 < t < 510 for t in stamps)
    assert len(stamps) == 11 + 2  # 0..100, then 510 and 520


async def test_a_gap_is_a_hole_live_and_in_paged_history(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(50)
    resp = await control.post("/actions/telemetry_gap", json={"params": {"device": SENSOR, "seconds": 60}})
    assert resp.status_code == 200, resp.text
    twin.clock.advance(150)  # t=200
    stamps = [p["timestamp"] - EPOCH for p in await history(automation, auth)]
    expected = [t for t in range(200, -1, -10) if not 50 < t < 110]  # the tick at 50 was taken
    assert stamps == expected
    # Pages of 4 walk across the hole without missing or repeating a point.
    paged, offset = [], 0
    while True:
        page = await history(automation, auth, limit=4, offset=offset)
        if not page:
            break
        paged += [p["timestamp"] - EPOCH for p in page]
        offset += 4
    assert paged == expected
    current = (await automation.get(f"/api/devices/{SENSOR}/current", headers=auth)).json()["data"]
    assert current["device"]["status"] == "online"


async def test_a_gap_undone_early_by_for_and_a_rule_sees_nothing_inside_it(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    seen: list[float] = []
    twin.world.sample_observers.append(lambda s: seen.append(s.at) if s.reported(s.index[SENSOR]) else None)
    await control.post(
        "/actions/telemetry_gap", json={"params": {"device": SENSOR, "seconds": 600}, "for": 30}
    )
    twin.clock.advance(60)
    assert seen == [30.0, 40.0, 50.0, 60.0]


async def test_a_spike_shifts_one_sample_live_in_rules_and_in_history(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    fleet = sensors_of(twin.world).groups["env_sensor"]
    rule = {
        "name": "humid",
        "condition": {
            "condition_type": "comparison",
            "source": f"device:{SENSOR}:humidity",
            "operator": "greater_than",
            "threshold": 90,
        },
        "actions": [{"type": "notify", "message": "humidity ${value}"}],
    }
    created = automation_of(twin.world).rules.create_rule(rule)
    sub = twin.world.bus.subscribe([EventKind.DEVICE_TELEMETRY], maxlen=10_000)
    twin.clock.advance(25)
    resp = await control.post(
        "/actions/telemetry_spike", json={"params": {"device": SENSOR, "metric": "humidity", "delta": 60}}
    )
    assert resp.status_code == 200, resp.text
    twin.clock.advance(35)  # t=60
    base = {t: fleet.values_of(SENSOR, t)["humidity"] for t in (20.0, 30.0, 40.0)}
    live = {e.at: e.data["metrics"]["humidity"] for _, e in sub.drain() if e.source == SENSOR}
    assert live[30.0] == round(float(fleet.values(30.0)["humidity"][0]) + 60, 2)
    assert live[20.0] == base[20.0] and live[40.0] == base[40.0]  # one sample only
    assert base[30.0] == live[30.0]  # current values read through the spike too
    assert automation_of(twin.world).rules.get_rule(created.id).trigger_count == 1
    points = {p["timestamp"] - EPOCH: p["value"] for p in await history(automation, auth, metric="humidity")}
    assert points[30] == live[30.0] and points[20] == live[20.0] and points[40] == live[40.0]


async def test_outage_actions_refuse_unknown_devices_and_metrics(control: httpx.AsyncClient) -> None:
    for name, params in (
        ("device_offline", {"device": "cam-01"}),
        ("telemetry_gap", {"device": "nope"}),
        ("telemetry_spike", {"device": "nope", "metric": "humidity", "delta": 1}),
    ):
        resp = await control.post(f"/actions/{name}", json={"params": params})
        assert resp.status_code == 404 and "no simulated sensor" in resp.json()["error"]["message"], name
    resp = await control.post(
        "/actions/telemetry_spike", json={"params": {"device": SENSOR, "metric": "battery", "delta": 1}}
    )
    assert resp.status_code == 400 and "it reports temperature, humidity" in resp.json()["error"]["message"]


async def test_a_snapshot_keeps_the_holes_and_the_link_state(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(15)
    await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    twin.clock.advance(30)
    snap = twin.world.snapshot()
    before = [p["timestamp"] for p in await history(automation, auth)]
    twin.world.restore(snap)
    assert [p["timestamp"] for p in await history(automation, auth)] == before
    resp = await control.post("/actions/device_online", json={"params": {"device": SENSOR}})
    assert resp.status_code == 200, resp.text
    twin.clock.advance(20)
    stamps = [p["timestamp"] - EPOCH for p in await history(automation, auth)]
    assert stamps == [60, 50, 10, 0]


async def test_a_short_outage_is_never_noticed(twin: Twin, control: httpx.AsyncClient) -> None:
    sub = twin.world.bus.subscribe(KINDS, maxlen=10_000)
    await control.post("/actions/device_offline", json={"params": {"device": SENSOR}, "for": 35})
    twin.clock.advance(600)
    mine = [(e.kind, e.at) for e in drain(sub) if e.source == SENSOR]
    assert all(kind is EventKind.DEVICE_TELEMETRY for kind, _ in mine)
    assert [at for _, at in mine][:2] == [40.0, 50.0]


async def test_a_deleted_sensor_cannot_go_offline(twin: Twin, control: httpx.AsyncClient) -> None:
    assert (
        await control.post("/actions/device_delete", json={"params": {"device": SENSOR}})
    ).status_code == 200
    resp = await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"


async def test_back_online_on_a_tick_already_taken_reports_with_the_next_one(
    twin: Twin, control: httpx.AsyncClient
) -> None:
    sub = twin.world.bus.subscribe(KINDS, maxlen=100_000)
    twin.clock.advance(5)
    await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    twin.clock.advance(405)  # noticed offline at 300 after its last report at 0; t=410 is taken
    assert sensors_of(twin.world).groups["env_sensor"].last_sample_at == 410.0
    await control.post("/actions/device_online", json={"params": {"device": SENSOR}})
    twin.clock.advance(15)
    mine = [(e.kind, e.at) for e in drain(sub) if e.source == SENSOR and e.at > 0]
    assert mine == [
        (EventKind.DEVICE_OFFLINE, 300.001),
        (EventKind.DEVICE_TELEMETRY, 420.0),
        (EventKind.DEVICE_ONLINE, 420.0),
    ]


async def test_an_offline_notice_still_to_come_survives_a_restore(
    twin: Twin, control: httpx.AsyncClient
) -> None:
    twin.clock.advance(5)
    await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    twin.clock.advance(100)
    snap = twin.world.snapshot()
    twin.world.restore(snap)
    sub = twin.world.bus.subscribe(KINDS, maxlen=100_000)
    twin.clock.advance(300)
    offline = [e.at for e in drain(sub) if e.source == SENSOR and e.kind is EventKind.DEVICE_OFFLINE]
    assert offline == [300.001]
    twin.world.restore(twin.world.snapshot())  # noticed already: not noticed twice
    twin.clock.advance(100)
    assert not [e for e in drain(sub) if e.kind is EventKind.DEVICE_OFFLINE]
