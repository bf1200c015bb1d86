"""Transforms over HTTP: they run on the world clock on the telemetry of the devices they name, their
outputs are stored like telemetry (read back by ``GET /telemetry?source=transform:<id>`` and a
device's current values), recorded and registered as data sources; the test routes, the code test
and the older declarative operations; refusals in the vendor's envelope."""

from __future__ import annotations

import httpx
import pytest

from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings

DEVICE = "env_sensor-0001"
FAHRENHEIT = "return {f: input.temperature * 9 / 5 + 32}"


async def create(client: httpx.AsyncClient, auth: dict, scope: object = None, **definition) -> str:
    body = {
        "name": "Fahrenheit",
        "type": "transform",
        "definition": {"scope": scope or {"device": DEVICE}, "js_code": FAHRENHEIT, **definition},
    }
    resp = await client.post("/api/automations", json=body, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["automation"]["id"]


async def series(client: httpx.AsyncClient, auth: dict, source: str, metric: str) -> list[dict]:
    resp = await client.get("/api/telemetry", params={"source": source, "metric": metric}, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["data"]


async def test_a_transform_runs_on_its_devices_telemetry_as_the_clock_advances(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    tid = await create(automation, auth)
    assert await series(automation, auth, f"transform:{tid}", "transform.f") == []
    twin.clock.advance(35)

    produced = await series(automation, auth, f"transform:{tid}", "transform.f")
    source = {p["timestamp"]: p["value"] for p in await series(automation, auth, DEVICE, "temperature")}
    assert [p["timestamp"] for p in produced] == [1767225600, 1767225610, 1767225620, 1767225630]
    for point in produced:  # each output is the device's own sample of that tick, converted
        assert point["value"] == pytest.approx(source[point["timestamp"]] * 9 / 5 + 32)
        assert point["quality"] == 1.0

    current = (await automation.get(f"/api/devices/{DEVICE}/current", headers=auth)).json()["data"]
    assert current["metrics"]["transform.f"]["is_virtual"] is True
    assert current["metrics"]["transform.f"]["value"] == produced[-1]["value"]
    other = (await automation.get("/api/devices/env_sensor-0002/current", headers=auth)).json()["data"]
    assert "transform.f" not in other["metrics"]  # the scope names one device

    runs = (await automation.get(f"/api/automations/{tid}/executions?limit=2", headers=auth)).json()["data"]
    assert runs["count"] == 2 and runs["automation_id"] == tid
    assert runs["executions"][0] == {
        "id": runs["executions"][0]["id"],
        "automation_id": tid,
        "automation_type": "transform",
        "started_at": 1767225630100,
        "ended_at": 1767225630100,
        "status": "completed",
        "error": None,
        "output": {"metric_count": 1, "warning_count": 0},
    }
    dto = (await automation.get(f"/api/automations/{tid}", headers=auth)).json()["data"]["automation"]
    assert (dto["execution_count"], dto["last_executed"]) == (1, 1767225600)  # written once a minute
    twin.clock.advance(60)
    dto = (await automation.get(f"/api/automations/{tid}", headers=auth)).json()["data"]["automation"]
    assert (dto["execution_count"], dto["last_executed"]) == (2, 1767225660)


async def test_the_same_world_produces_the_same_outputs(settings: Settings) -> None:
    """Scripts see the world's clock and a seeded ``Math.random``: a second run of the same world
    produces the same outputs."""
    outputs = []
    for _ in range(2):
        twin = build(settings)
        async with _client(twin.automation_app, "http://automation") as client:
            auth = {"Authorization": f"Bearer {await admin_token(client)}"}
            code = "return {r: Math.random(), t: Date.now(), v: input_raw.values.humidity}"
            tid = await create(client, auth, js_code=code)
            twin.clock.advance(25)
            outputs.append([await series(client, auth, f"transform:{tid}", f"transform.{m}") for m in "rtv"])
    assert outputs[0] == outputs[1]
    randoms, times, _ = outputs[0]
    assert len(randoms) == 3 and len({p["value"] for p in randoms}) == 3
    assert [p["value"] for p in times] == [1767225600100.0, 1767225610100.0, 1767225620100.0]


async def test_scope_prefixes_and_enabling(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    by_type = await create(automation, auth, scope={"device_type": "env_sensor"}, output_prefix="conv")
    off = await create(automation, auth, scope="global")
    resp = await automation.post(f"/api/automations/{off}/enable", json={"enabled": False}, headers=auth)
    assert resp.json()["data"] == {"message": "Automation disabled", "enabled": False}
    twin.clock.advance(5)
    current = (await automation.get("/api/devices/env_sensor-0003/current", headers=auth)).json()["data"]
    assert "conv.env_sensor.f" in current["metrics"] and "transform.f" not in current["metrics"]
    assert (await automation.get(f"/api/automations/{off}/executions", headers=auth)).json()["data"][
        "count"
    ] == 0

    await automation.post(f"/api/automations/{off}/enable", json={"enabled": True}, headers=auth)
    twin.clock.advance(10)
    assert len(await series(automation, auth, f"transform:{off}", "transform.f")) == 1
    sources = await automation.get("/api/automations/transforms/data-sources", headers=auth)
    ids = {s["transform_id"] for s in sources.json()["data"]["data_sources"]}
    assert ids == {by_type, off}


async def test_pushed_samples_run_transforms_and_outputs_never_feed_back(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    device = {"device_type": "env_sensor", "name": "Lab", "adapter_type": "webhook", "connection_config": {}}
    resp = await automation.post("/api/devices", json={**device, "device_id": "lab-1"}, headers=auth)
    assert resp.status_code == 200, resp.text
    tid = await create(automation, auth, scope={"device": "lab-1"}, js_code="return input.level * 2")
    await automation.post("/api/devices/lab-1/metrics", json={"metric": "level", "value": 20.5}, headers=auth)
    twin.clock.advance(1)
    assert [p["value"] for p in await series(automation, auth, f"transform:{tid}", "transform")] == [41.0]
    twin.clock.advance(60)  # its own output is a virtual metric: it does not run the transform again
    assert (await automation.get(f"/api/automations/{tid}/executions", headers=auth)).json()["data"][
        "count"
    ] == 1


async def test_process_and_test_return_outputs_without_storing_them(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    tid = await create(automation, auth)
    body = {"device_id": DEVICE, "data": {"temperature": 100, "humidity": 1}}
    resp = await automation.post("/api/automations/transforms/process", json=body, headers=auth)
    assert resp.json()["data"] == {
        "success": True,
        "metrics": [
            {
                "device_id": DEVICE,
                "transform_id": tid,
                "metric": "transform.f",
                "value": 212.0,
                "timestamp": 1767225600,
                "quality": 1.0,
            }
        ],
        "count": 1,
        "warnings": [],
    }
    resp = await automation.post(f"/api/automations/transforms/{tid}/test", json=body, headers=auth)
    assert resp.json()["data"]["transform_id"] == tid and resp.json()["data"]["count"] == 1
    elsewhere = {**body, "device_id": "env_sensor-0002"}  # outside the scope: nothing
    resp = await automation.post(f"/api/automations/transforms/{tid}/test", json=elsewhere, headers=auth)
    assert resp.json()["data"]["count"] == 0
    assert await series(automation, auth, f"transform:{tid}", "transform.f") == []
    source = f"transform:{tid}:transform.f"
    resp = await automation.get(f"/api/automations/transforms/data-sources/{source}", headers=auth)
    assert resp.json()["data"]["data_source_id"] == source and resp.json()["data"]["data_type"] == "float"
    resp = await automation.get(f"/api/automations/transforms/{tid}/data-sources", headers=auth)
    assert resp.json()["data"]["count"] == 1 and resp.json()["data"]["data_sources"][0]["enabled"] is True
    runs = (await automation.get(f"/api/automations/{tid}/executions", headers=auth)).json()["data"]
    assert runs["count"] == 2  # process and test; outside its scope a transform does not run


async def test_test_code(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/automations/transforms/test-code"
    code = "const n = {}; for (const d of input) n[d.cls] = (n[d.cls] || 0) + 1; return n;"
    data = {"detections": [{"cls": "fish"}, {"cls": "shrimp"}, {"cls": "fish"}]}
    resp = await automation.post(
        url, json={"code": code, "input_data": data, "output_prefix": "count"}, headers=auth
    )
    out = resp.json()["data"]
    assert out["success"] is True and out["output"] == out["output_with_prefix"] == {
        "fish": 2.0,
        "shrimp": 1.0,
    }
    assert [m["metric"] for m in out["metrics"]] == ["count.fish", "count.shrimp"] and out["count"] == 2
    assert out["metrics"][0]["device_id"] == "test_device"

    resp = await automation.post(url, json={"code": "return Date.now()", "input_data": {}}, headers=auth)
    assert resp.json()["data"]["output"] == {"transform": 1767225600000.0}  # the world clock
    mock = "return extensions.invoke('weather', 'get', {data: 1}).result"
    resp = await automation.post(url, json={"code": mock, "input_data": {}}, headers=auth)
    assert resp.json()["data"]["output"] == {"transform": "mock_result_from_weather"}
    lone = await automation.post(url, json={"code": "return '\\ud800x'", "input_data": {}}, headers=auth)
    assert lone.json()["data"]["output"] == {"transform": "\ufffdx"}  # text as Rust holds it
    for code, error in (
        ("let o = 1; for (let i = 0; i < 300; i++) o = [o]; return o", "Failed to convert JS value to JSON"),
        ("return foo.bar", "ReferenceError: 'foo' is not defined"),
        ("return (", "SyntaxError"),
        ("throw new Error('nope')", "Error: nope"),
    ):
        resp = await automation.post(url, json={"code": code, "input_data": {}}, headers=auth)
        assert resp.status_code == 200 and resp.json()["data"]["success"] is False
        assert resp.json()["data"]["error"].startswith("Transform error in JsTransform: ")
        assert error in resp.json()["data"]["error"]


async def test_a_script_that_never_ends_is_stopped(automation: httpx.AsyncClient, auth: dict) -> None:
    body = {"code": "while (true) {}", "input_data": {}}
    resp = await automation.post("/api/automations/transforms/test-code", json=body, headers=auth)
    assert resp.json()["data"]["success"] is False and "interrupted" in resp.json()["data"]["error"]


async def test_scripts_call_extensions(automation: httpx.AsyncClient, auth: dict) -> None:
    """Each ``extensions.invoke`` written in a script is run before it (params as JSON or as an
    expression of the inputs); a failing call is an ``error`` object, as on the server."""
    code = (
        "const now = extensions.invoke('weather-forecast', 'get_current', {city: input_raw.city});"
        "const none = extensions.invoke('weather-forecast', 'get_forecast', {\"city\": \"\"});"
        "return {t: now.temperature_c, error: none.error};"
    )
    tid = await create(automation, auth, js_code=code)
    body = {"device_id": DEVICE, "data": {"city": "Oslo", "x": 1}}
    resp = await automation.post(f"/api/automations/transforms/{tid}/test", json=body, headers=auth)
    command = {"city": "Oslo"}
    direct = await automation.post(
        "/api/extensions/weather-forecast/command",
        json={"command": "get_current", "args": command},
        headers=auth,
    )
    metrics = {m["metric"]: m["value"] for m in resp.json()["data"]["metrics"]}
    assert metrics == {"transform.t": direct.json()["data"]["output"]["temperature_c"],
                       "transform.error": "city must not be empty"}  # fmt: skip


async def test_declarative_operations(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    operations = [
        {"op_type": "extract", "from": "$.values.temperature", "output": "t"},
        {
            "op_type": "array_aggregation",
            "json_path": "$.readings",
            "aggregation": "mean",
            "output_metric": "avg",
        },
        {"op_type": "reduce", "over": "$.readings", "using": "max", "value": "$", "output": "top"},
        {"op_type": "map", "over": "$.readings", "template": "{{item}}", "output": "m"},
    ]
    body = {"name": "Ops", "definition": {"scope": "global", "operations": operations}}
    created = (await automation.post("/api/automations", json=body, headers=auth)).json()["data"][
        "automation"
    ]
    assert created["complexity"] == 2  # the highest of its operations
    data = {"values": {"temperature": "21.5"}, "readings": [1, 2, 6]}
    resp = await automation.post(
        "/api/automations/transforms/process", json={"device_id": DEVICE, "data": data}, headers=auth
    )
    out = resp.json()["data"]
    assert {m["metric"]: m["value"] for m in out["metrics"]} == {"t": 21.5, "avg": 3.0, "top": 6.0}
    assert out["warnings"] == [
        "Operation failed: Transform error in map: this kind of operation is not simulated by the twin"
    ]
    metrics = (await automation.get("/api/automations/transforms/metrics", headers=auth)).json()["data"]
    label = f"{created['id']}:Ops"
    assert metrics == {"metrics": {"t": [label], "avg": [label], "top": [label], "m": [label]}, "count": 4}

    window = {"duration_secs": 60, "offset_secs": 0}
    series_op = {"op_type": "time_series_aggregation", "source_metric": "humidity", "window": window,
                 "aggregation": "count", "output_metric": "samples"}  # fmt: skip
    body = {"name": "Window", "definition": {"scope": {"device": DEVICE}, "operations": [series_op]}}
    tid = (await automation.post("/api/automations", json=body, headers=auth)).json()["data"]["automation"][
        "id"
    ]
    twin.clock.advance(45)
    counts = [p["value"] for p in await series(automation, auth, f"transform:{tid}", "samples")]
    # the device's samples in the minute before each run: a full minute from the first run on, as the
    # world has a past before t=0
    assert counts == [6.0, 6.0, 6.0, 6.0, 6.0]


async def test_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/automations/transforms/process"
    assert_error(await automation.post(url, json={"data": {}}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"device_id": "d"}, headers=auth), 422, "VALIDATION_ERROR")
    bad = {"device_id": 5, "data": {}}
    assert_error(await automation.post(url, json=bad, headers=auth), 422, "VALIDATION_ERROR")
    bad = {"device_id": "d", "data": {}, "timestamp": "now"}
    assert_error(await automation.post(url, json=bad, headers=auth), 422, "VALIDATION_ERROR")
    malformed = await automation.post(url, content=b"{", headers={**auth, "Content-Type": "application/json"})
    assert_error(malformed, 400, "BAD_REQUEST")
    unknown = "/api/automations/transforms/nope/test"
    resp = await automation.post(unknown, json={"device_id": "d", "data": {}}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND", "Transform not found not found")
    resp = await automation.get("/api/automations/transforms/data-sources/transform:x:y", headers=auth)
    assert_error(resp, 404, "NOT_FOUND", "Transform data source not found not found")
    resp = await automation.get("/api/automations/transforms/nope/data-sources", headers=auth)
    assert resp.json()["data"] == {"transform_id": "nope", "data_sources": [], "count": 0}
    code_url = "/api/automations/transforms/test-code"
    assert_error(
        await automation.post(code_url, json={"input_data": {}}, headers=auth), 422, "VALIDATION_ERROR"
    )
    assert_error(await automation.post(code_url, json={"code": "1"}, headers=auth), 422, "VALIDATION_ERROR")
    bad = {"code": ["x"], "input_data": {}}
    assert_error(await automation.post(code_url, json=bad, headers=auth), 422, "VALIDATION_ERROR")
    for method, path in (
        ("GET", "/api/automations/transforms"),
        ("GET", "/api/automations/transforms/metrics"),
        ("GET", "/api/automations/transforms/data-sources"),
        ("POST", url),
        ("POST", code_url),
    ):
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
        resp = await automation.request(method, path, json={}, headers={"Authorization": "Bearer nope"})
        assert_error(resp, 401, "UNAUTHORIZED")
