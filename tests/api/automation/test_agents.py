"""Agents over HTTP: create/read/update/delete, status, schedules in step mode, executions, invoke,
and the vendor's refusals in its error envelope."""

from __future__ import annotations

import httpx
import pytest

from hardware.ports.events import EventKind
from tests.conftest import admin_token
from twin.automation.server import automation_of
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


async def test_messages_memory_resources_and_llm_check(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    agent_id = await create(automation, auth)
    base = f"/api/agents/{agent_id}"
    resp = await automation.post(f"{base}/messages", json={"content": "Prefer Celsius"}, headers=auth)
    message = resp.json()["data"]
    assert message["message_type"] == "instruction" and message["content"] == "Prefer Celsius"
    listed = (await automation.get(f"{base}/messages", headers=auth)).json()["data"]
    assert listed["count"] == 1 and listed["messages"][0]["id"] == message["id"]
    memory_events = twin.world.bus.subscribe({EventKind.AGENT_MEMORY_UPDATED})
    twin.clock.advance(600)
    run = automation_of(twin.world).agents.executions(agent_id)[0]
    assert memory_events.get_nowait().data["execution_id"] == run.id
    assert run.status == "completed"
    chat = automation_of(twin.world).agents.context.for_prompt(
        automation_of(twin.world).agents.docs.get(agent_id)
    )
    assert chat == ["[instruction] Prefer Celsius"]

    memory = (await automation.get(f"{base}/memory", headers=auth)).json()["data"]
    assert memory["count"] == 1 and memory["entries"][0]["execution_id"] == run.id
    assert memory["entries"][0]["timestamp"] == "2026-01-01T00:10:00+00:00" and memory["cleared_at"] is None
    assert (await automation.delete(f"{base}/memory", headers=auth)).json()["data"]["cleared"] is True
    assert (await automation.get(f"{base}/memory", headers=auth)).json()["data"]["count"] == 0
    assert (
        any(" agent.memory_updated " in line for line in twin.world.trace or []) or twin.world.trace is None
    )

    details = await automation.post(
        f"{base}/executions/details", json={"execution_ids": [run.id, "x"]}, headers=auth
    )
    assert [e["id"] for e in details.json()["data"]["executions"]] == [run.id]
    assert details.json()["data"]["executions"][0]["decision_process"]["conclusion"]

    resources = (await automation.get(f"{base}/available-resources", headers=auth)).json()["data"]
    assert DEVICE in {d["device_id"] for d in resources["devices"]}
    first = next(d for d in resources["devices"] if d["device_id"] == DEVICE)
    assert {"identify", "reboot"} <= {c["name"] for c in first["commands"]}

    resp = await automation.delete(f"{base}/messages/{message['id']}", headers=auth)
    assert resp.json()["data"]["deleted"] is True
    assert_error(await automation.delete(f"{base}/messages/{message['id']}", headers=auth), 404, "NOT_FOUND")
    await automation.post(f"{base}/messages", json={"content": "a"}, headers=auth)
    assert (await automation.delete(f"{base}/messages", headers=auth)).json()["data"]["deleted"] == 1
    bad = {"content": "a", "message_type": "shout"}
    assert_error(await automation.post(f"{base}/messages", json=bad, headers=auth), 400, "BAD_REQUEST")
    assert_error(await automation.post(f"{base}/messages", json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/agents/nope/messages", headers=auth), 404, "NOT_FOUND")

    check = (await automation.post("/api/agents/validate-llm", json={}, headers=auth)).json()["data"]
    assert check == {"valid": True, "backend_id": "simulated", "message": "ready"}
    check = await automation.post("/api/agents/validate-llm", json={"backend_id": "nope"}, headers=auth)
    assert check.json()["data"]["valid"] is False
    assert_error(await automation.get(f"{base}/memory"), 401, "UNAUTHORIZED")
