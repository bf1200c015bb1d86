"""Administration: configuration export, import and validation in the vendor's shapes (and its
limits), and the server's log files as a ZIP archive built from the world's events."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path

import httpx

from tests.api.support import assert_error, data
from tests.conftest import _client, admin_token
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

RULE = {
    "name": "hot",
    "trigger": {"trigger_type": "data_change", "sources": ["device:env_sensor-0001:temperature"]},
    "condition": {"condition_type": "comparison", "source": "device:env_sensor-0001:temperature",
                  "operator": ">", "threshold": 30},
    "actions": [{"type": "notify", "message": "hot"}],
}  # fmt: skip


# Configuration ------------------------------------------------------------------------------------
async def test_export(automation: httpx.AsyncClient, auth: dict) -> None:
    created = await automation.post("/api/rules", json=RULE, headers=auth)
    assert created.status_code == 200, created.text
    exported = data(await automation.get("/api/config/export", headers=auth))
    assert exported["version"] == "1.0" and exported["exported_at"] == 1767225600
    assert "llm_settings" not in exported and "alerts" not in exported  # absent sections are left out
    assert exported["devices"]["devices"][0] == {
        "device_id": "env_sensor-0001",
        "device_type": "env_sensor",
        "name": "env_sensor-0001",
    }
    (rule,) = exported["rules"]["rules"]
    assert rule["name"] == "hot" and rule["enabled"] is True
    assert rule["rule_text"] == (
        'Some(Comparison { source: DataSourceId { source_type: Device, source_id: "env_sensor-0001", '
        'field_path: "temperature" }, operator: GreaterThan, threshold: 30.0, threshold_value: None })'
    )
    assert_error(await automation.get("/api/config/export"), 401, "UNAUTHORIZED")


async def test_import_is_as_limited_as_the_vendors(automation: httpx.AsyncClient, auth: dict) -> None:
    config = data(await automation.get("/api/config/export", headers=auth))
    config["llm_settings"] = {"backend": "ollama", "model": "qwen3:8b", "temperature": 0.7, "top_p": 0.9,
                              "max_tokens": 2048}  # fmt: skip
    config["rules"] = {"rules": [{"id": "r1", "name": "x", "enabled": True, "rule_text": "t"}]}
    result = data(await automation.post("/api/config/import", json={"config": config}, headers=auth))
    assert result["errors"] == ["Rule r1: Rule import not currently supported"]
    assert result["skipped"] == []
    assert result["imported"]["llm_settings"]["backend"] == "ollama"
    assert result["imported"]["devices"] == config["devices"]
    before = data(await automation.get("/api/devices", headers=auth))
    config["devices"]["devices"].append({"device_id": "new-1", "device_type": "env_sensor"})
    await automation.post("/api/config/import", json={"config": config}, headers=auth)
    assert data(await automation.get("/api/devices", headers=auth)) == before  # acknowledged, not created

    only_llm = {"sections": {"llm_settings": True}}
    bare = {"version": "1.0", "exported_at": 1}
    result = data(await automation.post("/api/config/import", json={"config": bare, "options": only_llm},
                                        headers=auth))  # fmt: skip
    assert result == {"imported": {"version": "1.0", "exported_at": 1767225600},
                      "skipped": ["LLM settings: not found in export"], "errors": []}  # fmt: skip
    bad_llm = {**bare, "llm_settings": {**config["llm_settings"], "backend": "anthropic"}}
    result = data(await automation.post("/api/config/import", json={"config": bad_llm}, headers=auth))
    assert result["errors"] == ["LLM settings: Unsupported backend: anthropic"]
    assert result["skipped"] == ["Devices: not found in export", "Rules: not found in export"]

    url = "/api/config/import"
    for body in ({}, {"config": {"version": "1.0"}}, {"config": {**bare, "exported_at": "now"}},
                 {"config": {**bare, "devices": {"devices": [{"device_id": 1}]}}},
                 {"config": bare, "options": {"overwrite": "yes"}}):  # fmt: skip
        assert_error(await automation.post(url, json=body, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"config": bare}), 401, "UNAUTHORIZED")


async def test_validate(automation: httpx.AsyncClient, auth: dict) -> None:
    url = "/api/config/validate"
    ok = data(await automation.post(url, json={"version": "1.0", "exported_at": 0}, headers=auth))
    assert ok == {"valid": True, "validation": {"version": True}, "errors": []}
    bad = {
        "version": "2.0", "exported_at": 0, "devices": {"devices": []},
        "llm_settings": {"backend": "", "model": "m", "temperature": 1, "top_p": 1, "max_tokens": 1},
    }  # fmt: skip
    result = data(await automation.post(url, json=bad, headers=auth))
    assert result == {
        "valid": False,
        "validation": {"llm_settings": False, "devices": False},
        "errors": [
            "Unsupported version: 2.0",
            "LLM settings: missing backend or model",
            "Devices: missing or invalid device configurations",
        ],
    }
    assert_error(await automation.post(url, json={"version": "1.0"}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json=[1], headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"version": "1.0", "exported_at": 0}), 401, "UNAUTHORIZED")


# Logs ---------------------------------------------------------------------------------------------
def _files(resp: httpx.Response) -> dict[str, str]:
    archive = zipfile.ZipFile(io.BytesIO(resp.content))
    return {name: archive.read(name).decode() for name in archive.namelist()}


async def test_logs_download(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    twin.clock.advance(60)  # the sensors report
    automation_of(twin.world).outages.take_offline("env_sensor-0002")
    twin.clock.advance(86_400 + 3600)  # into the next day
    body = {"data": {"temperature": 21.5}}
    assert (await automation.post("/api/devices/env_sensor-0001/webhook", json=body)).status_code == 200
    resp = await automation.get("/api/logs/download", headers=auth)
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/zip"
    assert resp.headers["content-disposition"] == 'attachment; filename="neomind-logs-2026-01-02.zip"'
    assert resp.headers["cache-control"] == "no-store, no-cache, must-revalidate"
    files = _files(resp)
    assert list(files) == ["neomind.log.2026-01-02", "neomind.log.2026-01-01"]  # newest first
    first = files["neomind.log.2026-01-01"].splitlines()
    assert first[0].startswith("2026-01-01T00:00:00.000000Z  INFO neomind: Server starting")
    assert any(" INFO neomind_api::auth_users: User 'admin' created" in line for line in first)
    assert any(
        "WARN neomind_devices::service: Device 'env_sensor-0002' went offline" in line for line in first
    )
    today = files["neomind.log.2026-01-02"]
    assert "Device 'env_sensor-0001' reported metric 'temperature'" in today and "\x1b" not in today
    last_day = await automation.get("/api/logs/download?days=1", headers=auth)
    assert list(_files(last_day)) == ["neomind.log.2026-01-02"]
    assert 'filename="neomind-logs-2026-01-02-last-1d.zip"' in last_day.headers["content-disposition"]
    assert list(_files(await automation.get("/api/logs/download?days=0", headers=auth))) == list(files)
    assert_error(await automation.get("/api/logs/download?days=-1", headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/logs/download?days=x", headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/logs/download"), 401, "UNAUTHORIZED")


async def test_logs_survive_a_restart_and_a_filter_can_leave_nothing(
    tmp_path: Path, settings: Settings
) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path)
    twin = build(durable)
    async with _client(twin.automation_app, "http://automation") as client:
        await admin_token(client)
        automation_of(twin.world).server_log.flush()  # as a file writer's buffer reaches the disk
    twin.world.store.close()
    again = build(durable)
    again.clock.advance(3 * 86_400)
    async with _client(again.automation_app, "http://automation") as client:
        login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        auth = {"Authorization": f"Bearer {login.json()['token']}"}
        files = _files(await client.get("/api/logs/download", headers=auth))
        assert "User 'admin' created" in files["neomind.log.2026-01-01"]
        automation_of(again.world).server_log.chunks.values()  # the store is readable
        resp = await client.get("/api/logs/download?days=1", headers=auth)
        assert_error(resp, 404, "NOT_FOUND")
        assert resp.json()["error"]["message"] == (
            "No log files match the selected time range (1 file(s) filtered out)."
        )
