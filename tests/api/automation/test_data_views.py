"""Data views: the data explorer's unified sources (every simulated metric, extension metrics,
transform outputs), extension metrics pushed and read back, telemetry and device statistics, the
resources rules can use, and images devices send (stored in the world, served by path)."""

from __future__ import annotations

import base64
import dataclasses
from pathlib import Path

import httpx

from tests.api.support import assert_error, data
from tests.conftest import _client, admin_token
from twin.automation.server import automation_of
from twin.sensors import sensors_of
from twin.serve import Twin, build
from twin.settings import Settings

SENSOR = "env_sensor-0001"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
) + bytes(64)  # a 1x1 PNG, padded past the 100 characters of base64 the server looks at


FORMAT = "invalid path format, expected: /api/images/device_id/metric/timestamp.ext"


# Data sources ---------------------------------------------------------------------------------------
async def test_the_data_explorer_lists_every_simulated_metric(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    twin.clock.advance(60)
    page = data(await automation.get("/api/data/sources?skip_telemetry=true&limit=5000", headers=auth))
    ids = [r["id"] for r in page["data"]]
    assert ids == sorted(ids) and page["total"] == len(ids)
    simulated = {
        f"device:{d}:{m.name}"
        for d, fleet in sensors_of(twin.world).by_device.items()
        for m in automation_of(twin.world).device_types.get(fleet.group.device_type).metrics
    }
    assert simulated <= set(ids)
    assert {"extension:weather-forecast:temperature_c", "extension:camera-stream:objects_in_view"} <= set(ids)
    assert all(r["current_value"] is None for r in page["data"])  # skip_telemetry
    assert ["env_sensor-0001", "env_sensor-0001"] in page["source_options"]

    first = data(await automation.get("/api/data/sources?source_type=device&limit=1", headers=auth))
    (row,) = first["data"]
    assert row == {
        "id": "device:env_sensor-0001:humidity", "source_type": "device", "source_name": SENSOR,
        "source_display_name": SENSOR, "field": "humidity", "field_display_name": "Humidity",
        "data_type": "float", "unit": row["unit"], "description": None,
        "current_value": row["current_value"], "last_update": 1767225660, "quality": None,
    }  # fmt: skip
    assert isinstance(row["current_value"], float)
    assert first["total"] == len(simulated)
    assert all(o[0].startswith("env_sensor") for o in first["source_options"])

    ext = data(await automation.get("/api/data/sources?source_type=extension&search=HUMID", headers=auth))
    assert [r["id"] for r in ext["data"]] == ["extension:weather-forecast:humidity"]
    only = data(await automation.get(f"/api/data/sources?source={SENSOR}", headers=auth))
    assert {r["field"] for r in only["data"]} == {"temperature", "humidity"}
    paged = data(await automation.get("/api/data/sources?offset=2&limit=2", headers=auth))
    assert [r["id"] for r in paged["data"]] == ids[2:4]
    assert data(await automation.get("/api/data/sources?offset=100000", headers=auth))["data"] == []
    capped = data(await automation.get("/api/data/sources?limit=1000", headers=auth))
    assert len(capped["data"]) == min(100, len(ids))
    for bad in ("limit=-1", "offset=x", "skip_telemetry=maybe"):
        assert_error(await automation.get(f"/api/data/sources?{bad}", headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/data/sources"), 401, "UNAUTHORIZED")


async def test_virtual_metrics_and_pushed_values(automation: httpx.AsyncClient, auth: dict) -> None:
    body = {"data": {"temperature": 22.5, "door": "open"}}
    assert (await automation.post(f"/api/devices/{SENSOR}/webhook", json=body)).status_code == 200
    rows = data(await automation.get(f"/api/data/sources?source={SENSOR}", headers=auth))["data"]
    door = next(r for r in rows if r["field"] == "door")
    assert door["description"] == "Virtual metric" and door["current_value"] == "open"
    assert door["data_type"] == "string" and door["last_update"] == 1767225600


# Extension metrics ----------------------------------------------------------------------------------
async def test_extension_metrics_push_and_query(automation: httpx.AsyncClient, auth: dict) -> None:
    sources = data(await automation.get("/api/extensions/weather-forecast/data-sources", headers=auth))
    assert sources[0] == {
        "id": "extension:weather-forecast:temperature_c", "extension_id": "weather-forecast", "command": "",
        "field": "temperature_c", "display_name": "Weather Forecast: Temperature", "data_type": "Float",
        "unit": "°C", "description": "Temperature", "aggregatable": True, "default_agg_func": "last",
    }  # fmt: skip
    assert_error(await automation.get("/api/extensions/nope/data-sources", headers=auth), 404, "NOT_FOUND")

    url = "/api/extensions/weather-forecast/push-metrics"
    pushed = data(await automation.post(url, json={"metrics": {"temperature_c": 18.5, "raw": {"a": 1}}},
                                        headers=auth))  # fmt: skip
    assert pushed == {"ok": True, "stored": 2, "total": 2}
    points = data(
        await automation.get("/api/extensions/weather-forecast/metrics/temperature_c/data", headers=auth)
    )
    assert points == {
        "source_id": "extension:weather-forecast:temperature_c", "extension_id": "weather-forecast",
        "metric": "temperature_c", "start": 1767225600 - 86400, "end": 1767225600, "count": 1,
        "data": [{"timestamp": 1767225600, "value": 18.5, "quality": None}],
    }  # fmt: skip
    raw = data(await automation.get("/api/extensions/weather-forecast/metrics/raw/data", headers=auth))
    assert raw["data"][0]["value"] == '{"a":1}'
    explorer = data(await automation.get("/api/data/sources?search=weather-forecast:temp", headers=auth))
    assert explorer["data"][0]["current_value"] == 18.5
    window = "start=0&end=10"
    assert data(await automation.get(f"/api/extensions/weather-forecast/metrics/x/data?{window}",
                                     headers=auth))["count"] == 0  # fmt: skip
    for body, message in [
        ({}, "Missing 'metrics' field"),
        ([1], "Missing 'metrics' field"),
        ({"metrics": [1]}, "'metrics' must be an object"),
        ({"metrics": {}}, "'metrics' is empty"),
        ({"metrics": {f"m{i}": i for i in range(101)}}, "Too many metrics: 101 (max 100)"),
    ]:
        resp = await automation.post(url, json=body, headers=auth)
        assert_error(resp, 400, "BAD_REQUEST")
        assert resp.json()["error"]["message"] == message
    bad_json = await automation.post(url, content=b"{", headers={**auth, "content-type": "application/json"})
    assert_error(bad_json, 400, "BAD_REQUEST")
    assert_error(await automation.post(url, json={"metrics": {"a": 1}}), 401, "UNAUTHORIZED")


# Statistics -----------------------------------------------------------------------------------------
async def test_telemetry_and_device_stats(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    empty = data(await automation.get("/api/telemetry/stats", headers=auth))
    assert empty["performance"]["read_count"] == 0 and empty["health"]["status"] == "healthy"
    twin.clock.advance(600)
    for window in ("?start=1767225600", ""):  # the last 10 minutes (cached), the default 24 hours
        assert (
            await automation.get(f"/api/devices/{SENSOR}/telemetry{window}", headers=auth)
        ).status_code == 200
    stats = data(await automation.get("/api/telemetry/stats", headers=auth))
    perf = stats["performance"]
    assert perf["read_count"] == 2 and perf["write_count"] > 0 and perf["cache_hit_rate"] == 0.5
    assert perf["performance_tier"] == "excellent" and 0 < perf["avg_read_ms"] < 10
    assert stats["health"] == {
        "status": "healthy",
        "recommendations": ["Performance is within acceptable ranges."],
    }
    assert stats == data(await automation.get("/api/telemetry/stats", headers=auth))  # deterministic

    automation_of(twin.world).outages.take_offline("env_sensor-0002")
    twin.clock.advance(3600)
    devices = data(await automation.get("/api/stats/devices", headers=auth))["stats"]
    assert (devices["total_devices"], devices["online_devices"], devices["offline_devices"]) == (3, 2, 1)
    row = next(d for d in devices["devices"] if d["device_id"] == "env_sensor-0002")
    assert row == {"device_id": "env_sensor-0002", "device_type": "env_sensor", "name": "env_sensor-0002",
                   "online": False, "metrics_count": 2, "last_seen": row["last_seen"]}  # fmt: skip
    assert 1767225600 < row["last_seen"] <= 1767225600 + 600
    assert_error(await automation.get("/api/stats/devices"), 401, "UNAUTHORIZED")
    assert_error(await automation.get("/api/telemetry/stats"), 401, "UNAUTHORIZED")


async def test_rule_resources(automation: httpx.AsyncClient, auth: dict) -> None:
    resources = data(await automation.get("/api/rules/resources", headers=auth))
    assert [c["id"] for c in resources["message_categories"]] == ["alert", "system", "business"]
    device = next(d for d in resources["devices"] if d["id"] == SENSOR)
    assert device["online"] is True and device["device_type"] == "env_sensor"
    assert {m["name"]: m["data_type"] for m in device["metrics"]} == {
        "temperature": "number",
        "humidity": "number",
    }
    command = next(c for c in device["commands"] if c["name"] == "set_interval")
    assert (
        command["parameters"][0]["param_type"] == "Integer" and command["parameters"][0]["required"] is True
    )
    assert_error(await automation.get("/api/rules/resources"), 401, "UNAUTHORIZED")


# Images ---------------------------------------------------------------------------------------------
async def test_images_devices_send(automation: httpx.AsyncClient, auth: dict) -> None:
    encoded = base64.b64encode(PNG).decode()
    body = {"data": {"snapshot": f"data:image/png;base64,{encoded}", "label": "x" * 200}}
    assert (await automation.post(f"/api/devices/{SENSOR}/webhook", json=body)).status_code == 200
    current = data(await automation.get(f"/api/devices/{SENSOR}/current", headers=auth))
    url = current["metrics"]["snapshot"]["value"]
    assert url.startswith(f"/api/images/{SENSOR}/snapshot/1767225600_") and url.endswith(".png")
    assert current["metrics"]["label"]["value"] == "x" * 200  # text is not an image
    image = await automation.get(url)  # public, as <img src> loads it
    assert image.status_code == 200 and image.content == PNG
    assert image.headers["content-type"] == "image/png"
    assert image.headers["cache-control"] == "public, max-age=2592000, immutable"
    again = {"data": {"snapshot": encoded + "\n"}}  # raw base64, MIME-folded: the same frame, the same URL
    await automation.post(f"/api/devices/{SENSOR}/webhook", json=again)
    after = data(await automation.get(f"/api/devices/{SENSOR}/current", headers=auth))
    assert after["metrics"]["snapshot"]["value"] == url
    for path, status, text in [
        ("/api/images/a/b", 400, FORMAT),
        (
            "/api/images/a/b/c/d.png",
            400,
            FORMAT,
        ),
        ("/api/images/.a/b/c.png", 400, "invalid device_id or metric"),
        ("/api/images/a/b/c.txt", 400, "invalid filename"),
        ("/api/images/a/b/c..png", 400, "invalid filename"),
        ("/api/images/a/b/c.png", 404, "image not found"),
        ("/api/images/a%20b/c/x.png", 400, "invalid device_id or metric"),
        ("/api/images/..%2F..%2Fetc/passwd/x.png", 400, FORMAT),
    ]:
        resp = await automation.get(path)
        assert (resp.status_code, resp.text) == (status, text), path
        assert resp.headers["content-type"].startswith("text/plain")


async def test_images_survive_a_restart(tmp_path: Path, settings: Settings) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path)
    twin = build(durable)
    async with _client(twin.automation_app, "http://automation") as client:
        body = {"data": {"snapshot": "data:image/png;base64," + base64.b64encode(PNG).decode()}}
        await client.post(f"/api/devices/{SENSOR}/webhook", json=body)
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        url = data(await client.get(f"/api/devices/{SENSOR}/current", headers=auth))["metrics"]["snapshot"][
            "value"
        ]
    twin.world.store.close()
    again = build(durable)
    async with _client(again.automation_app, "http://automation") as client:
        assert (await client.get(url)).content == PNG
