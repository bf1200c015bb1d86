"""Skills over HTTP: the fifteen built-in skills, user skills created, updated and deleted, reload,
the match test on the text given, refusals as the handlers' bare ``{"error": ...}``, and which
changes a restart on the same state dir keeps (the stored files) and which it does not."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.api.support import assert_error, assert_raw
from tests.conftest import SCENARIOS, _client, admin_token
from twin.automation.skill_match import f32_shortest, match_skills, parse_skill, score_skill, tokenize
from twin.automation.skills import builtin_skills
from twin.serve import build
from twin.settings import Settings

BUILTIN_IDS = [
    "agent-management",
    "connector-management",
    "dashboard-management",
    "data-push-management",
    "device-onboarding",
    "extension-development",
    "extension-management",
    "llm-management",
    "message-management",
    "rule-management",
    "settings-management",
    "system-info",
    "transform-management",
    "widget-development",
    "widget-management",
]
PUMPS = """---
id: pump-care
name: Pump care
category: device
priority: 70
token_budget: 10
triggers:
  keywords: [pump, 水泵]
  tool_target:
    - tool: device
      actions: [control]
anti_triggers:
  keywords: [dashboard]
---

# Pump care

Check the pressure first.

Then restart the pump.
"""


async def ids(client: httpx.AsyncClient, auth: dict) -> list[str]:
    page = (await client.get("/api/skills?page_size=100", headers=auth)).json()
    return [s["id"] for s in page["skills"]]


async def test_builtin_skills_list_and_detail(automation: httpx.AsyncClient, auth: dict) -> None:
    page = (await automation.get("/api/skills", headers=auth)).json()
    assert (page["total"], page["page"], page["page_size"], page["total_pages"]) == (15, 1, 20, 1)
    assert [s["id"] for s in page["skills"]] == BUILTIN_IDS
    rule = next(s for s in page["skills"] if s["id"] == "rule-management")
    assert set(rule) == {
        "id",
        "name",
        "category",
        "origin",
        "priority",
        "token_budget",
        "keywords",
        "body_length",
    }
    assert (rule["category"], rule["origin"], rule["priority"]) == ("rule", "user", 85)  # the server's label

    second = (await automation.get("/api/skills?page=2&page_size=10", headers=auth)).json()
    assert [s["id"] for s in second["skills"]] == BUILTIN_IDS[10:] and second["total_pages"] == 2
    clamped = (await automation.get("/api/skills?page=0&page_size=0", headers=auth)).json()
    assert (clamped["page"], clamped["page_size"], clamped["total_pages"], len(clamped["skills"])) == (
        1,
        1,
        15,
        1,
    )
    assert (await automation.get("/api/skills?page_size=1000", headers=auth)).json()["page_size"] == 100
    # Every skill is labelled "user", so asking for built-in ones finds none.
    assert (await automation.get("/api/skills?origin=builtin", headers=auth)).json()["total"] == 0
    assert (await automation.get("/api/skills?origin=user", headers=auth)).json()["total"] == 15

    detail = (await automation.get("/api/skills/device-onboarding", headers=auth)).json()
    assert detail["name"] == "Device Onboarding & Connection Guide" and detail["category"] == "device"
    assert detail["tool_targets"][0] == {"tool": "system", "actions": ["info"]}
    assert detail["anti_trigger_keywords"][:2] == ["rule", "规则"] and detail["body"].startswith("# ")
    assert "body_length" not in detail

    assert_raw(await automation.get("/api/skills/nope", headers=auth), 404, "Skill 'nope' not found")
    for method, path in (("GET", "/api/skills/match"), ("DELETE", "/api/skills/reload")):  # POST only
        assert_error(await automation.request(method, path, headers=auth), 405, "METHOD_NOT_ALLOWED")
    for query in ("page=abc", "page=-1", f"page_size={2**32}"):
        assert_error(await automation.get(f"/api/skills?{query}", headers=auth), 422, "VALIDATION_ERROR")


async def test_create_update_delete_and_reload(automation: httpx.AsyncClient, auth: dict) -> None:
    resp = await automation.post("/api/skills", json={"content": PUMPS}, headers=auth)
    assert resp.status_code == 201
    created = resp.json()
    assert created == {
        "id": "pump-care",
        "name": "Pump care",
        "category": "device",
        "origin": "user",
        "priority": 70,
        "token_budget": 10,
        "keywords": ["pump", "水泵"],
        "tool_targets": [{"tool": "device", "actions": ["control"]}],
        "anti_trigger_keywords": ["dashboard"],
        "body": "# Pump care\n\nCheck the pressure first.\n\nThen restart the pump.",
    }
    assert (await automation.get("/api/skills/pump-care", headers=auth)).json() == created
    assert (await automation.get("/api/skills", headers=auth)).json()["total"] == 16

    # An update keeps the id it was made under, whatever id the content names.
    renamed = PUMPS.replace("id: pump-care", "id: other").replace("name: Pump care", "name: Pump care v2")
    resp = await automation.put("/api/skills/pump-care", json={"content": renamed}, headers=auth)
    assert (
        resp.status_code == 200 and resp.json()["id"] == "pump-care" and resp.json()["name"] == "Pump care v2"
    )
    assert "other" not in await ids(automation, auth)

    # The stored file is read again by the id its text names.
    resp = await automation.post("/api/skills/reload", headers=auth)
    assert resp.json() == {"message": "Skills reloaded", "total": 16}
    assert "other" in await ids(automation, auth) and "pump-care" not in await ids(automation, auth)

    resp = await automation.delete("/api/skills/other", headers=auth)
    assert resp.json() == {"message": "Skill 'other' deleted"}
    assert_raw(await automation.delete("/api/skills/other", headers=auth), 404, "Skill 'other' not found")
    # A built-in skill can be deleted too, until the next reload ("other" comes back with it: its
    # file is stored under pump-care, and deleting "other" removed a file named after "other").
    assert (await automation.delete("/api/skills/system-info", headers=auth)).status_code == 200
    assert "system-info" not in await ids(automation, auth)
    assert (await automation.post("/api/skills/reload", headers=auth)).json()["total"] == 16
    assert "system-info" in await ids(automation, auth)


async def test_write_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    cases = {
        "no front matter": "Parse error: Missing YAML frontmatter delimiters (---)",
        "---\nid: x\nname: y\n": "Parse error: Missing YAML frontmatter delimiters (---)",
        "---\nname: y\n---\nbody": "Parse error: Missing required field: id",
        "---\nid: y\n---\nbody": "Parse error: Missing required field: name",
    }
    for content, error in cases.items():
        assert_raw(await automation.post("/api/skills", json={"content": content}, headers=auth), 400, error)
        resp = await automation.put("/api/skills/rule-management", json={"content": content}, headers=auth)
        assert_raw(resp, 400, error)
    resp = await automation.put("/api/skills/nope", json={"content": PUMPS}, headers=auth)
    assert_raw(resp, 404, "Skill 'nope' not found")
    for body in ({}, {"content": 5}, {"content": None}, {"text": PUMPS}):
        assert_error(await automation.post("/api/skills", json=body, headers=auth), 422, "VALIDATION_ERROR")
        resp = await automation.put("/api/skills/rule-management", json=body, headers=auth)
        assert_error(resp, 422, "VALIDATION_ERROR")
    bad = await automation.post(
        "/api/skills", content=b"{", headers={**auth, "Content-Type": "application/json"}
    )
    assert_error(bad, 400, "BAD_REQUEST")
    assert await ids(automation, auth) == BUILTIN_IDS


async def test_match_on_the_text_given(automation: httpx.AsyncClient, auth: dict) -> None:
    await automation.post("/api/skills", json={"content": PUMPS}, headers=auth)

    async def match(query: str, **extra) -> dict:
        resp = await automation.post("/api/skills/match", json={"query": query, **extra}, headers=auth)
        assert resp.status_code == 200, resp.text
        return resp.json()

    found = await match("水泵 pump device control")
    assert found["query"] == "水泵 pump device control"
    first = found["matches"][0]
    assert (first["skill_id"], first["skill_name"]) == ("pump-care", "Pump care")
    assert first["body_preview"] == "# Pump care\n\nCheck the pressure first."  # cut to its 10-token budget
    scores = [m["score"] for m in found["matches"]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert await match("水泵 pump device control") == found  # deterministic

    # An anti-trigger takes 1.0 off a skill's score: on its own it excludes a skill that priority
    # alone would list. A context this large has room for every skill.
    wide = {"context_size": 32000}

    async def scores_of(query: str) -> dict[str, float]:
        return {m["skill_id"]: m["score"] for m in (await match(query, **wide))["matches"]}

    assert "pump-care" in await scores_of("zzz") and "pump-care" not in await scores_of("dashboard")
    assert (await scores_of("pump"))["pump-care"] - (await scores_of("pump dashboard"))["pump-care"] == (
        pytest.approx(1.0)
    )
    # A rule request goes to the rule skill.
    rules = (await match("删除规则 rule-001"))["matches"]
    assert rules[0]["skill_id"] == "rule-management" and rules[0]["score"] > 1
    assert len(rules[0]["body_preview"]) == 200
    # A small model's context holds fewer skill tokens: the first skill takes nearly all of them.
    small = (await match("删除规则 rule-001", context_size=1000))["matches"]
    assert small[0]["skill_id"] == "rule-management" and len(small) < len(rules)
    unrelated = (await match("zzz"))["matches"]  # priority alone, highest first, until the budget is spent
    assert [m["score"] for m in unrelated[:4]] == [0.089999996, 0.089999996, 0.089999996, 0.088]
    assert unrelated[0]["skill_id"] == "device-onboarding" and len(unrelated) < 16

    for body in ({}, {"query": 5}, {"query": "x", "context_size": -1}, {"query": "x", "context_size": "8k"}):
        resp = await automation.post("/api/skills/match", json=body, headers=auth)
        assert_error(resp, 422, "VALIDATION_ERROR")


def test_each_builtin_skill_is_found_by_its_own_example_request() -> None:
    """The built-in skills' match fields rank each skill first for a request it names as an example."""
    examples = {
        "让助手每天定时跑": "agent-management",
        "连到远程 MQTT": "connector-management",
        "做个监控面板": "dashboard-management",
        "把数据转发到我的服务器": "data-push-management",
        "shut down the pump": "device-onboarding",
        "写个自定义扩展": "extension-development",
        "装个天气扩展": "extension-management",
        "换个大模型": "llm-management",
        "发个通知到飞书": "message-management",
        "温度超过30就告警": "rule-management",
        "把时区改成上海": "settings-management",
        "broker 地址是多少": "system-info",
        "温度转华氏": "transform-management",
        "写个自定义图表组件": "widget-development",
        "装个仪表盘组件": "widget-management",
    }
    skills = builtin_skills()
    assert sorted(examples.values()) == BUILTIN_IDS == [s.id for s in skills]
    for query, skill_id in examples.items():
        assert match_skills(skills, query, 8000)[0].skill_id == skill_id, query
    # A close call: installing a dashboard widget also speaks of dashboards.
    assert [m.skill_id for m in match_skills(skills, "装个仪表盘组件", 8000)[:2]] == [
        "widget-management",
        "dashboard-management",
    ]
    assert all(s.body.startswith("# ") and len(s.body.encode()) <= 1500 for s in skills)


def test_matching_follows_the_server() -> None:
    """The server's own matcher and parser cases."""
    rule = parse_skill(
        "---\nid: rule-management\nname: Rule Management\ncategory: rule\npriority: 85\ntoken_budget: 800\n"
        "triggers:\n  keywords: [delete rule, remove rule, 删除规则, 修改规则, 更新规则]\n  tool_target:\n"
        "    tool: rule\n    actions: [delete, update, enable]\nanti_triggers:\n"
        "  keywords: [create rule, 创建规则, 新建规则]\n---\n\n# Rule Management\n\nStep 1: list\nStep 2: act"
    )
    assert rule.tool_targets[0].tool == "rule" and rule.tool_targets[0].actions == (
        "delete",
        "update",
        "enable",
    )
    assert match_skills([rule], "删除规则 rule-001", 8000)[0].skill_id == "rule-management"
    assert match_skills([rule], "创建规则 temperature-rule", 8000) == []
    assert all(m.score < 0.2 for m in match_skills([rule], "天气怎么样", 8000))
    assert sum(len(m.body.encode()) // 4 for m in match_skills([rule], "删除规则", 100)) <= 100
    device = parse_skill(
        "---\nid: device-onboarding\nname: Device Onboarding\ndescription: Use when the user wants to send a "
        'control command to a device ("turn off the pump", "把泵停掉", "set the fan speed", "停下来"). '
        "Includes 设备接入/控制/停机/调速.\ncategory: device\npriority: 90\ntriggers:\n"
        "  keywords: [device, 接入, MQTT, control]\nanti_triggers:\n  keywords: [rule, 规则]\n---\n# Device"
    )
    for query in ("turn off the pump", "把泵停掉", "set the fan speed to 50%"):
        assert [m.skill_id for m in match_skills([device], query, 8000)] == ["device-onboarding"]
    assert match_skills([device], "device 温度超过30就创建规则告警", 8000) == []
    # Single precision: three description hits reach 0.9 and stop there.
    quoted = parse_skill('---\nid: q\nname: Q\npriority: 0\ndescription: "aa" "bb" "cc" "dd"\n---\nx')
    assert f32_shortest(score_skill(quoted, "aa bb cc dd")) == 0.90000004
    assert tokenize("Create a LoRaWAN bridge!") == ["create", "lorawan", "bridge"]
    assert tokenize("把泵停掉") == ["把泵", "泵停", "停掉"]


async def test_auth_is_required(automation: httpx.AsyncClient) -> None:
    for method, path in (("GET", "/api/skills"), ("POST", "/api/skills/match"), ("DELETE", "/api/skills/x")):
        assert_error(await automation.request(method, path, json={"query": "x"}), 401, "UNAUTHORIZED")
        resp = await automation.request(method, path, headers={"X-API-Key": "nmk_" + "0" * 32})
        assert_error(resp, 401, "UNAUTHORIZED")


async def test_stored_skills_survive_a_restart(tmp_path: Path) -> None:
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state")
    first = build(settings)
    async with _client(first.automation_app, "http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        assert (await client.post("/api/skills", json={"content": PUMPS}, headers=auth)).status_code == 201
        edited = (await client.get("/api/skills/system-info", headers=auth)).json()["body"]
        content = f"---\nid: system-info\nname: System info (local)\n---\n{edited}\n\nLocal notes."
        assert (
            await client.put("/api/skills/system-info", json={"content": content}, headers=auth)
        ).is_success
        await client.delete("/api/skills/widget-management", headers=auth)
        unsafe = PUMPS.replace("id: pump-care", "id: pump care")  # not a file name: loaded, never stored
        assert (await client.post("/api/skills", json={"content": unsafe}, headers=auth)).status_code == 201
        assert (await client.get("/api/skills", headers=auth)).json()["total"] == 16
    first.world.store.close()

    second = build(settings)
    async with _client(second.automation_app, "http://automation") as client:
        login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        auth = {"Authorization": f"Bearer {login.json()['token']}"}
        assert (await client.get("/api/skills/pump-care", headers=auth)).json()["keywords"] == [
            "pump",
            "水泵",
        ]
        info = (await client.get("/api/skills/system-info", headers=auth)).json()
        assert info["name"] == "System info (local)" and info["body"].endswith("Local notes.")
        listed = await ids(client, auth)
        assert "widget-management" in listed and "pump care" not in listed and len(listed) == 16
    second.world.store.close()
