"""Rules over HTTP: CRUD with the vendor's DTO, enable, dry run, manual trigger, history, and the
failure paths (auth, unknown and malformed ids, bad shapes with a hint, unavailable resources)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from twin.serve import Twin

SENSOR = "env_sensor-0001"
DRY = {
    "condition_type": "comparison",
    "source": f"device:{SENSOR}:humidity",
    "operator": "less_than",
    "threshold": 37.1,
}
RULE = {
    "name": "Dry air",
    "description": "humidity under 37.1 %",
    "trigger": {"trigger_type": "data_change"},
    "condition": DRY,
    "actions": [{"type": "notify", "message": "humidity ${value}", "severity": "warning"}],
    "tags": ["env"],
    "cooldown": 0,
}


async def create(client: httpx.AsyncClient, auth: dict[str, str], **overrides) -> dict:
    resp = await client.post("/api/rules", json={**RULE, **overrides}, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["rule"]


async def test_create_returns_the_rule_dto(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    rule = await create(automation, auth)
    uuid.UUID(rule["id"])
    assert rule["name"] == "Dry air" and rule["enabled"] is True and rule["trigger_count"] == 0
    assert rule["created_at"] == rule["updated_at"] == "2026-01-01T00:00:00+00:00"
    assert "last_triggered" not in rule and rule["tags"] == ["env"] and rule["cooldown"] == 0
    assert rule["trigger"] == {"trigger_type": "data_change", "sources": [f"device:{SENSOR}:humidity"]}
    cond = rule["condition"]
    assert cond["operator"] == "<" and cond["threshold"] == 37.1
    assert (cond["source_type"], cond["source_id"], cond["metric"]) == ("device", SENSOR, "humidity")
    assert rule["actions"] == [{"type": "notify", "message": "humidity ${value}", "severity": "warning"}]
    assert rule["dsl_preview"].startswith('RULE "Dry air"\nWHEN device:env_sensor-0001:humidity < 37.1')
    listed = (await automation.get("/api/rules", headers=auth)).json()["data"]
    assert (
        listed["count"] == 1 and listed["rules"][0]["id"] == rule["id"] and "source" not in listed["rules"][0]
    )


async def test_defaults_and_range_rendering(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    body = {
        "name": "band",
        "condition": {"condition_type": "range", "source": DRY["source"], "min": 1, "max": 2},
    }
    resp = await automation.post("/api/rules", json=body, headers=auth)
    rule = resp.json()["data"]["rule"]
    assert rule["cooldown"] == 60_000 and rule["actions"] == [] and "tags" not in rule
    assert rule["condition"]["operator"] == "between" and rule["trigger"]["trigger_type"] == "data_change"
    none = await automation.post(
        "/api/rules", json={"name": "manual", "trigger": {"trigger_type": "manual"}}, headers=auth
    )
    assert none.json()["data"]["rule"]["condition"] == {"condition_type": "none"}


async def test_rule_fires_and_detail_shows_history(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    rule = await create(automation, auth)
    twin.clock.advance(90)  # under the threshold at t=80 and t=90
    detail = (await automation.get(f"/api/rules/{rule['id']}", headers=auth)).json()["data"]
    assert detail["rule"]["trigger_count"] == 2
    assert detail["rule"]["last_triggered"] == "2026-01-01T00:01:30+00:00"
    assert len(detail["history"]) == 2 and detail["history"][0]["success"] is True
    assert detail["history"][0]["triggered_at"] == "2026-01-01T00:01:30+00:00"
    history = (await automation.get(f"/api/rules/{rule['id']}/history", headers=auth)).json()["data"]
    assert history["rule_id"] == rule["id"] and len(history["executions"]) == 2
    messages = (await automation.get("/api/messages?category=alert", headers=auth)).json()["data"]
    assert messages["total"] == 2 and messages["messages"][0]["severity"] == "warning"


async def test_update_enable_delete(automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin) -> None:
    rule = await create(automation, auth)
    resp = await automation.put(f"/api/rules/{rule['id']}", json={**RULE, "name": "Renamed"}, headers=auth)
    assert resp.json()["data"]["updated"] is True and resp.json()["data"]["rule"]["name"] == "Renamed"
    off = await automation.post(f"/api/rules/{rule['id']}/enable", json={"enabled": False}, headers=auth)
    assert off.json()["data"] == {"rule_id": rule["id"], "enabled": False}
    twin.clock.advance(90)
    assert (await automation.get(f"/api/rules/{rule['id']}", headers=auth)).json()["data"]["rule"][
        "trigger_count"
    ] == 0
    gone = await automation.delete(f"/api/rules/{rule['id']}", headers=auth)
    assert gone.json()["data"] == {"rule_id": rule["id"], "deleted": True}
    again = await automation.get(f"/api/rules/{rule['id']}", headers=auth)
    assert again.status_code == 404 and again.json()["error"]["code"] == "NOT_FOUND"


async def test_dry_run_reads_value_from_body_or_current(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    rule = await create(automation, auth)
    path = f"/api/rules/{rule['id']}/test"
    given = (await automation.post(path, json={"value": 30}, headers=auth)).json()["data"]
    assert given == {
        "rule_id": rule["id"],
        "rule_name": "Dry air",
        "condition_met": True,
        "value_used": 30,
        "value_source": "input",
        "threshold": 37.1,
        "operator": "<",
    }
    bare = (await automation.post(path, content=b"40", headers=auth)).json()["data"]
    assert bare["value_used"] == 40 and bare["condition_met"] is False
    text = (await automation.post(path, content=b"dry", headers=auth)).json()["data"]
    assert text["value_used"] == "dry" and text["condition_met"] is False
    twin.clock.advance(10)
    current = (await automation.post(path, headers=auth)).json()["data"]
    assert current["value_source"] == "current" and current["value_used"] == 37.18
    assert (await automation.get("/api/messages", headers=auth)).json()["data"]["total"] == 0
    executed = (await automation.post(path + "?execute=true", json={"input": 1}, headers=auth)).json()["data"]
    assert executed["executed"] is True and executed["execution_result"]["success"] is True
    assert (await automation.get("/api/messages", headers=auth)).json()["data"]["total"] == 1


async def test_manual_trigger_runs_the_actions(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    rule = await create(automation, auth)
    resp = await automation.post(f"/api/rules/{rule['id']}/trigger", headers=auth)
    data = resp.json()["data"]
    assert data["rule_id"] == rule["id"] and data["success"] is True and data["error"] is None
    assert data["actions_executed"][0].startswith("notify:") and data["duration_ms"] == 0


async def test_dry_run_failures(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    logical = {"condition_type": "logical", "operator": "or", "conditions": [DRY, DRY]}
    rule = await create(automation, auth, condition=logical)
    resp = await automation.post(f"/api/rules/{rule['id']}/test", json={"value": 1}, headers=auth)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "BAD_REQUEST"
    assert resp.json()["error"]["hint"]
    await automation.post(
        "/api/devices",
        json={
            "device_id": "lab",
            "device_type": "env_sensor",
            "name": "Lab",
            "adapter_type": "webhook",
            "connection_config": {},
        },
        headers=auth,
    )
    quiet = await create(automation, auth, condition={**DRY, "source": "device:lab:humidity"})
    nodata = await automation.post(f"/api/rules/{quiet['id']}/test", headers=auth)
    assert nodata.status_code == 400 and "No data" in nodata.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"condition": DRY}, "name"),
        ({"name": ""}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "x", "condition": {**DRY, "operator": "about"}}, "operator"),
        ({"name": "x", "condition": {**DRY, "source": "sensor-1/humidity"}}, "source"),
        ({"name": "x", "trigger": {"trigger_type": "schedule"}}, "cron"),
        ({"name": "x", "actions": [{"type": "notify", "message": "m", "severity": "loud"}]}, "severity"),
        ({"name": "x", "actions": [{"type": "execute", "command": "reboot"}]}, "target"),
        ({"name": "x", "actions": "notify"}, "actions"),
        ({"name": "x", "for_duration": "5s"}, "for_duration"),
        ("not an object", "JSON object"),
    ],
)
async def test_bad_shapes_answer_400_with_a_hint(
    automation: httpx.AsyncClient, auth: dict[str, str], body: object, fragment: str
) -> None:
    resp = await automation.post("/api/rules", json=body, headers=auth)
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert (
        error["code"] == "BAD_REQUEST" and fragment in error["message"] and "condition_type" in error["hint"]
    )


async def test_unavailable_resources(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    ghost = {**RULE, "condition": {**DRY, "source": "device:ghost:humidity"}}
    resp = await automation.post("/api/rules", json=ghost, headers=auth)
    assert (
        resp.status_code == 400 and resp.json()["error"]["message"] == "Rule references unavailable resources"
    )
    target = {**RULE, "actions": [{"type": "execute", "target": "ghost", "command": "reboot"}]}
    assert (await automation.post("/api/rules", json=target, headers=auth)).status_code == 400


async def test_ids_and_auth(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    bad = await automation.get("/api/rules/not-a-uuid", headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "Invalid rule ID"
    unknown = str(uuid.uuid4())
    for method, path in (
        ("GET", f"/api/rules/{unknown}"),
        ("PUT", f"/api/rules/{unknown}"),
        ("DELETE", f"/api/rules/{unknown}"),
        ("POST", f"/api/rules/{unknown}/test"),
        ("POST", f"/api/rules/{unknown}/trigger"),
        ("GET", f"/api/rules/{unknown}/history"),
    ):
        resp = await automation.request(method, path, json=RULE if method == "PUT" else None, headers=auth)
        assert resp.status_code == 404, (method, path)
        assert resp.json()["success"] is False and resp.json()["error"]["code"] == "NOT_FOUND"
    enable = await automation.post(f"/api/rules/{unknown}/enable", json={"enabled": "maybe"}, headers=auth)
    assert enable.status_code == 422 and enable.json()["error"]["code"] == "VALIDATION_ERROR"
    for method, path in (("GET", "/api/rules"), ("POST", "/api/rules"), ("GET", f"/api/rules/{unknown}")):
        resp = await automation.request(method, path, json=RULE)
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED"
    wrong = await automation.get("/api/rules", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


async def test_export_import_validate(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    rule = await create(automation, auth)
    exported = (await automation.get("/api/rules/export", headers=auth)).json()["data"]
    assert (
        exported["version"] == "1.0" and exported["count"] == 1 and exported["rules"][0]["id"] == rule["id"]
    )
    assert exported["exported_at"] == "2026-01-01T00:00:00+00:00"
    again = await automation.post("/api/rules/import", json={"rules": exported["rules"]}, headers=auth)
    assert again.json()["data"] == {"imported": 0, "skipped": 1, "errors": []}
    await automation.delete(f"/api/rules/{rule['id']}", headers=auth)
    bad = {"name": "broken", "condition": {"condition_type": "comparison"}}
    result = await automation.post(
        "/api/rules/import", json={"rules": [*exported["rules"], bad]}, headers=auth
    )
    data = result.json()["data"]
    assert data["imported"] == 1 and data["skipped"] == 0 and data["errors"][0].startswith("rule 1: ")
    restored = (await automation.get(f"/api/rules/{rule['id']}", headers=auth)).json()["data"]["rule"]
    assert restored["condition"] == rule["condition"] and restored["actions"] == rule["actions"]
    valid = await automation.post("/api/rules/validate", json=RULE, headers=auth)
    assert valid.json()["data"] == {"valid": True, "errors": []}
    ghost = {**RULE, "condition": {**DRY, "source": "device:ghost:humidity"}}
    invalid = (await automation.post("/api/rules/validate", json=ghost, headers=auth)).json()["data"]
    assert invalid == {
        "valid": False,
        "errors": ["Rule references unavailable resources: device:ghost:humidity"],
    }
    assert (await automation.post("/api/rules/import", json={"items": []}, headers=auth)).status_code == 422
    assert (await automation.get("/api/rules/export")).status_code == 401


async def test_trigger_agent_action_runs_the_agent(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    agent = {
        "name": "watch",
        "user_prompt": "Check the humidity",
        "schedule": {"schedule_type": "interval", "interval_seconds": 3600},
        "execution_mode": "free",
    }
    agent_id = (await automation.post("/api/agents", json=agent, headers=auth)).json()["data"]["id"]
    rule = await create(automation, auth, actions=[{"type": "trigger_agent", "agent_id": agent_id}])
    ghost = await automation.post(
        "/api/rules", json={**RULE, "actions": [{"type": "trigger_agent", "agent_id": "ghost"}]}, headers=auth
    )
    assert (
        ghost.status_code == 400
        and ghost.json()["error"]["message"] == "Rule references unavailable resources"
    )
    twin.clock.advance(80)
    runs = (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"]
    assert [(e["trigger_type"], e["timestamp"]) for e in runs["executions"]] == [
        ("rule", "2026-01-01T00:01:20+00:00")
    ]
    history = (await automation.get(f"/api/rules/{rule['id']}/history", headers=auth)).json()["data"]
    assert history["executions"][0]["actions_executed"] == [f"trigger_agent:{agent_id}"]


async def test_rule_stats(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await create(automation, auth)
    await create(automation, auth, enabled=False, trigger={"trigger_type": "manual"})
    stats = (await automation.get("/api/stats/rules", headers=auth)).json()["data"]["stats"]
    assert stats == {
        "total_rules": 2,
        "enabled_rules": 1,
        "disabled_rules": 1,
        "by_type": {"data_change": 1, "manual": 1},
    }
    assert (await automation.get("/api/stats/rules")).status_code == 401
