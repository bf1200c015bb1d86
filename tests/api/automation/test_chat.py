"""WS /api/chat over a real socket: the simulated model operating the world through its tools, tokens
on the world clock, session binding, cancelling, model faults, and the server's refusals; the
plain-HTTP answers of the WebSocket routes.

Nothing waits on the wall clock: after moving world time a test sends a sentinel (a cancel for a
session that does not exist, answered ``cancelled`` at once) and reads every frame before its answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import Response, StreamingResponse
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.api.automation.test_events_ws import OPERATOR_KEY, api_key, live_twin, recv_json
from tests.sockets import serving_app
from twin.automation.server import automation_of
from twin.serve import Twin

pytestmark = pytest.mark.socket
SENTINEL = json.dumps({"message": "__CANCEL__", "sessionId": "sentinel"})
BEAT = 0.05
"""One token at the default pace (20 per world second)."""


@pytest.fixture
async def live() -> AsyncIterator[tuple[Twin, str, str]]:
    async with live_twin() as value:
        yield value


def chat_url(base: str, query: str = "") -> str:
    return base.replace("http://", "ws://") + "/api/chat" + query


async def open_chat(base: str, token: str, query: str = "") -> ClientConnection:
    ws = await connect(chat_url(base, f"?token={token}{query}"))
    welcome = await recv_json(ws)
    assert welcome["type"] == "system" and welcome["content"] == "Connected to Edge AI Agent"
    return ws


async def next_frame(ws: ClientConnection) -> dict:
    while (frame := await recv_json(ws))["type"] == "ping":
        pass
    return frame


async def settle(ws: ClientConnection) -> list[dict]:
    """Every frame the server sent before it answers the sentinel (pings left out)."""
    await ws.send(SENTINEL)
    frames = []
    while (frame := await recv_json(ws))["type"] != "cancelled":
        if frame["type"] != "ping":
            frames.append(frame)
    return frames


async def turn(twin: Twin, ws: ClientConnection, step: float = 0.25) -> list[dict]:
    """Move world time in ``step``s until the turn in flight has ended; its frames."""
    frames: list[dict] = []
    for _ in range(4000):
        twin.clock.advance(step)
        frames += await settle(ws)
        if frames and frames[-1]["type"] in ("end", "response"):
            return frames
    raise AssertionError(f"the turn did not end: {frames[-5:]}")


def text(frames: list[dict]) -> str:
    return "".join(f["content"] for f in frames if f["type"] == "Content")


async def test_the_model_lists_the_devices_and_reads_a_sensor_through_its_tools(live) -> None:
    twin, base, token = live
    twin.clock.advance(1)  # just after a sample: the values stay put for the length of the turn
    ws = await open_chat(base, token)
    assert (await recv_json(ws)) == {"type": "ping", "timestamp": 1767225601}
    await ws.send(json.dumps({"message": "What is the temperature of my sensor?"}))
    created = await recv_json(ws)
    assert created["type"] == "session_created"
    session = created["sessionId"]
    frames = await turn(twin, ws)
    await ws.close()

    kinds = [f["type"] for f in frames if f["type"] not in ("Content", "Progress")]
    assert kinds == [
        "ToolCallStart", "ToolCallEnd", "intermediate_end",
        "ToolCallStart", "ToolCallEnd", "intermediate_end", "end",
    ]  # fmt: skip
    assert all(f["sessionId"] == session for f in frames)
    progress = next(f for f in frames if f["type"] == "Progress")  # every 5 world seconds of streaming
    elapsed = progress["elapsed"]
    assert progress == {
        "type": "Progress", "message": "Generating response...", "stage": "generating",
        "elapsed": elapsed, "remainingTime": 1200 - elapsed, "sessionId": session,
    }  # fmt: skip
    listed, read = frames.index(next(f for f in frames if f["type"] == "ToolCallEnd")), None
    start = next(f for f in frames if f["type"] == "ToolCallStart")
    assert start == {
        "type": "ToolCallStart",
        "tool": "list_devices",
        "arguments": {},
        "sessionId": session,
        "round": 1,
    }
    devices = json.loads(frames[listed]["result"])["devices"]
    assert [d["device_id"] for d in devices] == ["env_sensor-0001", "env_sensor-0002", "env_sensor-0003"]
    read = [f for f in frames if f["type"] == "ToolCallEnd"][1]
    assert (read["tool"], read["success"], read["round"]) == ("get_device_metrics", True, 2)
    result = json.loads(read["result"])
    assert result["device_id"] == "env_sensor-0001"

    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        current = (await http.get("/api/devices/env_sensor-0001/current")).json()["data"]["metrics"]
    temperature = current["temperature"]["value"]
    assert result["values"]["temperature"] == temperature
    answer = text(frames[frames.index(read) :])
    assert f"env_sensor-0001 (online) the temperature is {temperature}" in answer
    assert frames[-1]["tokenUsage"]["promptTokens"] > 0


async def test_tokens_arrive_only_as_the_clock_moves(live) -> None:
    twin, base, token = live
    ws = await open_chat(base, token)
    await ws.send(json.dumps({"message": "hello there"}))
    assert [f["type"] for f in await settle(ws)] == ["session_created"]
    assert await settle(ws) == []  # no world time, no token
    twin.clock.advance(0.2)
    assert await settle(ws) == []  # the first token takes at least a quarter of a world second
    counts = []
    while not counts or counts[-1] == 0:
        twin.clock.advance(BEAT / 5)
        counts.append(len(await settle(ws)))
    assert counts[-1] == 1  # the first token
    for _ in range(6):  # then one token per beat
        twin.clock.advance(BEAT)
        frames = await settle(ws)
        assert [f["type"] for f in frames] == ["Content"]
    frames = await turn(twin, ws)
    assert frames[-1]["type"] == "end"
    await ws.close()


async def test_the_same_seed_gives_the_same_reply(live) -> None:
    twin, base, token = live
    replies = []
    for _ in range(2):
        ws = await open_chat(base, token)
        await ws.send(json.dumps({"message": "hello"}))
        replies.append(text(await turn(twin, ws)))
        await ws.close()
    assert replies[0] == replies[1] and "devices" in replies[0]


async def test_a_command_and_a_rule_act_on_the_world(live) -> None:
    twin, base, token = live
    ws = await open_chat(base, token)
    await ws.send(json.dumps({"message": "Send identify to env_sensor-0003"}))
    frames = await turn(twin, ws)
    tools = [(f["tool"], f["success"]) for f in frames if f["type"] == "ToolCallEnd"]
    assert tools == [("get_device", True), ("send_device_command", True)]
    assert "I sent identify to env_sensor-0003" in text(frames)
    assert (
        automation_of(twin.world).devices.command_history("env_sensor-0003", 10)[0].command_name == "identify"
    )

    await ws.send(
        json.dumps({"message": "Create a rule that alerts when humidity on env_sensor-0002 is above 70"})
    )
    frames = await turn(twin, ws)
    created = [
        json.loads(f["result"]) for f in frames if f["type"] == "ToolCallEnd" and f["tool"] == "create_rule"
    ]
    assert len(created) == 1
    rule = automation_of(twin.world).rules.get_rule(created[0]["rule_id"])
    assert rule.condition["source"] == "device:env_sensor-0002:humidity" and rule.condition["threshold"] == 70
    assert rule.condition["operator"] == ">" and rule.enabled
    await ws.close()


async def test_session_binding_history_and_control_messages(live) -> None:
    twin, base, token = live
    ws = await open_chat(base, token)
    await ws.send(json.dumps({"message": "hello"}))
    first = (await next_frame(ws))["sessionId"]
    await turn(twin, ws)
    await ws.close()

    ws = await open_chat(base, token, f"&sessionId={first}")  # the welcome names it, the history follows
    history = await settle(ws)
    assert [(f["type"], f.get("role")) for f in history] == [
        ("history", "user"), ("history", "assistant"), ("history_complete", None),
    ]  # fmt: skip
    assert history[0]["content"] == "hello" and history[2] == {
        "type": "history_complete",
        "sessionId": first,
        "count": 2,
    }
    assert set(history[1]) == {"type", "sessionId", "role", "content", "thinking", "toolCalls", "timestamp"}
    await ws.send(json.dumps({"message": "/new"}))  # a control message starts no turn
    twin.clock.advance(5)
    assert await settle(ws) == []
    await ws.send(json.dumps({"type": "pong"}))
    await ws.send("not json")
    await ws.send(json.dumps({"no": "message"}))
    assert await settle(ws) == []  # all ignored

    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        second = (await http.post("/api/sessions")).json()["data"]["sessionId"]
    await ws.send(json.dumps({"message": "hi again", "sessionId": second}))
    assert (await settle(ws))[0] == {"type": "session_switched", "sessionId": second}  # empty: no history
    await turn(twin, ws)
    await ws.close()


async def test_cancel_interrupts_the_turn_and_a_closed_socket_too(live) -> None:
    twin, base, token = live
    ws = await open_chat(base, token)
    await ws.send(json.dumps({"message": "list the devices"}))
    session = (await next_frame(ws))["sessionId"]
    twin.clock.advance(1)
    await settle(ws)
    await ws.send(json.dumps({"message": "__CANCEL__"}))
    assert (await next_frame(ws)) == {"type": "cancelled", "message": "Request cancelled by user"}
    twin.clock.advance(0)
    frames = await settle(ws)
    assert frames == [
        {"type": "Content", "content": "\n\n[Interrupted]", "sessionId": session},
        {"type": "end", "sessionId": session},
    ]
    await ws.send(json.dumps({"message": "list the devices"}))
    twin.clock.advance(1)
    await settle(ws)
    await ws.close()
    registry = automation_of(twin.world).chat
    for _ in range(100):
        if registry.turns[session].finished:
            break
        twin.clock.advance(0)
        await ws.wait_closed()
    assert registry.turns[session].finished and registry.pending(session) is None


async def test_model_faults_from_the_control_plane(live) -> None:
    twin, base, token = live
    control = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=twin.control_app), base_url="http://control"
    )
    ws = await open_chat(base, token)
    async with control:
        await control.post("/actions/model_errors", json={"params": {"status": 502, "count": 1}})
        await ws.send(json.dumps({"message": "hello"}))
        frames = await turn(twin, ws)
        assert frames[-1]["type"] == "response" and "OLLAMA_ENDPOINT" in frames[-1]["content"]
        assert set(frames[-1]) == {"type", "content", "sessionId", "toolsUsed", "processingTimeMs"}

        await control.post("/actions/model_slow_first_token", json={"params": {"seconds": 30}, "for": 60})
        await ws.send(json.dumps({"message": "hello"}))
        twin.clock.advance(29)
        assert await settle(ws) == []
        frames = await turn(twin, ws)
        assert frames[-1]["type"] == "end" and text(frames)

        held = (await control.post("/actions/model_hang", json={"params": {}})).json()
        await ws.send(json.dumps({"message": "hello"}))
        twin.clock.advance(1199)
        assert await settle(ws) == []
        frames = await turn(twin, ws, step=1)
        session = frames[0]["sessionId"]
        assert frames == [
            {"type": "Error", "message": "Stream timeout: response took too long", "sessionId": session},
            {"type": "end", "sessionId": session},
        ]
        await control.delete(f"/actions/{held['id']}")

        await control.post("/actions/model_pace", json={"params": {"tokens_per_second": 2}})
        await ws.send(json.dumps({"message": "hello"}))
        twin.clock.advance(1)
        before = len(await settle(ws))
        twin.clock.advance(BEAT * 4)
        assert len(await settle(ws)) == 0 and before <= 1  # a token every half second now
    await ws.close()


async def test_authentication_refusals(live) -> None:
    _, base, token = live
    for query, message, code in [
        ("", "Authentication required. Provide ?token=xxx or ?api_key=xxx.", 4001),
        ("?api_key=nmk_nope", "Invalid API key", 4001),
        ("?token=garbage", "Invalid or expired token", 1000),
        (f"?token=garbage&api_key={OPERATOR_KEY}", "Invalid or expired token", 1000),  # the token decides
    ]:
        async with connect(chat_url(base, query)) as ws:
            assert await recv_json(ws) == {"type": "Error", "message": message}
            with pytest.raises(ConnectionClosed):
                await recv_json(ws)
            assert ws.close_code == code
    key = await api_key(base, token)
    async with connect(chat_url(base, f"?api_key={key}")) as ws:
        assert (await recv_json(ws))["type"] == "system"
    async with connect(chat_url(base, "?token=" + token + "&sessionId=ghost")) as ws:
        assert (await recv_json(ws)) == {
            "type": "system",
            "content": "Connected to Edge AI Agent",
            "sessionId": "ghost",
        }
        await ws.send(json.dumps({"message": "hello"}))  # the connection keeps a session that is not there
        assert (await settle(ws)) == [{"type": "Error", "message": "Not found: Session: ghost"}]


async def test_plain_http_on_the_websocket_routes(live) -> None:
    twin, base, _ = live
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13"}
    async with httpx.AsyncClient(base_url=base) as http:
        for path in ("/api/chat", "/api/events/ws", "/api/extensions/x/stream"):
            resp = await http.get(path)  # before any authentication
            assert (resp.status_code, resp.text) == (400, "Connection header did not include 'upgrade'")
            assert resp.headers["content-type"].startswith("text/plain")
            assert (await http.post(path, json={})).status_code == 405
            assert (await http.head(path)).status_code == 405
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=twin.automation_app), base_url="http://a"
    ) as http:
        cases = [
            ({"Connection": "Upgrade", "Upgrade": "h2c"}, 400,
             "`Upgrade` header did not include 'websocket'"),
            ({**upgrade, "Sec-WebSocket-Version": "8"}, 400,
             "`Sec-WebSocket-Version` header did not include '13'"),
            (upgrade, 400, "`Sec-WebSocket-Key` header missing"),
            ({**upgrade, "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}, 426,
             "WebSocket request couldn't be upgraded since no upgrade state was present"),
        ]  # fmt: skip
        for headers, status, body in cases:
            resp = await http.get("/api/chat", headers=headers)
            assert (resp.status_code, resp.text) == (status, body)


# HTTP model backends ------------------------------------------------------------------------------------
def streaming_stub(requests: list[dict]) -> FastAPI:
    """An OpenAI- and Ollama-dialect backend that streams: a tool call first, then an answer built
    from the tool's result."""
    app = FastAPI()

    def asked(body: dict) -> bool:
        """Whether the model has tool results for the user's last message."""
        last = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
        return any(m["role"] == "tool" for m in body["messages"][last:])

    def answer(body: dict) -> str:
        results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        return f"The temperature is {results[-1]['values']['temperature']}."

    @app.get("/v1/models")
    async def models() -> dict:
        return {"data": [{"id": "streamer"}, {"id": "broken"}]}

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Response:
        body = await request.json()
        requests.append(body)
        if body["model"] == "broken":
            return Response(status_code=503)
        if not asked(body):
            head = {"index": 0, "id": "c1", "type": "function"}
            pieces = [
                {**head, "function": {"name": "get_device_metrics", "arguments": '{"device_'}},
                {"index": 0, "function": {"arguments": 'id": "env_sensor-0001"}'}},
            ]
            chunks = [{"choices": [{"delta": {"content": "Checking."}}]}]
            chunks += [{"choices": [{"delta": {"tool_calls": [piece]}}]} for piece in pieces]
        else:
            words = answer(body).split(" ")
            chunks = [{"choices": [{"delta": {"content": w + " "}}]} for w in words]
            chunks.append({"choices": [], "usage": {"prompt_tokens": 321}})
        lines = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return StreamingResponse(iter([lines]), media_type="text/event-stream")

    @app.post("/api/show")
    async def show() -> dict:
        return {"capabilities": ["completion", "tools"], "model_info": {}}

    @app.post("/api/chat")
    async def ollama(request: Request) -> Response:
        body = await request.json()
        requests.append(body)
        if not asked(body):
            call = {"function": {"name": "get_device_metrics", "arguments": {"device_id": "env_sensor-0001"}}}
            reply = {"role": "assistant", "content": ""}
            chunks = [
                {"message": {**reply, "thinking": "The user wants a reading."}, "done": False},
                {"message": {**reply, "tool_calls": [call]}, "done": False},
                {"message": reply, "done": True, "prompt_eval_count": 50},
            ]
        else:
            chunks = [{"message": {"role": "assistant", "content": answer(body)}, "done": False}]
            chunks.append(
                {"message": {"role": "assistant", "content": ""}, "done": True, "prompt_eval_count": 77}
            )
        return StreamingResponse(
            iter(["".join(json.dumps(c) + "\n" for c in chunks)]), media_type="application/x-ndjson"
        )

    return app


async def test_http_backends_stream_through_the_world(live) -> None:
    twin, base, token = live
    twin.clock.advance(1)
    requests: list[dict] = []
    async with serving_app(streaming_stub(requests)) as stub, httpx.AsyncClient(base_url=base) as http:
        auth = {"Authorization": f"Bearer {token}"}
        backends = {}
        for name, kind, model, endpoint in [
            ("OpenAI", "openai", "streamer", stub + "/v1"), ("Ollama", "ollama", "qwen3:8b", stub),
            ("Broken", "openai", "broken", stub + "/v1"),
        ]:  # fmt: skip
            body = {
                "name": name,
                "backend_type": kind,
                "model": model,
                "endpoint": endpoint,
                "api_key": "sk-x",
            }
            resp = await http.post("/api/llm-backends", json=body, headers=auth)
            assert resp.status_code == 200, resp.text
            backends[name] = resp.json()["data"]["id"]
        temperature = automation_of(twin.world).devices.current("env_sensor-0001").metrics[0].value

        ws = await open_chat(base, token)
        await ws.send(json.dumps({"message": "How warm is it?", "backendId": backends["OpenAI"]}))
        frames = await turn(twin, ws, step=0.01)
        kinds = [f["type"] for f in frames]
        assert kinds[:2] == ["session_created", "Content"] and kinds[-1] == "end"
        start = next(f for f in frames if f["type"] == "ToolCallStart")
        assert (start["tool"], start["arguments"], start["round"]) == (
            "get_device_metrics",
            {"device_id": "env_sensor-0001"},
            1,
        )
        assert text(frames).strip() == f"Checking.The temperature is {temperature}."
        assert frames[-1]["tokenUsage"] == {"promptTokens": 321}
        first, second = requests[-2:]
        assert first["stream"] is True and first["model"] == "streamer" and first["tools"]
        assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "get_device_metrics"
        assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "c1"

        await ws.send(json.dumps({"message": "And now?", "backendId": backends["Ollama"]}))
        frames = await turn(twin, ws, step=0.01)
        assert frames[0] == {
            "type": "Thinking",
            "content": "The user wants a reading.",
            "sessionId": frames[0]["sessionId"],
        }
        assert text(frames) == f"The temperature is {temperature}." and frames[-1]["tokenUsage"] == {
            "promptTokens": 77
        }
        assert requests[-1]["stream"] is True and requests[-1]["messages"][-1]["role"] == "tool"

        await ws.send(json.dumps({"message": "hello", "backendId": backends["Broken"]}))
        frames = await turn(twin, ws, step=0.01)
        assert [f["type"] for f in frames] == ["response"]  # the server's non-streaming fallback
        await ws.close()
