"""Bringing devices in: auto-onboarding drafts (edit, analysis, enhancement, type suggestions and
signatures, cleanup, configuration, uploads), MDL and device-type generation from examples, and
BLE provisioning, in the vendor's shapes and with its failures."""

from __future__ import annotations

import httpx

from tests.api.support import assert_error, data
from twin.serve import Twin

BASE = "/api/devices/drafts"
READING = {"temperature": 21.5, "humidity": 40, "battery": 90}


async def upload(client: httpx.AsyncClient, auth: dict, device_id: str | None, samples: list) -> str:
    body = {"data": samples} if device_id is None else {"device_id": device_id, "data": samples}
    return data(await client.post(f"{BASE}/upload", json=body, headers=auth))["message"]


# Drafts ---------------------------------------------------------------------------------------------
async def test_upload_edit_analyze_enhance(automation: httpx.AsyncClient, auth: dict) -> None:
    message = await upload(automation, auth, "lab-9", [READING, READING, 5])
    assert message == "Uploaded 2 data sample(s) for device 'lab-9'. Check Pending Devices tab."
    draft = data(await automation.get(f"{BASE}/lab-9", headers=auth))
    assert draft == {
        "id": "lab-9", "device_id": "lab-9", "source": "manual_upload", "original_topic": None,
        "status": "collecting", "sample_count": 2, "max_samples": 10, "generated_type": None,
        "discovered_at": 1767225600, "updated_at": 1767225600, "error_message": None, "user_name": None,
    }  # fmt: skip
    generated = await upload(automation, auth, None, [READING])
    assert generated.startswith("Uploaded 1 data sample(s) for device 'unknown_")

    assert data(await automation.put(f"{BASE}/lab-9", json={"name": "Lab sensor"}, headers=auth)) == {
        "message": "Draft device 'lab-9' updated"
    }
    assert data(await automation.get(f"{BASE}/lab-9", headers=auth))["user_name"] == "Lab sensor"
    resp = await automation.post(f"{BASE}/lab-9/enhance", headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "Draft device has no generated type yet. Please analyze it first.")
    resp = await automation.get(f"{BASE}/lab-9/suggest-types", headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "Draft device has no generated type. Please analyze it first.")

    analyzed = data(await automation.post(f"{BASE}/lab-9/analyze", headers=auth))
    assert analyzed == {"message": "Analysis triggered for device 'lab-9'"}
    draft = data(await automation.get(f"{BASE}/lab-9", headers=auth))
    gen = draft["generated_type"]
    assert draft["status"] == "waiting_processing" and gen["device_type"] == "auto_lab_9"
    assert gen["category"] == "unknown" and gen["name"] == "" and gen["description"] == ""
    assert [(m["name"], m["semantic_type"], m["display_name"]) for m in gen["metrics"]] == [
        ("battery", "battery", "Battery"),
        ("humidity", "humidity", "Humidity"),
        ("temperature", "temperature", "Temperature"),
    ]
    assert gen["summary"]["insights"] == ["Device measures both temperature and humidity"]
    assert gen["summary"]["metrics_generated"] == 3 and gen["summary"]["samples_analyzed"] == 2

    before = data(await automation.post(f"{BASE}/lab-9/enhance", headers=auth))
    assert before["generated_type"]["metrics"][2]["display_name"] == "Temperature"  # answered as it was
    after = data(await automation.get(f"{BASE}/lab-9", headers=auth))
    assert [m["display_name"] for m in after["generated_type"]["metrics"]] == ["电池电量", "湿度", "温度"]

    signatures = data(await automation.get(f"{BASE}/type-signatures", headers=auth))
    assert list(signatures["signatures"].values()) == ["auto_lab_9"] and signatures["count"] == "1"
    suggested = data(await automation.get(f"{BASE}/lab-9/suggest-types", headers=auth))
    assert suggested["exact_match"] == "auto_lab_9"
    env = next(s for s in suggested["suggestions"] if s["device_type"] == "env_sensor")
    assert env == {
        "device_type": "env_sensor", "name": env["name"], "description": env["description"],
        "match_score": 25, "is_exact_match": False, "metric_count": 2,
    }  # fmt: skip

    # a second device with the same shape gets the same type
    await upload(automation, auth, "lab-10", [READING])
    await automation.post(f"{BASE}/lab-10/analyze", headers=auth)
    twin_type = data(await automation.get(f"{BASE}/lab-10", headers=auth))["generated_type"]["device_type"]
    assert twin_type == "auto_lab_9"


async def test_draft_failures(automation: httpx.AsyncClient, auth: dict) -> None:
    for method, path in [
        ("GET", f"{BASE}/nope"),
        ("POST", f"{BASE}/nope/analyze"),
        ("POST", f"{BASE}/nope/enhance"),
        ("GET", f"{BASE}/nope/suggest-types"),
    ]:
        assert_error(
            await automation.request(method, path, headers=auth),
            404,
            "NOT_FOUND",
            "Draft device 'nope' not found",
        )
    assert_error(await automation.put(f"{BASE}/nope", json={}, headers=auth), 500, "INTERNAL_ERROR")
    await upload(automation, auth, "lab-9", [READING])
    assert_error(
        await automation.put(f"{BASE}/lab-9", json={"name": 5}, headers=auth), 422, "VALIDATION_ERROR"
    )
    assert_error(await automation.post(f"{BASE}/upload", json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(
        await automation.post(f"{BASE}/upload", json={"data": {}}, headers=auth), 422, "VALIDATION_ERROR"
    )
    for method, path in [("POST", f"{BASE}/upload"), ("PUT", f"{BASE}/lab-9"), ("POST", f"{BASE}/cleanup"),
                         ("GET", f"{BASE}/config"), ("POST", f"{BASE}/lab-9/analyze")]:  # fmt: skip
        assert_error(await automation.request(method, path, json={"data": []}), 401, "UNAUTHORIZED")


async def test_onboarding_config_and_cleanup(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    config = data(await automation.get(f"{BASE}/config", headers=auth))
    assert config == {"enabled": True, "max_samples": 10, "draft_retention_secs": 86400}
    new = {"enabled": True, "max_samples": 2, "draft_retention_secs": 3600}
    assert data(await automation.put(f"{BASE}/config", json=new, headers=auth)) == {
        "message": "Configuration updated"
    }
    assert data(await automation.get(f"{BASE}/config", headers=auth)) == new
    await upload(automation, auth, "lab-9", [READING, READING, READING])
    draft = data(await automation.get(f"{BASE}/lab-9", headers=auth))
    assert draft["max_samples"] == 2 and draft["sample_count"] == 2  # the third is past capacity
    assert draft["status"] == "waiting_processing" and draft["generated_type"]["device_type"] == "auto_lab_9"

    await automation.put(f"{BASE}/config", json={**new, "enabled": False}, headers=auth)
    assert "Uploaded 0 data sample(s)" in await upload(automation, auth, "lab-11", [READING])
    await automation.post("/api/devices/lab-12/webhook", json={"data": READING})
    assert_error(await automation.get(f"{BASE}/lab-12", headers=auth), 404, "NOT_FOUND")

    twin.clock.advance(3601)
    cleaned = data(await automation.post(f"{BASE}/cleanup", headers=auth))
    assert cleaned == {"cleaned": 1, "message": "Cleaned up 1 old draft devices"}
    assert data(await automation.get(BASE, headers=auth)) == {"items": [], "count": 0}
    for bad in ({}, {"enabled": "yes", "max_samples": 1, "draft_retention_secs": 1},
                {"enabled": True, "max_samples": -1, "draft_retention_secs": 1}):  # fmt: skip
        assert_error(await automation.put(f"{BASE}/config", json=bad, headers=auth), 422, "VALIDATION_ERROR")


# Generation -----------------------------------------------------------------------------------------
async def test_generate_mdl(automation: httpx.AsyncClient, auth: dict) -> None:
    body = {
        "device_name": "My Sensor-2",
        "description": "A test",
        "uplink_example": '{"temp": 21.5, "batt": {"level": 90}, "tags": ["a"]}',
        "downlink_example": '{"cmd": "Reboot Now", "params": {"delay": 5}} {"action": "blink", "times": 3}',
    }
    mdl = data(await automation.post("/api/devices/generate-mdl", json=body, headers=auth))
    assert mdl["device_type"] == "my_sensor_2" and mdl["categories"] == ["sensor"] and mdl["mode"] == "full"
    metrics = {m["name"]: (m["data_type"], m["unit"], m["display_name"]) for m in mdl["uplink"]["metrics"]}
    assert metrics == {
        "batt.level": ("integer", "%", "Batt Level"),
        "tags.0": ("string", "", "Tags 0"),
        "temp": ("float", "°C", "Temp"),
    }
    reboot, blink = mdl["downlink"]["commands"]
    assert (
        reboot["name"] == "reboot_now"
        and reboot["payload_template"] == '{"cmd": ${{cmd}}, "params": {"delay": ${{delay}}}}'
    )
    assert [p["name"] for p in reboot["parameters"]] == ["cmd", "delay"]
    assert blink["name"] == "blink" and blink["display_name"] == "Blink"
    url = "/api/devices/generate-mdl"
    for bad, message in [
        ({"device_name": ""}, "device_name is required"),
        ({"device_name": "x" * 101}, "device_name must be between 1 and 100 characters"),
        ({"device_name": "a", "uplink_example": "{"}, "Invalid uplink example JSON"),
        ({"device_name": "a", "downlink_example": "nope"}, "Failed to parse JSON object #1"),
    ]:
        resp = await automation.post(url, json=bad, headers=auth)
        assert_error(resp, 400, "BAD_REQUEST")
        assert resp.json()["error"]["message"].startswith(message), resp.text
    assert_error(await automation.post(url, json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"device_name": "a"}), 401, "UNAUTHORIZED")


async def test_generate_type_from_samples(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/device-types/generate-from-samples"
    samples = [{"timestamp": 1, "data": {"temp": 20.5, "hum": 40}}, {"timestamp": 2, "data": {"temp": 21.0}}]
    body = {"device_id": "th-1", "manufacturer": "Acme", "samples": samples, "min_coverage": 0.75}
    made = data(await automation.post(url, json=body, headers=auth))
    assert made["id"] == "auto-generated-th-1" and made["name"] == "Acme th-1"
    assert made["category"] == "TemperatureSensor" and made["manufacturer"] == "Acme"
    assert made["description"] == "Acme temperature_sensor device. Supports monitoring of: Temp."
    assert [(m["path"], m["data_type"], m["semantic_type"], m["unit"]) for m in made["metrics"]] == [
        ("temp", "Float", "Temperature", "°C")
    ]  # hum is in half the samples, under the coverage asked for
    resp = await automation.post(url, json={"samples": []}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "No valid samples provided")
    assert_error(
        await automation.post(url, json={"samples": [{"data": {}}]}, headers=auth), 422, "VALIDATION_ERROR"
    )
    assert_error(await automation.post(url, json={"samples": []}), 401, "UNAUTHORIZED")


# BLE ------------------------------------------------------------------------------------------------
async def test_ble_provision(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/devices/ble-provision"
    body = {"model": "NE101", "sn": "SN-AB-01", "device_type": "env_sensor", "device_name": "Porch",
            "broker_id": "embedded"}  # fmt: skip
    resolved = data(await automation.post(url, json={**body, "resolve_only": True}, headers=auth))
    assert resolved["device_id"] == "sn_ab_01" and "already_exists" not in resolved
    mqtt = resolved["mqtt_config"]
    assert mqtt["port"] == 1883 and mqtt["topic_prefix"] == "device/env_sensor/sn_ab_01"
    assert mqtt["client_id"] == "sn_ab_01" and mqtt["username"] == "" and mqtt["password"] == ""
    assert_error(await automation.get("/api/devices/sn_ab_01", headers=auth), 404, "DEVICE_NOT_FOUND")

    created = data(await automation.post(url, json=body, headers=auth))
    assert created == resolved
    device = data(await automation.get("/api/devices/sn_ab_01", headers=auth))
    assert device["name"] == "Porch" and device["adapter_type"] == "mqtt"
    again = data(await automation.post(url, json={**body, "device_name": "Porch 2"}, headers=auth))
    assert again["already_exists"] is True
    assert data(await automation.get("/api/devices/sn_ab_01", headers=auth))["name"] == "Porch 2"

    resp = await automation.post(url, json={**body, "device_type": "nope", "broker_id": "nope"}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "Unknown device_type: nope")  # checked before the broker
    resp = await automation.post(url, json={**body, "sn": "SN-2", "broker_id": "nope"}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND")
    assert resp.json()["error"]["message"].startswith("Broker not found: nope")
    assert_error(await automation.post(url, json={"sn": "x"}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json=body), 401, "UNAUTHORIZED")
