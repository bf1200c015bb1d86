"""Telemetry over the automation API: every query parameter and numbered rule of the spec."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.conftest import admin_token
from twin.sensors import sensors_of
from twin.serve import Twin, build
from twin.settings import Settings

SENSOR = "env_sensor-0001"
EPOCH = 1_767_225_600
URL = f"/api/devices/{SENSOR}/telemetry"


async def get(client: httpx.AsyncClient, auth: dict[str, str], url: str = URL, **params) -> httpx.Response:
    return await client.get(url, params=params, headers=auth)


async def test_raw_points_are_newest_first_with_row_aggregates(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(3600)
    body = (await get(automation, auth)).json()["data"]
    assert body["device_id"] == SENSOR and body["metrics"] == ["temperature", "humidity"]
    assert body["aggregated"] is False
    assert body["end"] == EPOCH + 3600 and body["start"] == EPOCH + 3600 - 86_400
    temps = body["data"]["temperature"]
    assert len(temps) == 100  # default limit
    assert [p["timestamp"] for p in temps[:3]] == [EPOCH + 3600, EPOCH + 3590, EPOCH + 3580]
    assert all(p["min"] == p["max"] == p["sum"] == p["value"] and p["count"] == 1 for p in temps)
    # the world's past (7 days by default) fills the whole 24 h window, not only the hour since t=0
    assert body["pagination"] == {"offset": 0, "limit": 100, "total": 8641, "next_cursor": EPOCH + 2610}
    fleet = sensors_of(twin.world).groups["env_sensor"]
    assert temps[0]["value"] == float(fleet.values(3600.0)["temperature"][0])


async def test_window_start_end_and_hours(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(3 * 3600)
    windowed = (await get(automation, auth, metric="humidity", start=EPOCH + 100, end=EPOCH + 200)).json()
    points = windowed["data"]["data"]["humidity"]
    assert [p["timestamp"] for p in points] == list(range(EPOCH + 200, EPOCH + 99, -10))
    hours = (await get(automation, auth, metric="humidity", hours=1, limit=5000)).json()["data"]
    assert hours["start"] == EPOCH + 2 * 3600 and hours["pagination"]["total"] == 361
    for bad in (0, 721):
        resp = await get(automation, auth, hours=bad)
        assert resp.status_code == 400, bad
    assert (await get(automation, auth, hours=720)).status_code == 200
    assert (await get(automation, auth, start=EPOCH + 10, end=EPOCH)).status_code == 400
    assert (await get(automation, auth, start=EPOCH, end=EPOCH + 31 * 86_400)).status_code == 400
    assert (await get(automation, auth, hours="x")).status_code == 422


async def test_limit_bounds(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    twin.clock.advance(60_000)
    for bad in (0, 5001, -1):
        resp = await get(automation, auth, limit=bad)
        assert resp.status_code == 400, bad
    full = (await get(automation, auth, metric="temperature", limit=5000)).json()["data"]
    assert len(full["data"]["temperature"]) == 5000
    one = (await get(automation, auth, metric="temperature", limit=1)).json()["data"]
    assert len(one["data"]["temperature"]) == 1


async def test_aggregate_changes_value(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(600)
    since = {"start": EPOCH}  # the ten minutes since t=0, not the past before it
    raw = (await get(automation, auth, metric="temperature", limit=5000, **since)).json()["data"]["data"][
        "temperature"
    ]
    values = np.array([p["value"] for p in raw])
    expected = {
        "avg": values.mean(),
        "min": values.min(),
        "max": values.max(),
        "sum": values.sum(),
        "last": raw[0]["value"],
    }
    for fn, want in expected.items():
        body = (await get(automation, auth, metric="temperature", aggregate=fn, **since)).json()["data"]
        assert body["aggregated"] is True
        (row,) = body["data"]["temperature"]
        assert row["value"] == pytest.approx(want), fn
        assert row["count"] == 61 and row["min"] == values.min() and row["max"] == values.max()
        assert row["sum"] == pytest.approx(values.sum())
        assert body["pagination"]["next_cursor"] is None
    bad = await get(automation, auth, aggregate="median")
    assert bad.status_code == 400 and bad.json()["success"] is False
    assert (await get(automation, auth, aggregate="count")).status_code == 400  # only on /telemetry


async def test_offset_skips_the_newest(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(1000)
    first = (await get(automation, auth, metric="humidity", limit=10)).json()["data"]["data"]["humidity"]
    skipped = (await get(automation, auth, metric="humidity", limit=5, offset=3)).json()["data"]
    assert skipped["data"]["humidity"] == first[3:8]
    assert skipped["pagination"]["offset"] == 3
    assert (await get(automation, auth, offset=-1)).status_code == 400


async def test_cursor_pages_strictly_older_until_null(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(995)  # samples at 0..990: 100 points of each metric
    seen: dict[str, list[int]] = {"temperature": [], "humidity": []}
    cursor = None
    pages = 0
    while True:
        params = {"limit": 30, "start": EPOCH} | ({"cursor": cursor} if cursor is not None else {})
        body = (await get(automation, auth, **params)).json()["data"]
        for metric, points in body["data"].items():
            seen[metric] += [p["timestamp"] for p in points]
        pages += 1
        cursor = body["pagination"]["next_cursor"]
        if cursor is None:
            break
        assert cursor == min(p["timestamp"] for p in body["data"]["temperature"])
    assert pages == 4
    want = list(range(EPOCH + 990, EPOCH - 1, -10))
    assert seen == {"temperature": want, "humidity": want}


@pytest.fixture
def fast_twin(tmp_path: Path) -> Twin:
    scenario = tmp_path / "fast.yaml"
    scenario.write_text(
        "name: fast\nseed: 5\nclock: {mode: step, epoch: 1767225600}\n"
        "fleet:\n  sensors:\n    - type: probe\n      count: 1\n      period: 1\n"
        "      metrics:\n        level: {kind: sine, mean: 5, amplitude: 2, period: 600}\n"
        "  cameras: {count: 0}\n"
    )
    return build(Settings(scenario=scenario, step=True))


async def test_following_next_cursor_over_12000_points(fast_twin: Twin) -> None:
    fast_twin.clock.advance(11_999)  # samples at t = 0 .. 11 999
    transport = httpx.ASGITransport(app=fast_twin.automation_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        stamps: list[int] = []
        cursor = None
        while True:
            params = {"metric": "level", "limit": 5000, "start": EPOCH} | (
                {"cursor": cursor} if cursor else {}
            )
            body = (await get(client, auth, "/api/devices/probe-0001/telemetry", **params)).json()["data"]
            stamps += [p["timestamp"] for p in body["data"]["level"]]
            assert body["pagination"]["total"] == 12_000
            cursor = body["pagination"]["next_cursor"]
            if cursor is None:
                break
    assert stamps == list(range(EPOCH + 11_999, EPOCH - 1, -1))


async def test_bucketed_is_at_most_limit_evenly_spaced(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(86_400)
    for limit in (1, 7, 100, 5000):
        body = (await get(automation, auth, metric="temperature", bucketed="true", limit=limit)).json()[
            "data"
        ]
        points = body["data"]["temperature"]
        assert 0 < len(points) <= limit, limit
        stamps = [p["timestamp"] for p in points]
        assert stamps == sorted(stamps)  # bucketed output is ascending
        assert body["pagination"]["next_cursor"] is None and body["pagination"]["total"] == 8641
        if len(points) > 2:
            gaps = set(np.diff(stamps[1:-1]).tolist())
            assert len(gaps) == 1, limit
        assert sum(p["count"] for p in points) == 8641
    avg = (await get(automation, auth, metric="temperature", bucketed=1, limit=24, aggregate="avg")).json()
    rows = avg["data"]["data"]["temperature"]
    assert all(r["min"] <= r["value"] <= r["max"] for r in rows)
    small = (await get(automation, auth, metric="temperature", bucketed=1, hours=1, limit=500)).json()
    assert len(small["data"]["data"]["temperature"]) == 361  # fewer points than limit: all of them


async def test_unknown_device_is_404(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await get(automation, auth, "/api/devices/nope/telemetry")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    history = await get(automation, auth, "/api/devices/nope/telemetry", history="true")
    assert history.status_code == 404
    assert (await automation.get(URL)).status_code == 401


async def test_poll_survives_a_delete_by_another_client(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    await automation.post(
        "/api/devices",
        json={
            "device_type": "env_sensor",
            "device_id": "lab-1",
            "name": "Lab",
            "adapter_type": "webhook",
            "connection_config": {},
        },
        headers=auth,
    )
    url = "/api/devices/lab-1/telemetry"
    empty = await get(automation, auth, url)
    assert empty.status_code == 200 and empty.json()["data"]["data"] == {"temperature": [], "humidity": []}
    for value in (20.0, 21.0, 22.0):
        await automation.post("/api/devices/lab-1/webhook", json={"temperature": value})
        twin.clock.advance(10)
    polled = (await get(automation, auth, url, metric="temperature")).json()["data"]["data"]["temperature"]
    assert [p["value"] for p in polled] == [22.0, 21.0, 20.0]
    async with httpx.AsyncClient(transport=automation._transport, base_url="http://automation") as other:
        assert (await other.delete("/api/devices/lab-1", headers=auth)).status_code == 200
    gone = await get(automation, auth, url, metric="temperature")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    archived = await get(automation, auth, url, metric="temperature", history="true")
    assert archived.status_code == 200
    assert archived.json()["data"]["data"]["temperature"] == polled
    # A deleted simulated sensor keeps its procedural history up to the deletion.
    twin.clock.advance(100)
    await automation.delete(f"/api/devices/{SENSOR}", headers=auth)
    twin.clock.advance(100)
    assert (await get(automation, auth)).status_code == 404
    old = (await get(automation, auth, metric="temperature", history="true", limit=5000)).json()["data"]
    assert old["data"]["temperature"][0]["timestamp"] == EPOCH + 130


async def test_cross_device_query(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    twin.clock.advance(1000)
    url = "/api/telemetry"
    since = {"start": EPOCH}  # from t=0 on: the past before it is tested elsewhere
    body = (
        await get(automation, auth, url, source=f"device:{SENSOR}", metric="humidity", limit=5, **since)
    ).json()
    data = body["data"]
    assert data["source_id"] == f"device:{SENSOR}" and data["metric"] == "humidity"
    assert data["total_count"] == 101 and data["count"] == 5
    stamps = [p["timestamp"] for p in data["data"]]
    assert stamps == list(range(EPOCH + 960, EPOCH + 1001, 10))  # latest N, oldest first
    assert data["data"][0]["quality"] == 1.0 and data["data"][0]["count"] == 1
    skipped = (await get(automation, auth, url, source=SENSOR, metric="humidity", limit=5, offset=2)).json()
    assert [p["timestamp"] for p in skipped["data"]["data"]] == list(range(EPOCH + 940, EPOCH + 981, 10))
    counted = (
        await get(automation, auth, url, source=SENSOR, metric="humidity", aggregate="count", **since)
    ).json()
    assert counted["data"]["value"] == 101 and counted["data"]["aggregation"] == "count"
    mx = (await get(automation, auth, url, source=SENSOR, metric="humidity", aggregate="max")).json()["data"]
    assert mx["value"] == max(
        p["value"]
        for p in (await get(automation, auth, url, source=SENSOR, metric="humidity", limit=5000)).json()[
            "data"
        ]["data"]
    )
    windowed = await get(automation, auth, url, source=SENSOR, metric="humidity", start=EPOCH, end=EPOCH + 50)
    assert windowed.json()["data"]["total_count"] == 6
    assert (
        await get(automation, auth, url, source=SENSOR, metric="humidity", aggregate="mode")
    ).status_code == 400
    assert (await get(automation, auth, url, metric="humidity")).status_code == 400
    assert (await get(automation, auth, url, source=SENSOR)).status_code == 400
    assert (await get(automation, auth, url, source="nope", metric="x")).status_code == 404
    assert (await get(automation, auth, url, source=SENSOR, metric="humidity", limit=5001)).status_code == 400
    assert (await automation.get(url, params={"source": SENSOR, "metric": "humidity"})).status_code == 401


async def test_summary_per_metric_over_the_last_hours(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(7200)
    url = f"{URL}/summary"
    body = (await get(automation, auth, url, hours=1)).json()["data"]
    assert body["device_id"] == SENSOR and body["end"] == EPOCH + 7200 and body["start"] == EPOCH + 3600
    temp = body["summary"]["temperature"]
    assert temp["count"] == 361 and temp["current_timestamp"] == EPOCH + 7200  # every 10 s, inclusive
    assert temp["min"] <= temp["avg"] <= temp["max"] and temp["data_type"] == "float"
    raw = await get(automation, auth, metric="temperature", start=EPOCH + 3600, end=EPOCH + 7200, limit=5000)
    values = [p["value"] for p in raw.json()["data"]["data"]["temperature"]]
    assert temp["current"] == values[0] and temp["max"] == max(values) and temp["min"] == min(values)
    assert abs(temp["avg"] - sum(values) / len(values)) < 1e-9
    assert set(body["summary"]) == {"temperature", "humidity"}
    for bad in ({"hours": 0}, {"hours": 721}, {"hours": "x"}):
        resp = await get(automation, auth, url, **bad)
        assert resp.status_code in (400, 422) and resp.json()["success"] is False, bad
    unknown = await get(automation, auth, "/api/devices/nope/telemetry/summary")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    assert (await automation.get(url)).status_code == 401
