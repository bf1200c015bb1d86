"""Chat sessions over HTTP: the /api/sessions routes in the server's shapes, a chat turn over HTTP on
the world clock, durable sessions across a restart, and the server's refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.api.support import assert_error, on_the_clock
from tests.conftest import SCENARIOS
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

OPERATOR_KEY = "nmk_" + "cd" * 16
GHOST = "00000000-0000-4000-8000-000000000000"


async def new_session(client: httpx.AsyncClient, auth: dict, **kwargs) -> str:
    resp = await client.post("/api/sessions", headers=auth, **kwargs)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["success"] is True and set(body["data"]) == {"sessionId"}
    return body["data"]["sessionId"]


async def test_create_list_read_rename_toggle_delete(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    first = await new_session(automation, auth)
    twin.clock.advance(2)
    second = await new_session(automation, auth, json={"config": {"name": "incomplete"}})  # ignored
    assert first != second

    resp = await automation.get("/api/sessions", headers=auth)
    body = resp.json()
    assert [s["sessionId"] for s in body["data"]] == [second, first]  # newest first
    assert body["data"][1] == {
        "sessionId": first,
        "createdAt": 1767225600000,
        "messageCount": 0,
        "title": None,
        "preview": None,
        "memoryEnabled": False,
    }
    assert body["meta"]["pagination"] == {
        "page": 1, "page_size": 20, "total_count": 2, "total_pages": 1, "has_next": False, "has_prev": False,
    }  # fmt: skip
    paged = (await automation.get("/api/sessions?page=2&page_size=1", headers=auth)).json()
    assert [s["sessionId"] for s in paged["data"]] == [first]
    assert (
        paged["meta"]["pagination"]["has_prev"] is True and paged["meta"]["pagination"]["has_next"] is False
    )
    clamped = (await automation.get("/api/sessions?page=0&page_size=1000", headers=auth)).json()
    assert clamped["meta"]["pagination"]["page"] == 1 and clamped["meta"]["pagination"]["page_size"] == 100

    state = (await automation.get(f"/api/sessions/{first}", headers=auth)).json()["data"]
    times = {"started_at": 1767225600, "last_activity": 1767225600}
    expected = {"id": first, **times, "message_count": 0, "metadata": {}}
    assert state == {"sessionId": first, "state": expected}
    history = (await automation.get(f"/api/sessions/{first}/history", headers=auth)).json()["data"]
    assert history == {"messages": [], "count": 0}

    resp = await automation.put(f"/api/sessions/{first}", headers=auth, json={"title": "Greenhouse"})
    assert resp.json()["data"] == {"sessionId": first, "updated": True}
    resp = await automation.put(f"/api/sessions/{first}/memory-toggle", headers=auth, json={"enabled": True})
    assert resp.json()["data"] == {"sessionId": first, "memoryEnabled": True}
    listed = (await automation.get("/api/sessions", headers=auth)).json()["data"]
    assert (listed[1]["title"], listed[1]["memoryEnabled"]) == ("Greenhouse", True)
    await automation.put(f"/api/sessions/{first}", headers=auth, json={"title": "   "})  # blank: cleared
    assert (await automation.get("/api/sessions", headers=auth)).json()["data"][1]["title"] is None

    resp = await automation.delete(f"/api/sessions/{first}", headers=auth)
    assert resp.json()["data"] == {"deleted": True, "sessionId": first}
    assert_error(
        await automation.get(f"/api/sessions/{first}", headers=auth), 404, "NOT_FOUND", "Session not found"
    )


async def test_a_chat_turn_over_http_names_the_current_reading(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    twin.clock.advance(30)
    session = await new_session(automation, auth)
    ask = {"message": "What is the temperature of env_sensor-0002 right now?"}
    resp = await on_the_clock(twin, automation.post(f"/api/sessions/{session}/chat", headers=auth, json=ask))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert set(body) == {"response", "sessionId", "toolsUsed", "processingTimeMs"}  # raw, no envelope
    assert body["sessionId"] == session and body["toolsUsed"] == ["get_device_metrics"]
    current = {m.name: m.value for m in automation_of(twin.world).devices.current("env_sensor-0002").metrics}
    assert f"temperature is {current['temperature']}" in body["response"]
    assert body["processingTimeMs"] > 0

    history = (await automation.get(f"/api/sessions/{session}/history", headers=auth)).json()["data"]
    roles = [m["role"] for m in history["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"] and history["count"] == 4
    user, asked, tool, answer = history["messages"]
    assert user == {"role": "user", "content": ask["message"], "tool_calls": None, "tool_call_id": None,
                    "timestamp": user["timestamp"]}  # fmt: skip
    call = asked["tool_calls"][0]
    assert (call["name"], call["arguments"], call["round"]) == (
        "get_device_metrics",
        {"device_id": "env_sensor-0002"},
        1,
    )
    assert call["result"]["values"] == current
    assert tool["tool_call_name"] == "get_device_metrics" and answer["content"] in body["response"]
    listed = (await automation.get("/api/sessions", headers=auth)).json()["data"][0]
    assert listed["preview"] == "What is the temperature of env_sensor-0002 right n..."
    state = (await automation.get(f"/api/sessions/{session}", headers=auth)).json()["data"]["state"]
    assert state["message_count"] == 4 and state["last_activity"] > state["started_at"]


async def test_pending_stream_while_a_turn_runs(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    session = await new_session(automation, auth)
    empty = (await automation.get(f"/api/sessions/{session}/pending", headers=auth)).json()["data"]
    assert empty == {"hasPending": False, "sessionId": session}
    turn = asyncio.ensure_future(
        automation.post(f"/api/sessions/{session}/chat", headers=auth, json={"message": "list the devices"})
    )
    while not twin.clock.waiting:
        await asyncio.sleep(0)
    twin.clock.advance(1)  # the first round is streaming
    pending = (await automation.get(f"/api/sessions/{session}/pending", headers=auth)).json()["data"]
    assert pending["hasPending"] is True and pending["userMessage"] == "list the devices"
    assert pending["stage"] in ("waiting", "generating") and pending["startedAt"] == 1767225600
    assert pending["elapsed"] == 1
    cleared = (await automation.delete(f"/api/sessions/{session}/pending", headers=auth)).json()["data"]
    assert cleared == {"cleared": True, "sessionId": session}
    assert (await automation.get(f"/api/sessions/{session}/pending", headers=auth)).json()["data"][
        "hasPending"
    ] is False
    assert (await on_the_clock(twin, turn)).status_code == 200


async def test_cleanup_removes_old_empty_sessions(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    old = await new_session(automation, auth)
    twin.clock.advance(3601)
    fresh = await new_session(automation, auth)
    resp = await automation.post("/api/sessions/cleanup", headers=auth)
    assert resp.json()["data"] == {"cleaned": 1, "message": "Cleaned up 1 invalid session(s)"}
    listed = [s["sessionId"] for s in (await automation.get("/api/sessions", headers=auth)).json()["data"]]
    assert listed == [fresh] and old not in listed


async def test_refusals_in_the_servers_shapes(automation: httpx.AsyncClient, auth: dict) -> None:
    session = await new_session(automation, auth)
    for method, path in [
        ("POST", "/api/sessions"), ("GET", "/api/sessions"), ("GET", f"/api/sessions/{session}"),
        ("PUT", f"/api/sessions/{session}"), ("DELETE", f"/api/sessions/{session}"),
        ("POST", "/api/sessions/cleanup"), ("POST", f"/api/sessions/{session}/chat"),
        ("GET", f"/api/sessions/{session}/pending"), ("PUT", f"/api/sessions/{session}/memory-toggle"),
    ]:  # fmt: skip
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
        bad = {"Authorization": "Bearer not-a-token"}
        assert_error(await automation.request(method, path, json={}, headers=bad), 401, "UNAUTHORIZED")

    # unknown ids: reading, deleting and chatting are 404; renaming and toggling the agent's 500
    for method, path in [("GET", f"/api/sessions/{GHOST}"), ("GET", f"/api/sessions/{GHOST}/history"),
                         ("DELETE", f"/api/sessions/{GHOST}")]:  # fmt: skip
        assert_error(
            await automation.request(method, path, headers=auth), 404, "NOT_FOUND", "Session not found"
        )
    resp = await automation.post(f"/api/sessions/{GHOST}/chat", headers=auth, json={"message": "hi"})
    assert_error(resp, 404, "NOT_FOUND", "Session not found")
    resp = await automation.put(f"/api/sessions/{GHOST}", headers=auth, json={"title": "x"})
    assert_error(resp, 500, "INTERNAL_ERROR", f"Not found: Session: {GHOST}")
    resp = await automation.put(f"/api/sessions/{GHOST}/memory-toggle", headers=auth, json={"enabled": True})
    assert_error(resp, 500, "INTERNAL_ERROR", f"Not found: Session: {GHOST}")
    pending = await automation.get(f"/api/sessions/{GHOST}/pending", headers=auth)  # never checked
    assert pending.json()["data"] == {"hasPending": False, "sessionId": GHOST}

    # missing fields and wrong types
    toggle = f"/api/sessions/{session}/memory-toggle"
    assert_error(await automation.put(toggle, headers=auth, json={}), 422, "VALIDATION_ERROR")
    assert_error(await automation.put(toggle, headers=auth, json={"enabled": "yes"}), 422, "VALIDATION_ERROR")
    rename = f"/api/sessions/{session}"
    assert_error(await automation.put(rename, headers=auth, json={"title": 5}), 422, "VALIDATION_ERROR")
    chat = f"/api/sessions/{session}/chat"
    assert_error(await automation.post(chat, headers=auth, json={}), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(chat, headers=auth, json={"message": 3}), 422, "VALIDATION_ERROR")
    as_json = {**auth, "Content-Type": "application/json"}
    assert_error(await automation.post(chat, headers=as_json, content=b"{not json"), 400, "BAD_REQUEST")
    for query in ("page=-1", "page=abc", "page_size=x"):
        assert_error(await automation.get(f"/api/sessions?{query}", headers=auth), 422, "VALIDATION_ERROR")
    # a body POST /sessions cannot read is ignored, as the server's optional extractor does
    resp = await automation.post("/api/sessions", headers=auth, content=b"{not json")
    assert resp.status_code == 200 and resp.json()["data"]["sessionId"]


async def test_sessions_and_histories_survive_a_restart(tmp_path: Path) -> None:
    settings = Settings(
        scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state", api_key=OPERATOR_KEY
    )
    key = {"X-API-Key": OPERATOR_KEY}

    def client(twin: Twin) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=twin.automation_app), base_url="http://a")

    first = build(settings)
    async with client(first) as http:
        session = await new_session(http, key)
        await http.put(f"/api/sessions/{session}", headers=key, json={"title": "kept"})
        resp = await on_the_clock(
            first, http.post(f"/api/sessions/{session}/chat", headers=key, json={"message": "hello"})
        )
        assert resp.status_code == 200
    first.world.store.close()

    second = build(settings)
    async with client(second) as http:
        listed = (await http.get("/api/sessions", headers=key)).json()["data"]
        assert [(s["sessionId"], s["title"], s["preview"]) for s in listed] == [(session, "kept", "hello")]
        history = (await http.get(f"/api/sessions/{session}/history", headers=key)).json()["data"]
        assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
        assert history["messages"][1]["content"] in resp.json()["response"]
        another = await new_session(http, key)
        assert another != session  # a new run mints new ids
    second.world.store.close()


async def test_model_failures_over_http(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    session = await new_session(automation, auth)
    chat = f"/api/sessions/{session}/chat"
    faults = automation_of(twin.world).chat.faults

    faults.fail(503, 1)  # the first call: the model cannot start, and HTTP chat has no fallback
    resp = await on_the_clock(twin, automation.post(chat, headers=auth, json={"message": "hello"}))
    assert_error(resp, 500, "INTERNAL_ERROR", "LLM error: model backend answered HTTP 503")

    ask = automation.post(chat, headers=auth, json={"message": "What is the temperature of my sensor?"})
    task = asyncio.ensure_future(ask)
    while not twin.clock.waiting:
        await asyncio.sleep(0)
    twin.clock.advance(0.1)  # the first round has asked the model
    faults.fail(502, None)  # and the second round's call fails
    resp = await on_the_clock(twin, task)
    body = resp.json()
    assert body["toolsUsed"] == ["list_devices"]
    assert body["response"].endswith(
        "\n\n[error: Processing failed: LLM error: model backend answered HTTP 502]"
    )
    faults.error_status = None

    undo = faults.stall()
    resp = await on_the_clock(twin, automation.post(chat, headers=auth, json={"message": "hello"}), step=1)
    undo()
    assert resp.json()["response"] == "[timed out after 300s — showing partial result]"
    assert 300_000 <= resp.json()["processingTimeMs"] <= 305_000  # world time, read once the answer is out
    history = (await automation.get(f"/api/sessions/{session}/history", headers=auth)).json()["data"]
    assert history["messages"][-1] == {**history["messages"][-1], "role": "user", "content": "hello"}
