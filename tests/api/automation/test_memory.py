"""System memory over HTTP: the persistent files with their limits, custom files, configuration and
compression, export, the legacy categories and per-source files, what the server writes into its
memory by itself on the world clock, refusals as the handlers' bare ``{"error": ...}`` (auth
failures in the auth shape of each release), and all of it kept across a restart on a state dir."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx

from tests.api.support import assert_error, assert_raw, on_the_clock
from tests.conftest import SCENARIOS, _client, admin_token
from twin.automation.memory import evict_to_limit, replace_marker
from twin.automation.memory_context import fit_context
from twin.serve import Twin, build
from twin.settings import Settings

USER_DEFAULT = "# User Profile\n\n> Last updated: \n\n"
T0 = 1767225600
"""The test scenario's epoch."""


async def knowledge(client: httpx.AsyncClient, auth: dict) -> str:
    return (await client.get("/api/memory/file/knowledge", headers=auth)).json()["content"]


# The persistent files ---------------------------------------------------------------------------
async def test_files_read_write_and_stats(automation: httpx.AsyncClient, auth: dict) -> None:
    resp = await automation.get("/api/memory/file/user", headers=auth)
    assert resp.json() == {"success": True, "target": "user", "content": USER_DEFAULT, "chars": 34}
    assert (await knowledge(automation, auth)).startswith("# System Knowledge\n\n## System Resources\n")

    text = "# User\n\n- Prefers °C\n- 语言: 中文\n"
    resp = await automation.put("/api/memory/file/user", json={"content": text}, headers=auth)
    assert resp.json() == {"success": True, "message": "user updated", "chars": len(text)}
    assert (await automation.get("/api/memory/file/user", headers=auth)).json()["content"] == text

    stats = (await automation.get("/api/memory/stats", headers=auth)).json()
    assert stats["files"]["user"] == {"chars": len(text), "modified_at": 0}
    assert set(stats["files"]) == {"user", "knowledge", "procedures"} and stats["custom_files"] == []


async def test_file_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    over = "x" * 2001
    resp = await automation.put("/api/memory/file/user", json={"content": over}, headers=auth)
    assert_raw(resp, 400, "Failed to write user: Invalid input: Content exceeds user char limit: 2001 > 2000")
    ok = await automation.put("/api/memory/file/user", json={"content": "x" * 2000}, headers=auth)
    assert ok.status_code == 200
    message = "Invalid target: notes. Must be 'user', 'knowledge', or 'procedures'"
    assert_raw(await automation.get("/api/memory/file/notes", headers=auth), 400, message)
    assert_raw(
        await automation.put("/api/memory/file/notes", json={"content": ""}, headers=auth), 400, message
    )

    assert_error(
        await automation.put("/api/memory/file/user", json={}, headers=auth), 422, "VALIDATION_ERROR"
    )
    for content in (5, None, ["a"], True):
        resp = await automation.put("/api/memory/file/user", json={"content": content}, headers=auth)
        assert_error(resp, 422, "VALIDATION_ERROR")
    bad = await automation.put(
        "/api/memory/file/user",
        content=b'{"content": "a"',
        headers={**auth, "Content-Type": "application/json"},
    )
    assert_error(bad, 400, "BAD_REQUEST")
    resp = await automation.request("DELETE", "/api/memory/file/user", headers=auth)
    assert_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert (await automation.get("/api/memory/file/user", headers=auth)).json()["chars"] == 2000


# Custom files -----------------------------------------------------------------------------------
async def test_custom_files(automation: httpx.AsyncClient, auth: dict) -> None:
    assert (await automation.get("/api/memory/custom", headers=auth)).json() == {"success": True, "files": []}
    for name, text in (("pumps", "- Pump P1 runs 8-18h\n"), ("greenhouse-2", "温室")):
        resp = await automation.put(f"/api/memory/custom/{name}", json={"content": text}, headers=auth)
        assert resp.json() == {
            "success": True,
            "message": f"Custom file '{name}' updated",
            "chars": len(text),
        }
    files = [{"name": "greenhouse-2", "chars": 2}, {"name": "pumps", "chars": 21}]
    assert (await automation.get("/api/memory/custom", headers=auth)).json()["files"] == files
    assert (await automation.get("/api/memory/stats", headers=auth)).json()["custom_files"] == files
    got = (await automation.get("/api/memory/custom/pumps", headers=auth)).json()
    assert got == {"success": True, "name": "pumps", "content": "- Pump P1 runs 8-18h\n", "chars": 21}
    # A valid name without a file reads as empty; deleting it is fine.
    empty = await automation.get("/api/memory/custom/nothing", headers=auth)
    assert empty.json() == {"success": True, "name": "nothing", "content": "", "chars": 0}
    resp = await automation.delete("/api/memory/custom/pumps", headers=auth)
    assert resp.json() == {"success": True, "message": "Custom file 'pumps' deleted"}
    assert (await automation.delete("/api/memory/custom/pumps", headers=auth)).status_code == 200
    assert [
        f["name"] for f in (await automation.get("/api/memory/custom", headers=auth)).json()["files"]
    ] == ["greenhouse-2"]


async def test_custom_file_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    chars = (
        "Invalid input: Custom file name must only contain lowercase letters, digits, hyphens, "
        "and underscores"
    )
    length = "Invalid input: Custom file name must be 1-32 characters"
    assert_raw(
        await automation.get("/api/memory/custom/Pumps", headers=auth), 404, f"Custom file not found: {chars}"
    )
    resp = await automation.put("/api/memory/custom/a.b", json={"content": "x"}, headers=auth)
    assert_raw(resp, 400, f"Failed to write custom file 'a.b': {chars}")
    long = "a" * 33
    resp = await automation.put(f"/api/memory/custom/{long}", json={"content": "x"}, headers=auth)
    assert_raw(resp, 400, f"Failed to write custom file '{long}': {length}")
    resp = await automation.delete("/api/memory/custom/UP", headers=auth)
    assert_raw(resp, 500, f"Failed to delete custom file 'UP': {chars}")
    resp = await automation.put("/api/memory/custom/big", json={"content": "x" * 20001}, headers=auth)
    message = "Invalid input: Custom file content exceeds big char limit: 20001 > 20000"
    assert_raw(resp, 400, f"Failed to write custom file 'big': {message}")
    resp = await automation.put("/api/memory/custom/big", json={"content": {"a": 1}}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    assert (await automation.get("/api/memory/custom", headers=auth)).json()["files"] == []


# Configuration and compression ------------------------------------------------------------------
DEFAULT_CONFIG = {
    "enabled": True,
    "storage_path": "data/memory",
    "user_char_limit": 2000,
    "knowledge_char_limit": 3000,
    "procedures_char_limit": 3000,
    "agent_char_limit": 20000,
    "temp_file_ttl_days": 7,
    "system_context_interval_secs": 600,
    "summary_interval_secs": 7200,
    "summary_backend_id": None,
}


async def test_config_round_trip_and_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    assert (await automation.get("/api/memory/config", headers=auth)).json() == DEFAULT_CONFIG
    changed = {"user_char_limit": 120, "summary_backend_id": "llm-1", "unknown": "ignored"}
    resp = await automation.put("/api/memory/config", json={"config": changed}, headers=auth)
    expected = {**DEFAULT_CONFIG, "user_char_limit": 120, "summary_backend_id": "llm-1"}
    assert resp.json() == {"success": True, "config": expected}
    assert (await automation.get("/api/memory/config", headers=auth)).json() == expected

    for body in ({}, {"config": None}, {"config": "x"}):
        assert_error(
            await automation.put("/api/memory/config", json=body, headers=auth), 422, "VALIDATION_ERROR"
        )
    for field, value in (
        ("user_char_limit", "100"),
        ("user_char_limit", 1.5),
        ("user_char_limit", -1),
        ("user_char_limit", True),
        ("enabled", "yes"),
        ("temp_file_ttl_days", 2**64),
        ("summary_backend_id", 7),
    ):
        resp = await automation.put("/api/memory/config", json={"config": {field: value}}, headers=auth)
        assert_error(resp, 422, "VALIDATION_ERROR")
    assert (await automation.get("/api/memory/config", headers=auth)).json() == expected
    # An empty configuration is a whole one: every field back to its default.
    resp = await automation.put("/api/memory/config", json={"config": {}}, headers=auth)
    assert resp.json()["config"] == DEFAULT_CONFIG


async def test_compress_cuts_to_the_configured_limits(automation: httpx.AsyncClient, auth: dict) -> None:
    resp = await automation.post("/api/memory/compress", headers=auth)
    message = "No eviction needed — all files within char limits."
    assert resp.json() == {"success": True, "lines_evicted": 0, "message": message}

    lines = [f"- fact {i:02d}" for i in range(40)]  # 40 lines of 9 characters
    await automation.put("/api/memory/file/procedures", json={"content": "\n".join(lines)}, headers=auth)
    config = {"procedures_char_limit": 58}  # five lines and their newlines (49), not six (59)
    await automation.put("/api/memory/config", json={"config": config}, headers=auth)
    # The API's own writes keep checking the default limits, whatever the configuration says.
    assert (
        await automation.put("/api/memory/file/procedures", json={"content": "y" * 2999}, headers=auth)
    ).is_success
    await automation.put("/api/memory/file/procedures", json={"content": "\n".join(lines)}, headers=auth)

    resp = await automation.post("/api/memory/compress", headers=auth)
    message = "Eviction completed: 35 lines removed from files exceeding limits"
    assert resp.json() == {"success": True, "lines_evicted": 35, "message": message}
    kept = (await automation.get("/api/memory/file/procedures", headers=auth)).json()
    assert kept["content"] == "\n".join(lines[:5]) and kept["chars"] == 49


def test_eviction_and_markers_follow_the_server() -> None:
    assert evict_to_limit("hello", 5) == ("hello", 0)
    assert evict_to_limit("line 1\nline 2\nline 3\nline 4\nline 5", 15) == ("line 1\nline 2", 3)
    assert evict_to_limit("一二三四五六七八九十\n" * 3, 21) == (
        "一二三四五六七八九十\n一二三四五六七八九十",
        1,
    )
    assert evict_to_limit("x" * 11, 10) == ("", 1)
    assert replace_marker("A", "m", "1") == "A\n\n<!-- m -->\n1\n<!-- /m -->\n"
    assert (
        replace_marker("A\n\n<!-- m -->\n1\n<!-- /m -->\n", "m", "2") == "A\n\n<!-- m -->\n2\n<!-- /m -->\n"
    )
    assert replace_marker("A <!-- m --> old", "m", "2") == "A <!-- m -->\n2\n<!-- /m -->\n"
    devices = "### Devices\n" + "\n".join(f"- sensor {i:03d} (s{i:03d})" for i in range(100))
    fitted = fit_context([devices, "### Agents\n- Watcher"])
    assert len(fitted) <= 800 and fitted.endswith("\n\n### Agents\n- Watcher")
    assert fitted.count("- sensor") == 38 and "- sensor 037 (s037)\n\n###" in fitted  # 20 characters a line


# Export and the legacy categories ---------------------------------------------------------------
async def test_categories_and_export(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    resp = await automation.get("/api/memory/category/pattern", headers=auth)
    default = "# Task Patterns\n\n> Last updated: 2026-01-01 00:00\n> Total entries: 0\n\n"
    stats = {"entry_count": 0, "file_size": len(default), "modified_at": 0}
    assert resp.json() == {"category": "task_patterns", "content": default, "stats": stats}

    twin.clock.advance(90)
    text = "# Task Patterns\n\n- Water at dawn\n  - twice in summer\n"
    resp = await automation.put("/api/memory/category/TASK_PATTERNS", json={"content": text}, headers=auth)
    assert resp.json() == {"success": True, "message": "Category Task Patterns updated"}
    got = (await automation.get("/api/memory/category/任务模式", headers=auth)).json()
    assert got["content"] == text
    assert got["stats"] == {"entry_count": 2, "file_size": len(text.encode()), "modified_at": T0 + 90}

    resp = await automation.get("/api/memory/export", headers=auth)
    assert resp.headers["content-type"] == "text/markdown; charset=utf-8"
    assert resp.text.startswith(
        "# NeoMind Memory Export\n\nGenerated: 2026-01-01 00:01:30 UTC\n\n---\n\n# User Profile"
    )
    assert f"---\n\n# Task Patterns\n\n{text}\n\n---\n\n# System Evolution" in resp.text

    valid = "user_profile, domain_knowledge, task_patterns, system_evolution"
    resp = await automation.get("/api/memory/category/moods", headers=auth)
    assert_raw(resp, 400, f"Invalid category: moods. Valid: {valid}")
    resp = await automation.put("/api/memory/category/moods", json={"content": "x"}, headers=auth)
    assert_raw(resp, 400, "Invalid category: moods")
    resp = await automation.put("/api/memory/category/facts", json={"text": "x"}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    resp = await automation.delete("/api/memory/category/facts", headers=auth)
    assert_error(resp, 405, "METHOD_NOT_ALLOWED")


async def test_legacy_source_files(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    listed = (await automation.get("/api/memory", headers=auth)).json()
    system = {
        "id": "system",
        "name": "System",
        "source_type": "system",
        "size": 93,
        "modified_at": T0,
        "entry_count": 0,
    }
    assert listed == {"files": [system], "total": 1}
    resp = await automation.get("/api/memory/anything/x", headers=auth)  # any other type names system.md
    assert resp.json()["source_type"] == "anything" and resp.json()["content"].startswith("# System Memory")

    twin.clock.advance(10)
    await automation.put("/api/memory/agent/watcher", json={"content": "# Watcher\n- a\n- b\n"}, headers=auth)
    twin.clock.advance(10)
    await automation.put("/api/memory/chat/0123456789ab", json={"content": "- hi"}, headers=auth)
    files = (await automation.get("/api/memory", headers=auth)).json()["files"]
    assert [(f["id"], f["name"], f["source_type"], f["entry_count"]) for f in files] == [
        ("0123456789ab", "Chat 01234567", "chat", 1),
        ("watcher", "watcher", "agent", 2),
        ("system", "System", "system", 0),
    ]
    resp = await automation.get("/api/memory/agent/watcher", headers=auth)
    assert resp.json() == {"id": "watcher", "source_type": "agent", "content": "# Watcher\n- a\n- b\n"}
    resp = await automation.delete("/api/memory/agent/watcher", headers=auth)
    assert resp.json() == {"success": True, "message": "Memory file deleted"}

    missing = 'Storage error: Memory file not found: "data/memory/agents/watcher.md"'
    assert_raw(
        await automation.get("/api/memory/agent/watcher", headers=auth),
        404,
        f"Memory file not found: {missing}",
    )
    assert_raw(
        await automation.delete("/api/memory/agent/watcher", headers=auth),
        500,
        f"Failed to delete memory: {missing}",
    )
    resp = await automation.delete("/api/memory/system/system", headers=auth)
    assert_raw(resp, 500, "Failed to delete memory: Storage error: Cannot delete system memory")
    assert_error(await automation.put("/api/memory/chat/x", json=[], headers=auth), 422, "VALIDATION_ERROR")
    assert (await automation.get("/api/memory", headers=auth)).json()["total"] == 2


# What the server writes by itself ---------------------------------------------------------------
async def test_system_context_follows_the_world(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    twin.clock.advance(29)
    assert "system-context" not in await knowledge(automation, auth)
    twin.clock.advance(1)  # 30 s after start
    text = await knowledge(automation, auth)
    block = text[text.index("<!-- system-context -->") :]
    assert block.startswith(
        "<!-- system-context -->\n### Devices\n- env_sensor-0001 (env_sensor-0001)\n"
        "- env_sensor-0002 (env_sensor-0002)\n- env_sensor-0003 (env_sensor-0003)\n"
    )
    assert block.endswith("<!-- /system-context -->\n") and "### Dashboards" not in block

    await automation.post("/api/dashboards", json={"name": "Greenhouse"}, headers=auth)
    await automation.delete("/api/devices/env_sensor-0002", headers=auth)
    twin.clock.advance(599)
    assert "Greenhouse" not in await knowledge(automation, auth)
    twin.clock.advance(1)  # every 600 s
    text = await knowledge(automation, auth)
    assert "### Dashboards\n- Greenhouse [default]\n<!-- /system-context -->" in text
    assert "env_sensor-0002" not in text and text.count("<!-- system-context -->") == 1


async def test_chats_and_agent_runs_are_summarised(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    for message in ("What is the humidity of the greenhouse sensor?", "Show the greenhouse temperature"):
        session = (await automation.post("/api/sessions", json={}, headers=auth)).json()["data"]["sessionId"]
        chat = automation.post(f"/api/sessions/{session}/chat", json={"message": message}, headers=auth)
        assert (await on_the_clock(twin, chat)).status_code == 200
        twin.clock.advance(1)
    agent = {
        "name": "Room watcher",
        "user_prompt": "Check the room",
        "schedule": {"schedule_type": "interval", "interval_seconds": 600},
        "device_ids": ["env_sensor-0001"],
    }
    assert (await automation.post("/api/agents", json=agent, headers=auth)).status_code == 200
    twin.clock.advance(30 - twin.world.env.now)  # the summaries run 30 s after start, then every 7200 s
    user = (await automation.get("/api/memory/file/user", headers=auth)).json()["content"]
    assert user == (
        f"{USER_DEFAULT}\n<!-- chat-summary -->\n- Asks most about: greenhouse, humidity, sensor\n"
        "- Last request: Show the greenhouse temperature\n<!-- /chat-summary -->\n"
    )
    assert "agent-summary" not in await knowledge(automation, auth)  # no run yet
    twin.clock.advance(7200)
    text = await knowledge(automation, auth)
    summary = text[text.index("<!-- agent-summary -->") :].split("\n")
    assert summary[1].startswith("- Room watcher: 5/5 recent runs OK; last completed: ")
    assert summary[2] == "<!-- /agent-summary -->"

    # A summary backend that does not exist: the server finds no model and skips the round.
    await automation.put("/api/memory/config", json={"config": {"summary_backend_id": "gone"}}, headers=auth)
    await automation.put("/api/memory/file/knowledge", json={"content": "# K\n"}, headers=auth)
    twin.clock.advance(7200)
    assert "agent-summary" not in await knowledge(automation, auth)


# Auth, releases and durability -------------------------------------------------------------------
async def test_auth_in_each_release(automation: httpx.AsyncClient, settings: Settings) -> None:
    for method, path in (
        ("GET", "/api/memory"),
        ("PUT", "/api/memory/file/user"),
        ("POST", "/api/memory/compress"),
    ):
        resp = await automation.request(method, path, json={"content": "x"})
        assert_error(resp, 401, "UNAUTHORIZED")
        resp = await automation.request(
            method, path, json={"content": "x"}, headers={"Authorization": "Bearer nope"}
        )
        assert_error(resp, 401, "UNAUTHORIZED")
    earlier = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(earlier.automation_app, "http://automation") as client:
        resp = await client.get("/api/memory/stats")
        assert resp.status_code == 401 and set(resp.json()) == {"error", "status"}
        token = (
            await client.post("/api/auth/register", json={"username": "first", "password": "secret1"})
        ).json()
        resp = await client.get(
            "/api/memory/custom/Nope", headers={"Authorization": f"Bearer {token['token']}"}
        )
        assert resp.status_code == 404 and set(resp.json()) == {"error"}


async def test_memory_survives_a_restart(tmp_path: Path) -> None:
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state")
    first = build(settings)
    async with _client(first.automation_app, "http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        await client.put("/api/memory/file/user", json={"content": "- likes graphs"}, headers=auth)
        await client.put("/api/memory/custom/pumps", json={"content": "P1"}, headers=auth)
        await client.put("/api/memory/config", json={"config": {"agent_char_limit": 99}}, headers=auth)
        await client.put("/api/memory/category/facts", json={"content": "- f"}, headers=auth)
        await client.put("/api/memory/agent/a1", json={"content": "- a"}, headers=auth)
        first.clock.advance(30)
        before = {p: (await client.get(p, headers=auth)).json() for p in ("/api/memory", "/api/memory/stats")}
    first.world.store.close()

    second = build(settings)
    async with _client(second.automation_app, "http://automation") as client:
        login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        auth = {"Authorization": f"Bearer {login.json()['token']}"}
        assert (await client.get("/api/memory/file/user", headers=auth)).json()["content"] == "- likes graphs"
        assert (await client.get("/api/memory/custom/pumps", headers=auth)).json()["content"] == "P1"
        assert (await client.get("/api/memory/config", headers=auth)).json()["agent_char_limit"] == 99
        assert (await client.get("/api/memory/category/domain_knowledge", headers=auth)).json()[
            "content"
        ] == "- f"
        assert "<!-- system-context -->" in await knowledge(client, auth)  # written before the restart
        for path, body in before.items():
            assert (await client.get(path, headers=auth)).json() == body
    second.world.store.close()
