"""Retention: cleanup deletes stored (pushed) samples older than the retention, on demand and as a
periodic job on the world clock; simulated sensor history is cut at the same window."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import admin_token
from twin.automation.server import automation_of
from twin.serve import Twin
from twin.store import Store

EPOCH = 1_767_225_600
HOUR = 3600
DEVICE = "lab-1"
SENSOR = "env_sensor-0001"


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {await admin_token(automation)}"}
    body = {"device_type": "env_sensor", "name": "Lab", "adapter_type": "webhook", "connection_config": {}}
    resp = await automation.post("/api/devices", json={**body, "device_id": DEVICE}, headers=headers)
    assert resp.status_code == 200, resp.text
    return headers


async def push(client: httpx.AsyncClient, ts: float, **data) -> None:
    resp = await client.post(f"/api/devices/{DEVICE}/webhook", json={"data": data, "timestamp": ts})
    assert resp.status_code == 200, resp.text


async def put_retention(client: httpx.AsyncClient, auth: dict[str, str], **body) -> None:
    resp = await client.put("/api/settings/retention", json=body, headers=auth)
    assert resp.status_code == 200, resp.text


async def cleanup(client: httpx.AsyncClient, auth: dict[str, str]) -> dict:
    resp = await client.post("/api/settings/retention/cleanup", headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def stamps(twin: Twin, metric: str = "temperature") -> list[float]:
    return [ts for ts, _ in twin.world.store.sample_numbers(DEVICE, metric, 0, 1e12)]


# The store ---------------------------------------------------------------------------------------
def test_store_deletes_before_a_cutoff_optionally_by_metric_and_device() -> None:
    store = Store()
    for device in ("a", "b"):
        store.put_samples(device, [(m, ts, 1.0, None) for m in ("t", "h") for ts in (10.0, 20.0, 30.0)])
    assert store.all_sample_metrics() == ["h", "t"]
    assert store.delete_samples_before(20.0, metrics=["t"], device_ids=["a"]) == 1
    assert store.delete_samples_before(20.0, metrics=[]) == 0  # an empty list restricts to nothing
    assert store.delete_samples_before(30.0, device_ids=["b"]) == 4
    assert store.delete_samples_before(25.0) == 3  # a.t@20, a.h@10, a.h@20; ts == cutoff is kept
    assert store.sample_count("a", "t", 0, 100) == 1 and store.sample_count("a", "h", 0, 100) == 1
    assert store.sample_count("b", "t", 0, 100) == 1


# Cleanup on demand ---------------------------------------------------------------------------------
async def test_cleanup_deletes_pushed_samples_older_than_the_retention(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await push(automation, EPOCH - 800 * HOUR, temperature=1.0)
    await push(automation, EPOCH - 100 * HOUR, temperature=2.0, snapshot="data:image/png;base64,AA==")
    await push(automation, EPOCH - 10 * HOUR, temperature=3.0, snapshot="data:image/png;base64,AB==")
    twin.clock.advance(60)  # before the periodic job's first run at 1 h
    result = await cleanup(automation, auth)
    now = EPOCH + 60
    assert result == {
        "success": True,
        "message": "Retention cleanup completed",
        "ran_at": now,
        "default_cutoff": now - 720 * HOUR,
        "image_cutoff": now - 72 * HOUR,
        "deleted": 2,  # the 800 h temperature and the 100 h snapshot (image retention: 72 h)
    }
    assert stamps(twin) == [EPOCH - 100 * HOUR, EPOCH - 10 * HOUR]
    assert twin.world.store.sample_count(DEVICE, "snapshot", 0, 1e12) == 1
    assert (await cleanup(automation, auth))["deleted"] == 0
    # The telemetry API no longer returns what was deleted.
    resp = await automation.get(
        f"/api/devices/{DEVICE}/telemetry",
        params={"metric": "temperature", "start": EPOCH - 900 * HOUR, "end": EPOCH - 700 * HOUR},
        headers=auth,
    )
    assert resp.status_code == 200 and resp.json()["data"]["pagination"]["total"] == 0


async def test_null_retention_keeps_forever(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await put_retention(automation, auth, default_retention=None, image_retention=None)
    await push(automation, EPOCH - 100_000 * HOUR, temperature=1.0, frame="data:image/png;base64,AA==")
    result = await cleanup(automation, auth)
    assert result["default_cutoff"] is None and result["image_cutoff"] is None and result["deleted"] == 0
    twin.clock.advance(48 * HOUR)  # the periodic job keeps it too
    assert stamps(twin) == [EPOCH - 100_000 * HOUR]
    assert twin.world.store.sample_count(DEVICE, "frame", 0, 1e12) == 1


async def test_manual_cleanup_runs_even_when_disabled(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await put_retention(automation, auth, enabled=False, default_retention=1)
    await push(automation, EPOCH - 2 * HOUR, temperature=1.0)
    assert (await cleanup(automation, auth))["deleted"] == 1


# The periodic job ----------------------------------------------------------------------------------
async def test_periodic_job_deletes_on_the_world_clock(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await put_retention(automation, auth, default_retention=1)
    await push(automation, EPOCH, temperature=1.0)
    await push(automation, EPOCH + 30 * 60, temperature=2.0)
    twin.clock.advance(HOUR)  # runs at 1 h: cutoff = EPOCH, nothing strictly older
    assert stamps(twin) == [EPOCH, EPOCH + 30 * 60]
    twin.clock.advance(HOUR)  # runs at 2 h: cutoff = EPOCH + 1 h
    assert stamps(twin) == []
    assert automation_of(twin.world).retention.runs == 2


async def test_periodic_job_follows_interval_hours(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await put_retention(automation, auth, interval_hours=6, default_retention=1)
    await push(automation, EPOCH, temperature=1.0)
    twin.clock.advance(5 * HOUR)
    assert stamps(twin) == [EPOCH] and automation_of(twin.world).retention.runs == 0
    twin.clock.advance(HOUR)
    assert stamps(twin) == [] and automation_of(twin.world).retention.runs == 1


async def test_disabling_stops_the_periodic_job(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await put_retention(automation, auth, enabled=False, default_retention=1)
    await push(automation, EPOCH - 5 * HOUR, temperature=1.0)
    twin.clock.advance(10 * HOUR)
    assert stamps(twin) == [EPOCH - 5 * HOUR] and automation_of(twin.world).retention.runs == 0
    await put_retention(automation, auth, enabled=True)  # read afresh: applies within the hour
    twin.clock.advance(HOUR)
    assert stamps(twin) == [] and automation_of(twin.world).retention.runs == 1


# Simulated sensors -----------------------------------------------------------------------------------
async def test_simulated_history_is_cut_at_the_retention_window(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    url = f"/api/devices/{SENSOR}/telemetry"
    twin.clock.advance(3 * HOUR)
    params = {"metric": "temperature", "hours": 3, "limit": 5000}

    async def total() -> int:
        resp = await automation.get(url, params=params, headers=auth)
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]["pagination"]["total"]

    assert await total() == 3 * 360 + 1  # a 10 s period, both ends inclusive
    await put_retention(automation, auth, default_retention=1)
    assert await total() == 360 + 1
    source = await automation.get(
        "/api/telemetry",
        params={
            "source": f"device:{SENSOR}",
            "metric": "temperature",
            "start": EPOCH,
            "end": EPOCH + 3 * HOUR,
        },
        headers=auth,
    )
    assert source.status_code == 200 and source.json()["data"]["total_count"] == 360 + 1
    await put_retention(automation, auth, default_retention=None)
    assert await total() == 3 * 360 + 1


# Validation and auth -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"interval_hours": 0}, 400),
        ({"default_retention": 0}, 400),
        ({"image_retention": -5}, 400),
        ({"interval_hours": None}, 422),
        ({"default_retention": "forever"}, 422),
        ({"enabled": "yes"}, 422),
    ],
)
async def test_bad_values_are_refused_and_change_nothing(
    automation: httpx.AsyncClient, auth: dict[str, str], body: dict, status: int
) -> None:
    resp = await automation.put("/api/settings/retention", json=body, headers=auth)
    assert resp.status_code == status, resp.text
    current = (await automation.get("/api/settings/retention", headers=auth)).json()["data"]
    assert current == {"enabled": True, "interval_hours": 1, "default_retention": 720, "image_retention": 72}


async def test_cleanup_needs_auth(twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await push(automation, EPOCH - 800 * HOUR, temperature=1.0)
    resp = await automation.post("/api/settings/retention/cleanup")
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"
    bad = await automation.post("/api/settings/retention/cleanup", headers={"Authorization": "Bearer x.y.z"})
    assert bad.status_code == 401
    assert stamps(twin) == [EPOCH - 800 * HOUR]  # nothing was deleted
