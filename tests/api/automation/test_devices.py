"""Devices, device types, drafts, webhook and commands of the automation API over the twin."""

from __future__ import annotations

import httpx

from hardware.ports.events import EventKind
from twin.sensors import sensors_of
from twin.serve import Twin

SENSOR = "env_sensor-0001"


async def create(client: httpx.AsyncClient, auth: dict[str, str], **fields) -> httpx.Response:
    body = {"device_type": "env_sensor", "name": "Lab", "adapter_type": "webhook", "connection_config": {}}
    return await client.post("/api/devices", json={**body, **fields}, headers=auth)


async def test_simulated_sensors_are_listed_as_devices(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    twin.clock.advance(25)
    resp = await automation.get("/api/devices", headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert body["success"] is True and "timestamp" in body["meta"]
    data = body["data"]
    assert data["count"] == 3
    assert data["pagination"] == {
        "page": 1,
        "limit": 50,
        "total": 3,
        "total_pages": 1,
        "has_next": False,
        "has_prev": False,
    }
    dev = data["devices"][0]
    assert dev["id"] == dev["device_id"] == SENSOR
    assert dev["adapter_type"] == "mqtt" and dev["device_type"] == "env_sensor"
    assert dev["status"] == "online" and dev["online"] is True
    assert dev["last_seen"] == "2026-01-01T00:00:20+00:00"
    assert dev["plugin_id"] == "internal-mqtt"
    assert dev["effective_offline_timeout_secs"] == 300
    assert "current_values" not in dev and "offline_timeout_secs" not in dev
    assert all(isinstance(v, str) for v in dev["config"].values())


async def test_list_filters_and_pages(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    assert (await create(automation, auth, device_id="lab-1")).status_code == 200
    page = (await automation.get("/api/devices?page=2&limit=2", headers=auth)).json()["data"]
    assert [d["device_id"] for d in page["devices"]] == ["env_sensor-0003", "lab-1"]
    assert page["pagination"]["has_prev"] and not page["pagination"]["has_next"]
    never = (await automation.get("/api/devices?status=disconnected", headers=auth)).json()["data"]
    assert [d["device_id"] for d in never["devices"]] == ["lab-1"]
    online = (await automation.get("/api/devices?status=connected", headers=auth)).json()["data"]
    assert online["pagination"]["total"] == 3
    typed = (await automation.get("/api/devices?device_type=nope", headers=auth)).json()["data"]
    assert typed["devices"] == []
    bad = await automation.get("/api/devices?status=sleepy", headers=auth)
    assert bad.status_code == 400


async def test_create_overwrite_and_detail(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await create(automation, auth, device_id="lab-1", connection_config={"webhook_token": "t"})
    assert resp.json()["data"] == {"device_id": "lab-1", "added": True, "updated_existing": False}
    again = await create(automation, auth, device_id="lab-1", name="Renamed")
    assert again.json()["data"]["updated_existing"] is True
    detail = (await automation.get("/api/devices/lab-1", headers=auth)).json()["data"]
    assert detail["name"] == "Renamed" and detail["connection_config"] == {}
    assert detail["status"] == "disconnected" and detail["last_seen"] is None
    assert [m["name"] for m in detail["metrics"]] == ["temperature", "humidity"]
    assert {c["name"] for c in detail["commands"]} >= {"reboot"}
    assert detail["metric_count"] == 2 and detail["current_values"] == {}
    generated = (await create(automation, auth)).json()["data"]["device_id"]
    assert generated.startswith("env_sensor_") and len(generated) == len("env_sensor_") + 8


async def test_create_failures(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    missing = await automation.post(
        "/api/devices", json={"device_type": "env_sensor", "name": "x", "adapter_type": "mqtt"}, headers=auth
    )
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "VALIDATION_ERROR"
    wrong = await create(automation, auth, connection_config="nope")
    assert wrong.status_code == 422
    unknown = await create(automation, auth, device_type="x")
    assert unknown.status_code == 500
    assert unknown.json()["error"] == {
        "code": "INTERNAL_ERROR",
        "message": "Failed to add device: Device type template 'x' not found",
        "request_id": None,
    }
    assert (await create(automation, auth, offline_timeout_secs=10)).status_code == 400
    noauth = await automation.post("/api/devices", json={})
    assert noauth.status_code == 401 and noauth.json()["error"]["code"] == "UNAUTHORIZED"


async def test_unknown_device_is_device_not_found(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    for method, path in (
        ("GET", "/api/devices/nope"),
        ("GET", "/api/devices/nope/current"),
        ("DELETE", "/api/devices/nope"),
        ("POST", "/api/devices/nope/command/reboot"),
    ):
        resp = await automation.request(method, path, headers=auth)
        assert resp.status_code == 404, path
        assert resp.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    put = await automation.put("/api/devices/nope", json={"name": "x"}, headers=auth)
    assert put.status_code == 404 and put.json()["error"]["code"] == "DEVICE_NOT_FOUND"


async def test_protected_routes_need_auth(automation: httpx.AsyncClient) -> None:
    for method, path in (
        ("GET", "/api/devices"),
        ("GET", f"/api/devices/{SENSOR}"),
        ("GET", f"/api/devices/{SENSOR}/current"),
        ("PUT", f"/api/devices/{SENSOR}"),
        ("DELETE", f"/api/devices/{SENSOR}"),
        ("POST", f"/api/devices/{SENSOR}/command/reboot"),
        ("GET", "/api/devices/drafts"),
        ("POST", "/api/devices/drafts/x/approve"),
        ("GET", "/api/device-types"),
        ("POST", "/api/device-types"),
        ("PUT", "/api/device-types"),
        ("GET", "/api/device-types/env_sensor"),
        ("DELETE", "/api/device-types/env_sensor"),
    ):
        resp = await automation.request(method, path)
        assert resp.status_code == 401, path


async def test_offline_timeout_is_tri_state(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    url = f"/api/devices/{SENSOR}"

    async def timeouts() -> tuple[int | None, int]:
        d = (await automation.get(url, headers=auth)).json()["data"]
        return d.get("offline_timeout_secs"), d["effective_offline_timeout_secs"]

    assert (await automation.put(url, json={"offline_timeout_secs": 30}, headers=auth)).json()["data"] == {
        "device_id": SENSOR,
        "updated": True,
    }
    assert await timeouts() == (30, 30)
    assert (await automation.put(url, json={"name": "Kept"}, headers=auth)).status_code == 200
    assert await timeouts() == (30, 30)  # absent: kept (the spec; 0.9.17 reset it)
    await automation.put(url, json={"offline_timeout_secs": None}, headers=auth)
    assert await timeouts() == (None, 300)
    for bad in (29, 86_401):
        resp = await automation.put(url, json={"offline_timeout_secs": bad}, headers=auth)
        assert resp.status_code == 400, bad
    assert (await automation.put(url, json={"offline_timeout_secs": 86_400}, headers=auth)).status_code == 200
    wrong = await automation.put(url, json={"offline_timeout_secs": "soon"}, headers=auth)
    assert wrong.status_code == 422


async def test_status_follows_the_world_clock(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    await create(automation, auth, device_id="lab-1", offline_timeout_secs=30)
    status = lambda: automation.get("/api/devices/lab-1", headers=auth)  # noqa: E731
    assert (await status()).json()["data"]["status"] == "disconnected"
    await automation.post("/api/devices/lab-1/webhook", json={"temperature": 20.5})
    assert (await status()).json()["data"]["status"] == "online"
    twin.clock.advance(31)
    assert (await status()).json()["data"]["status"] == "offline"
    await automation.put("/api/devices/lab-1", json={"offline_timeout_secs": None}, headers=auth)
    assert (await status()).json()["data"]["status"] == "online"  # the global 300 s applies again


async def test_current_values(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    twin.clock.advance(20)
    data = (await automation.get(f"/api/devices/{SENSOR}/current", headers=auth)).json()["data"]
    assert data["device"]["device_id"] == SENSOR and data["device"]["status"] == "online"
    temp = data["metrics"]["temperature"]
    assert temp["data_type"] == "float" and temp["unit"] == "" and isinstance(temp["value"], float)
    assert {c["name"] for c in data["commands"]} == {"set_interval", "reboot", "identify"}
    fleet = sensors_of(twin.world).groups["env_sensor"]
    assert temp["value"] == float(fleet.values(20.0)["temperature"][0])


async def test_delete_device(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await create(automation, auth, device_id="lab-1")
    resp = await automation.delete("/api/devices/lab-1", headers=auth)
    assert resp.json()["data"] == {"device_id": "lab-1", "deleted": True}
    assert (await automation.get("/api/devices/lab-1", headers=auth)).status_code == 404
    assert (await automation.delete("/api/devices/lab-1", headers=auth)).status_code == 404
    assert (await automation.delete(f"/api/devices/{SENSOR}", headers=auth)).status_code == 200
    listed = (await automation.get("/api/devices", headers=auth)).json()["data"]
    assert SENSOR not in {d["device_id"] for d in listed["devices"]}


async def test_command_reaches_the_device(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    sub = twin.world.bus.subscribe({EventKind.DEVICE_COMMAND_RESULT})
    resp = await automation.post(
        f"/api/devices/{SENSOR}/command/set_interval", json={"params": {"interval": 5}}, headers=auth
    )
    assert resp.status_code == 200
    assert resp.json()["data"] == {"device_id": SENSOR, "command": "set_interval", "sent": True}
    event = sub.get_nowait()
    assert event is not None and event.source == SENSOR
    assert event.data["command"] == "set_interval" and event.data["params"] == {"interval": 5}
    assert event.data["status"] == "success"
    assert event.data["payload"] == '{"cmd":"set_interval","interval":5}'  # the rendered template
    no_body = await automation.post(f"/api/devices/{SENSOR}/command/reboot", headers=auth)
    assert no_body.status_code == 200 and sub.get_nowait().data["params"] == {}
    unknown = await automation.post(f"/api/devices/{SENSOR}/command/explode", json={}, headers=auth)
    assert unknown.status_code == 400 and "Failed to send command" in unknown.json()["error"]["message"]
    wrong = await automation.post(f"/api/devices/{SENSOR}/command/reboot", json={"params": 3}, headers=auth)
    assert wrong.status_code == 422


# Device types -----------------------------------------------------------------------------------
TEMPLATE = {
    "device_type": "door",
    "name": "Door sensor",
    "categories": ["security"],
    "metrics": [
        {"name": "open", "display_name": "Open", "data_type": "Boolean"},
        {"name": "mode", "data_type": {"enum": {"options": ["a", "b"]}}},
        {"name": "values.battery", "data_type": "float", "unit": "%", "min": 0, "max": 100},
    ],
    "commands": [
        {
            "name": "lock",
            "display_name": "Lock",
            "payload_template": '{"lock":${on}}',
            "parameters": [{"name": "on", "data_type": "boolean"}],
        }
    ],
    "default_offline_timeout_secs": 60,
}


async def test_device_types_crud(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    listed = (await automation.get("/api/device-types", headers=auth)).json()["data"]
    assert listed["count"] == 1 and listed["device_types"][0]["device_type"] == "env_sensor"
    assert listed["device_types"][0]["metrics"][0]["data_type"] == "Float"
    resp = await automation.post("/api/device-types", json=TEMPLATE, headers=auth)
    assert resp.json()["data"] == {
        "success": True,
        "registered": True,
        "device_type": "door",
        "name": "Door sensor",
    }
    full = (await automation.get("/api/device-types/door", headers=auth)).json()["data"]
    assert full["metrics"][0]["data_type"] == "boolean"
    assert full["metrics"][1]["data_type"] == {"enum": {"options": ["a", "b"]}}
    assert full["metric_count"] == 3 and full["command_count"] == 1
    assert full["default_offline_timeout_secs"] == 60 and full["uplink_samples"] == []
    item = (await automation.get("/api/device-types", headers=auth)).json()["data"]["device_types"][1]
    assert item["metrics"][1]["data_type"] == 'Enum { options: ["a", "b"] }'
    assert item["commands"][0]["parameters"][0]["data_type"] == "Boolean"
    # The type's default timeout applies to its devices.
    await create(automation, auth, device_type="door", device_id="d1")
    dev = (await automation.get("/api/devices/d1", headers=auth)).json()["data"]
    assert dev["effective_offline_timeout_secs"] == 60
    deleted = await automation.delete("/api/device-types/door", headers=auth)
    assert deleted.json()["data"] == {"success": True, "device_type": "door", "deleted": True}
    assert (await automation.get("/api/device-types/door", headers=auth)).status_code == 404
    assert (await automation.delete("/api/device-types/door", headers=auth)).status_code == 404


async def test_device_type_validation(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    good = (await automation.put("/api/device-types", json=TEMPLATE, headers=auth)).json()["data"]
    assert good["valid"] is True and "errors" not in good and good["warnings"] == []
    bad = {**TEMPLATE, "metrics": [{"name": "x", "data_type": "complex"}, {"name": "x"}]}
    checked = (await automation.put("/api/device-types", json=bad, headers=auth)).json()["data"]
    assert checked["valid"] is False and len(checked["errors"]) == 2
    assert (await automation.post("/api/device-types", json=bad, headers=auth)).status_code == 400
    missing = await automation.post("/api/device-types", json={"name": "x"}, headers=auth)
    assert missing.status_code == 422
    unknown = await automation.get("/api/device-types/nope", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["error"]["message"] == "DeviceType not found"
    builtin = await automation.delete("/api/device-types/env_sensor", headers=auth)
    assert builtin.status_code == 409


# Webhook and drafts -------------------------------------------------------------------------------
async def test_webhook_needs_no_auth_and_records(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    await create(automation, auth, device_id="lab-1")
    sub = twin.world.bus.subscribe({EventKind.DEVICE_METRIC})
    flat = await automation.post("/api/devices/lab-1/webhook", json={"temperature": 21.5, "humidity": 40})
    assert flat.status_code == 200
    assert flat.json()["data"] == {"success": True, "device_id": "lab-1", "metrics_received": 2}
    assert [sub.get_nowait().data["metric"] for _ in range(2)] == ["temperature", "humidity"]
    wrapped = await automation.post(
        "/api/devices/lab-1/webhook", json={"data": {"temperature": 22}, "timestamp": 1767225000}
    )
    assert wrapped.json()["data"]["metrics_received"] == 1
    generic = await automation.post("/api/devices/webhook", json={"device_id": "lab-1", "humidity": 41})
    assert generic.json()["data"] == {"success": True, "device_id": "lab-1", "metrics_processed": 1}
    assert (await automation.post("/api/devices/webhook", json={"humidity": 41})).status_code == 400
    text = await automation.post(
        "/api/devices/lab-1/webhook", content=b"hello", headers={"content-type": "text/plain"}
    )
    image = await automation.post(
        "/api/devices/lab-1/webhook", content=b"\x89PNG", headers={"content-type": "image/png"}
    )
    form = await automation.post("/api/devices/lab-1/webhook", data={"pressure": "1013.5"})
    assert text.status_code == image.status_code == form.status_code == 200
    current = (await automation.get("/api/devices/lab-1", headers=auth)).json()["data"]["current_values"]
    assert current["text"] == "hello"
    assert current["image"].startswith("/api/images/lab-1/image/1767225600_")  # stored as a file, its URL
    assert (await automation.get(current["image"])).content == b"\x89PNG"
    assert current["pressure"] == 1013.5 and current["temperature"] == 21.5  # older ts does not win
    odd = await automation.post(
        "/api/devices/lab-1/webhook", content=b"x", headers={"content-type": "application/xml"}
    )
    assert odd.status_code == 415 and odd.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    broken = await automation.post(
        "/api/devices/lab-1/webhook", content=b"{no", headers={"content-type": "application/json"}
    )
    assert broken.status_code == 400


async def test_webhook_token(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await create(automation, auth, device_id="lab-1", connection_config={"webhook_token": "s3cret"})
    url = "/api/devices/lab-1/webhook"
    missing = await automation.post(url, json={"t": 1})
    assert missing.status_code == 401 and missing.json()["error"]["message"] == "Webhook token required"
    wrong = await automation.post(url, json={"t": 1}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"]["message"] == "Invalid webhook token"
    assert (await automation.post(url, json={"t": 1}, headers={"Authorization": "Bearer s3cret"})).is_success
    assert (await automation.post(url + "?token=s3cret", json={"t": 1})).is_success


async def test_unknown_device_becomes_a_draft_then_a_device(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    sub = twin.world.bus.subscribe({EventKind.DEVICE_DISCOVERED})
    for value in (1.5, 2.5):
        resp = await automation.post("/api/devices/field-7/webhook", json={"level": value, "state": "ok"})
        assert resp.status_code == 200 and resp.json()["data"]["metrics_received"] == 2
        twin.clock.advance(10)
    assert sub.get_nowait().source == "field-7" and sub.get_nowait() is None
    drafts = (await automation.get("/api/devices/drafts", headers=auth)).json()["data"]
    assert drafts["count"] == 1
    draft = drafts["items"][0]
    assert draft["device_id"] == "field-7" and draft["status"] == "collecting"
    assert draft["sample_count"] == 2 and draft["source"] == "webhook"
    assert (await automation.get("/api/devices/field-7", headers=auth)).status_code == 404
    approved = await automation.post(
        f"/api/devices/drafts/{draft['id']}/approve",
        json={"new_type": {"device_type": "tank", "name": "Tank"}, "device_name": "Tank 7"},
        headers=auth,
    )
    assert approved.json()["data"] == {
        "original_device_id": "field-7",
        "system_device_id": "field-7",
        "device_type": "tank",
        "recommended_topic": "device/tank/field-7/uplink",
        "registered": True,
        "message": "Device registered successfully",
    }
    dev = (await automation.get("/api/devices/field-7", headers=auth)).json()["data"]
    assert dev["name"] == "Tank 7" and dev["device_type"] == "tank"
    assert {m["name"]: m["data_type"] for m in dev["metrics"]} == {"level": "float", "state": "string"}
    assert dev["current_values"] == {"level": 2.5, "state": "ok"}
    telemetry = await automation.get("/api/devices/field-7/telemetry?metric=level", headers=auth)
    assert [p["value"] for p in telemetry.json()["data"]["data"]["level"]] == [2.5, 1.5]
    assert (await automation.get("/api/devices/drafts", headers=auth)).json()["data"]["count"] == 0
    again = await automation.post("/api/devices/drafts/field-7/approve", json={}, headers=auth)
    assert again.status_code == 404


async def test_approve_with_an_existing_type(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await automation.post("/api/devices/webhook", json={"device_id": "x1", "temperature": 3})
    bad = await automation.post(
        "/api/devices/drafts/x1/approve", json={"existing_type": "nope"}, headers=auth
    )
    assert bad.status_code == 404
    ok = await automation.post(
        "/api/devices/drafts/x1/approve", json={"existing_type": "env_sensor"}, headers=auth
    )
    assert ok.json()["data"]["device_type"] == "env_sensor"
    assert (await automation.get("/api/devices/x1", headers=auth)).json()["data"]["status"] == "online"


async def test_pushed_metric_in_milliseconds(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await create(automation, auth, device_id="lab-1")
    resp = await automation.post(
        "/api/devices/lab-1/metrics",
        json={"metric": "co2", "value": 415, "timestamp": 1_767_225_500_000},
        headers=auth,
    )
    assert resp.json()["data"] == {
        "device_id": "lab-1",
        "metric": "co2",
        "timestamp": 1_767_225_500_000,
        "written": True,
    }
    points = await automation.get("/api/devices/lab-1/telemetry?metric=co2", headers=auth)
    assert points.json()["data"]["data"]["co2"][0]["timestamp"] == 1_767_225_500
    assert (await automation.post("/api/devices/lab-1/metrics", json={}, headers=auth)).status_code == 422
    unknown = await automation.post("/api/devices/no/metrics", json={"metric": "a", "value": 1}, headers=auth)
    assert unknown.status_code == 404


# Batch reads and the webhook address -----------------------------------------------------------
async def test_current_batch(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    twin.clock.advance(30)
    ids = [SENSOR, "env_sensor-0002", "nope", SENSOR]
    resp = await automation.post("/api/devices/current-batch", json={"device_ids": ids}, headers=auth)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["count"] == 2 and sorted(data["devices"]) == [SENSOR, "env_sensor-0002"]
    values = data["devices"][SENSOR]
    assert values["device_id"] == SENSOR and isinstance(values["current_values"]["temperature"], float)
    for bad in ({}, {"device_ids": "x"}, {"device_ids": [1, {}]}):
        refused = await automation.post("/api/devices/current-batch", json=bad, headers=auth)
        assert refused.status_code in (400, 422), bad
        assert refused.json()["success"] is False
    assert (await automation.post("/api/devices/current-batch", json={"device_ids": []})).status_code == 401


async def test_webhook_url(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await automation.get(f"/api/devices/{SENSOR}/webhook-url", headers=auth)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["webhook_url"].endswith(f"/api/devices/{SENSOR}/webhook") and data["method"] == "POST"
    assert data["alternative_url"].endswith("/api/devices/webhook") and data["url_source"] == "fallback"
    assert data["content_type"] == "application/json" and set(data["payload_example"]) == {
        "timestamp",
        "quality",
        "data",
    }
    proxied = await automation.get(
        f"/api/devices/{SENSOR}/webhook-url",
        headers={**auth, "X-Forwarded-Proto": "https", "X-Forwarded-Host": "iot.example.com"},
    )
    assert proxied.json()["data"]["webhook_url"] == f"https://iot.example.com/api/devices/{SENSOR}/webhook"
    assert proxied.json()["data"]["url_source"] == "proxy_header" and "hint" not in proxied.json()["data"]
    unknown = await automation.get("/api/devices/nope/webhook-url", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    assert (await automation.get(f"/api/devices/{SENSOR}/webhook-url")).status_code == 401


async def test_command_history(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    for interval in (5, 15):
        body = {"params": {"interval": interval}}
        await automation.post(f"/api/devices/{SENSOR}/command/set_interval", json=body, headers=auth)
        twin.clock.advance(10)
    await automation.post("/api/devices/env_sensor-0002/command/reboot", headers=auth)
    resp = await automation.get(f"/api/devices/{SENSOR}/commands", headers=auth)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["device_id"] == SENSOR and data["count"] == 2
    newest = data["commands"][0]
    assert newest["command_name"] == "set_interval" and newest["parameters"] == {"interval": 15}
    assert newest["status"] == "success" and newest["completed_at"] == newest["created_at"]
    assert data["commands"][1]["created_at"] == newest["created_at"] - 10
    one = await automation.get(f"/api/devices/{SENSOR}/commands?limit=1", headers=auth)
    assert one.json()["data"]["count"] == 1
    for bad in ("limit=0", "limit=x"):
        assert (await automation.get(f"/api/devices/{SENSOR}/commands?{bad}", headers=auth)).status_code in (
            400,
            422,
        )
    unknown = await automation.get("/api/devices/nope/commands", headers=auth)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "DEVICE_NOT_FOUND"
    assert (await automation.get(f"/api/devices/{SENSOR}/commands")).status_code == 401


async def test_a_draft_by_id_and_rejected(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    await automation.post("/api/devices/field-8/webhook", json={"level": 1.0})
    twin.clock.advance(10)
    draft = await automation.get("/api/devices/drafts/field-8", headers=auth)
    assert draft.status_code == 200 and draft.json()["data"]["status"] == "collecting"
    assert draft.json()["data"]["error_message"] is None  # the DTO has every field, nulls too
    url = "/api/devices/drafts/field-8/reject"
    rejected = await automation.post(url, json={"reason": "not ours"}, headers=auth)
    assert rejected.status_code == 200
    assert (
        rejected.json()["data"]["status"] == "rejected"
        and rejected.json()["data"]["error_message"] == "not ours"
    )
    for _ in range(12):  # later samples do not bring it back for processing
        await automation.post("/api/devices/field-8/webhook", json={"level": 2.0})
    again = (await automation.get("/api/devices/drafts/field-8", headers=auth)).json()["data"]
    assert again["status"] == "rejected" and again["sample_count"] == 13
    for bad in ({}, {"reason": 5}):
        assert (await automation.post(url, json=bad, headers=auth)).status_code in (400, 422), bad
    for path, method in (("/api/devices/drafts/nope", "GET"), ("/api/devices/drafts/nope/reject", "POST")):
        missing = await automation.request(method, path, json={"reason": "x"}, headers=auth)
        assert missing.status_code == 404 and missing.json()["success"] is False
        assert (await automation.request(method, path, json={"reason": "x"})).status_code == 401
