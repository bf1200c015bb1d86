"""Agents over HTTP: create/read/update/delete, status, schedules in step mode, executions, invoke,
and the vendor's refusals in its error envelope."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import admin_token
from twin.serve import Twin

DEVICE = "env_sensor-0001"
HOUR = 3600


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {await admin_token(automation)}"}


def body(**overrides) -> dict:
    return {
        "name": "Room watcher",
        "user_prompt": "Check the room and identify the sensor when needed",
        "schedule": {"schedule_type": "interval", "interval_seconds": 600},
        "device_ids": [DEVICE],
        "commands": [{"device_id": DEVICE, "command_name": "identify", "display_name": "Identify"}],
        **overrides,
    }


async def create(client: httpx.AsyncClient, auth: dict, **overrides) -> str:
    resp = await client.post("/api/agents", json=body(**overrides), headers=auth)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["status"] == "active" and data["name"] == "Room watcher"
    return data["id"]


def assert_error(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    payload = resp.json()
    assert payload["success"] is False and payload["error"]["code"] == code
    return payload["error"]


async def test_a_ten_minute_agent_runs_six_times_in_one_simulated_hour(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    agent_id = await create(automation, auth)
    twin.clock.advance(HOUR)
    resp = await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)
    data = resp.json()["data"]
    assert data["agent_id"] == agent_id and data["count"] == 6
    rows = data["executions"]
    assert {r["status"] for r in rows} == {"Completed"} and {r["trigger_type"] for r in rows} == {"schedule"}
    assert set(rows[0]) == {"id", "agent_id", "timestamp", "trigger_type", "status", "duration_ms"}
    assert rows[0]["timestamp"] == "2026-01-01T01:00:00+00:00"  # newest first
    detail = (await automation.get(f"/api/agents/{agent_id}/executions/{rows[0]['id']}", headers=auth)).json()
    decision = detail["data"]["decision_process"]
    assert decision["data_collected"][0]["data"]["device_id"] == DEVICE and decision["conclusion"]
    assert detail["data"]["result"]["actions_executed"][0]["command"] == "identify"
    agent = (await automation.get(f"/api/agents/{agent_id}", headers=auth)).json()["data"]
    assert (
        agent["status"] == "Active"
        and agent["execution_count"] == 6
        and agent["stats"]["total_executions"] == 6
    )


async def test_detail_list_update_status_and_delete(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    agent_id = await create(automation, auth)
    detail = (await automation.get(f"/api/agents/{agent_id}", headers=auth)).json()["data"]
    assert detail["schedule"] == {
        "schedule_type": "interval", "interval_seconds": 600, "cron_expression": None, "timezone": None,
    }  # fmt: skip
    assert {r["resource_type"] for r in detail["resources"]} == {"device", "command"}
    assert detail["execution_mode"] == "focused" and detail["created_at"].endswith("+00:00")
    summary = (await automation.get("/api/agents?view=summary", headers=auth)).json()["data"]
    assert summary == {"agents": [{"id": agent_id, "name": "Room watcher", "status": "Active"}], "count": 1}
    full = (await automation.get("/api/agents", headers=auth)).json()["data"]["agents"][0]
    assert full["execution_count"] == 0 and full["last_execution_at"] is None

    resp = await automation.put(
        f"/api/agents/{agent_id}",
        json={"schedule": {"schedule_type": "cron", "cron_expression": "0 * * * *"}, "name": "Hourly"},
        headers=auth,
    )
    assert resp.status_code == 200 and resp.json()["data"]["name"] == "Hourly"
    twin.clock.advance(2 * HOUR)
    assert (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"][
        "count"
    ] == 2

    resp = await automation.post(f"/api/agents/{agent_id}/status", json={"status": "paused"}, headers=auth)
    assert resp.json()["data"] == {"id": agent_id, "status": "paused"}
    twin.clock.advance(2 * HOUR)
    assert (await automation.get(f"/api/agents/{agent_id}", headers=auth)).json()["data"][
        "status"
    ] == "Paused"
    assert (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"][
        "count"
    ] == 2

    resp = await automation.delete(f"/api/agents/{agent_id}", headers=auth)
    assert resp.json()["data"] == {"id": agent_id, "deleted": True}
    assert_error(await automation.get(f"/api/agents/{agent_id}", headers=auth), 404, "NOT_FOUND")


async def test_execute_and_invoke(automation: httpx.AsyncClient, auth: dict) -> None:
    agent_id = await create(automation, auth)
    resp = await automation.post(
        f"/api/agents/{agent_id}/execute", json={"input": {"why": "test"}}, headers=auth
    )
    data = resp.json()["data"]
    assert (
        data["status"] == "Executing"
        and data["agent_id"] == agent_id
        and data["agent_name"] == "Room watcher"
    )
    resp = await automation.post(f"/api/agents/{agent_id}/invoke", headers=auth)
    data = resp.json()["data"]
    assert data["status"] == "Completed" and data["has_error"] is False
    assert data["actions"][0]["command"] == "identify" and 0.6 <= data["confidence"] <= 1.0
    assert data["duration_ms"] > 0 and DEVICE in data["conclusion"]
    rows = (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"][
        "executions"
    ]
    assert [r["trigger_type"] for r in rows] == ["manual", "manual"]


async def test_validate_cron_and_tools(automation: httpx.AsyncClient, auth: dict) -> None:
    resp = await automation.post(
        "/api/agents/validate-cron", json={"cron_expression": "0 8 * * *"}, headers=auth
    )
    data = resp.json()["data"]
    assert data["valid"] is True and data["next_executions"][0] == "2026-01-01T08:00:00+00:00"
    assert len(data["next_executions"]) == 5
    resp = await automation.post(
        "/api/agents/validate-cron", json={"cron_expression": "99 * * * *"}, headers=auth
    )
    assert resp.json()["data"]["valid"] is False and resp.json()["data"]["error"]
    tools = (await automation.get("/api/agents/tools", headers=auth)).json()["data"]["tools"]
    assert {"get_device_metrics", "send_device_command"} <= {t["name"] for t in tools}


@pytest.mark.parametrize(
    ("overrides", "status", "code"),
    [
        ({"schedule": {"schedule_type": "interval", "interval_seconds": 5}}, 422, "VALIDATION_ERROR"),
        ({"schedule": {"schedule_type": "cron"}}, 422, "VALIDATION_ERROR"),
        ({"schedule": {"schedule_type": "cron", "cron_expression": "every day"}}, 400, "BAD_REQUEST"),
        ({"schedule": {"schedule_type": "weekly"}}, 400, "BAD_REQUEST"),
        ({"device_ids": [], "commands": []}, 400, "BAD_REQUEST"),
        ({"device_ids": [], "commands": [], "execution_mode": "focused"}, 422, "VALIDATION_ERROR"),
        ({"user_prompt": ""}, 422, "VALIDATION_ERROR"),
        ({"user_prompt": None}, 422, "VALIDATION_ERROR"),
        ({"schedule": None}, 422, "VALIDATION_ERROR"),
        ({"schedule": {"interval_seconds": 60}}, 422, "VALIDATION_ERROR"),
        ({"max_chain_depth": "deep"}, 422, "VALIDATION_ERROR"),
        ({"llm_backend_id": "missing"}, 400, "BAD_REQUEST"),
    ],
)
async def test_create_refusals(
    automation: httpx.AsyncClient, auth: dict, overrides: dict, status: int, code: str
) -> None:
    payload = {k: v for k, v in body(**overrides).items() if v is not None}
    assert_error(await automation.post("/api/agents", json=payload, headers=auth), status, code)


async def test_a_free_agent_needs_no_resources(automation: httpx.AsyncClient, auth: dict) -> None:
    await create(automation, auth, device_ids=[], commands=[], execution_mode="free")


async def test_unknown_ids_bad_status_and_auth(automation: httpx.AsyncClient, auth: dict) -> None:
    agent_id = await create(automation, auth)
    for method, path in [
        ("GET", "/api/agents/nope"),
        ("PUT", "/api/agents/nope"),
        ("DELETE", "/api/agents/nope"),
        ("GET", "/api/agents/nope/executions"),
        ("POST", "/api/agents/nope/invoke"),
        ("GET", f"/api/agents/{agent_id}/executions/nope"),
    ]:
        resp = await automation.request(method, path, json={}, headers=auth)
        assert_error(resp, 404, "NOT_FOUND")
    resp = await automation.post(f"/api/agents/{agent_id}/status", json={"status": "Active"}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST")
    resp = await automation.post(f"/api/agents/{agent_id}/status", json={}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    resp = await automation.post(
        "/api/agents", content=b"{not json", headers={**auth, "content-type": "application/json"}
    )
    assert_error(resp, 400, "BAD_REQUEST")
    assert_error(await automation.get("/api/agents"), 401, "UNAUTHORIZED")
    bad = {"Authorization": "Bearer not-a-token"}
    assert_error(await automation.post("/api/agents", json=body(), headers=bad), 401, "UNAUTHORIZED")
