"""Model backends over HTTP: types, CRUD, the multimodal override, and the OpenAI- and
Ollama-compatible clients talking to a local stub server on 127.0.0.1 (real sockets)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.conftest import admin_token
from tests.sockets import until
from twin.serve import Twin

DEVICE = "env_sensor-0001"


@dataclass
class Stub:
    url: str
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)


def stub_app(stub: Stub) -> FastAPI:
    """A tiny OpenAI + Ollama look-alike: asks for a device's metrics once, then concludes."""
    app = FastAPI()

    async def record(request: Request) -> dict[str, Any]:
        body = await request.json() if request.method == "POST" else {}
        stub.requests.append((request.url.path, body, dict(request.headers)))
        return body

    @app.get("/v1/models")
    async def models(request: Request) -> dict:
        await record(request)
        return {"data": [{"id": "gpt-4o-mini"}, {"id": "plain-model"}]}

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Any:
        body = await record(request)
        if body["model"] == "broken":
            return JSONResponse({"error": "overloaded"}, status_code=500)
        if body.get("tools") and not any(m["role"] == "tool" for m in body["messages"]):
            call = {"id": "c1", "type": "function"}
            call["function"] = {"name": "get_device_metrics", "arguments": json.dumps({"device_id": DEVICE})}
            return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}
        seen = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        return {"choices": [{"message": {"role": "assistant", "content": f"Saw {len(seen)} result(s). OK"}}]}

    @app.post("/api/show")
    async def show(request: Request) -> dict:
        await record(request)
        return {
            "capabilities": ["completion", "tools", "vision"],
            "model_info": {"qwen3.context_length": 40960},
        }

    @app.get("/api/tags")
    async def tags(request: Request) -> dict:
        await record(request)
        return {
            "models": [{"name": "qwen3:8b", "size": 5_200_000_000, "modified_at": "2026-01-01T00:00:00Z"}]
        }

    @app.post("/api/chat")
    async def chat(request: Request) -> dict:
        body = await record(request)
        if body.get("tools") and not any(m["role"] == "tool" for m in body["messages"]):
            calls = [{"function": {"name": "get_device_metrics", "arguments": {"device_id": DEVICE}}}]
            return {"message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": True}
        return {"message": {"role": "assistant", "content": "Ollama says OK"}, "done": True}

    return app


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    stub = Stub(f"http://127.0.0.1:{sock.getsockname()[1]}")
    server = uvicorn.Server(uvicorn.Config(stub_app(stub), log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield stub
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {await admin_token(automation)}"}


def assert_error(resp: httpx.Response, status: int, code: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["success"] is False and resp.json()["error"]["code"] == code


async def add(client: httpx.AsyncClient, auth: dict, **body) -> dict:
    resp = await client.post("/api/llm-backends", json=body, headers=auth)
    assert resp.status_code == 200, resp.text
    created = resp.json()["data"]
    assert set(created) == {"id", "message"}
    return (await client.get(f"/api/llm-backends/{created['id']}", headers=auth)).json()["data"]


async def test_types_are_public_and_list_the_vendor_kinds(automation: httpx.AsyncClient) -> None:
    resp = await automation.get("/api/llm-backends/types")
    types = resp.json()["data"]["types"]
    assert [t["id"] for t in types] == [
        "simulated", "ollama", "openai", "anthropic", "google", "xai", "qwen", "deepseek", "glm", "minimax",
        "llamacpp",
    ]  # fmt: skip
    assert set(types[0]) == {
        "id", "name", "description", "default_model", "default_endpoint", "requires_api_key",
        "supports_streaming", "supports_thinking", "supports_multimodal",
    }  # fmt: skip


async def test_the_builtin_simulated_backend_is_active(automation: httpx.AsyncClient, auth: dict) -> None:
    data = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert data["count"] == 1 and data["active_id"] == "simulated"
    assert data["backends"][0]["backend_type"] == "simulated" and data["backends"][0]["is_active"] is True
    resp = await automation.post("/api/llm-backends/simulated/test", headers=auth)
    assert resp.json()["data"]["result"]["success"] is True
    assert_error(await automation.delete("/api/llm-backends/simulated", headers=auth), 409, "CONFLICT")


async def test_the_simulated_kind_is_listed_configured_and_manageable(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    """A client's provider cards pair each type with its backends: the built-in model's type is
    listed, so its card shows a running backend; more backends of it can be made and managed."""
    kind = (await automation.get("/api/llm-backends/types")).json()["data"]["types"][0]
    assert kind["id"] == "simulated" and kind["requires_api_key"] is False
    assert kind["default_endpoint"] is None
    listed = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert [(b["backend_type"], b["is_active"]) for b in listed["backends"]] == [("simulated", True)]
    schema = (await automation.get("/api/llm-backends/types/simulated/schema", headers=auth)).json()["data"]
    assert schema["type"] == "simulated" and schema["schema"]["required"] == ["name", "model"]
    second = await add(automation, auth, name="Second", backend_type="simulated", model="twin-sim-1")
    assert second["healthy"] is True and second["endpoint"] is None and second["api_key_configured"] is False
    tested = await automation.post(f"/api/llm-backends/{second['id']}/test", headers=auth)
    assert tested.json()["data"]["result"]["success"] is True
    url = f"/api/llm-backends/{second['id']}"
    renamed = await automation.put(url, json={"name": "Renamed"}, headers=auth)
    assert renamed.status_code == 200, renamed.text
    assert (await automation.post(f"{url}/activate", headers=auth)).status_code == 200
    listed = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert listed["active_id"] == second["id"] and listed["count"] == 2
    assert (await automation.delete(url, headers=auth)).status_code == 200
    listed = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert listed["active_id"] == "simulated"
    for refused in ({"name": "", "backend_type": "simulated", "model": "m"}, {"name": "x", "model": "m"}):
        resp = await automation.post("/api/llm-backends", json=refused, headers=auth)
        assert resp.status_code in (400, 422) and resp.json()["success"] is False, refused
    resp = await automation.put("/api/llm-backends/simulated", json={"name": "Mine"}, headers=auth)
    assert_error(resp, 409, "CONFLICT")


async def test_openai_compatible_backend_is_probed_and_used_by_an_agent(
    automation: httpx.AsyncClient, auth: dict, stub: Stub, twin: Twin
) -> None:
    backend = await add(
        automation, auth, name="Stub", backend_type="openai", model="gpt-4o-mini",
        endpoint=stub.url + "/v1", api_key="sk-test",
    )  # fmt: skip
    assert backend["healthy"] is True and backend["api_key_configured"] is True and "api_key" not in backend
    caps = backend["capabilities"]
    assert caps["supports_multimodal"] is True and caps["multimodal_source"] == "probe"
    assert stub.requests[0][0] == "/v1/models" and stub.requests[0][2]["authorization"] == "Bearer sk-test"

    test = (await automation.post(f"/api/llm-backends/{backend['id']}/test", headers=auth)).json()["data"]
    assert test["backend_id"] == backend["id"] and test["result"]["success"] is True
    assert test["result"]["response"].endswith("OK")

    agent = {
        "name": "remote", "user_prompt": "How warm is it?", "device_ids": [DEVICE],
        "llm_backend_id": backend["id"],
        "schedule": {"schedule_type": "interval", "interval_seconds": 600},
    }  # fmt: skip
    agent_id = (await automation.post("/api/agents", json=agent, headers=auth)).json()["data"]["id"]
    resp = await automation.post(f"/api/agents/{agent_id}/invoke", headers=auth)
    data = resp.json()["data"]
    assert resp.status_code == 200 and data["conclusion"] == "Saw 1 result(s). OK"
    chats = [body for path, body, _ in stub.requests if path == "/v1/chat/completions"]
    assert chats[-2]["tools"] and chats[-1]["messages"][-1]["role"] == "tool"
    assert json.loads(chats[-1]["messages"][-1]["content"])["device_id"] == DEVICE

    # A scheduled run with an HTTP model is recorded running and finished when the model answers.
    twin.clock.advance(600)
    rows = (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"][
        "executions"
    ]
    assert rows[0]["trigger_type"] == "schedule"

    async def completed() -> bool:
        rows = (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"]
        return rows["executions"][0]["status"] == "Completed"

    await until(completed)


async def test_ollama_compatible_backend(automation: httpx.AsyncClient, auth: dict, stub: Stub) -> None:
    backend = await add(
        automation, auth, name="Local", backend_type="ollama", model="qwen3:8b", endpoint=stub.url
    )
    caps = backend["capabilities"]
    assert backend["healthy"] is True and caps["supports_multimodal"] is True and caps["max_context"] == 40960
    assert stub.requests[0][:2] == ("/api/show", {"model": "qwen3:8b"})
    test = (await automation.post(f"/api/llm-backends/{backend['id']}/test", headers=auth)).json()["data"]
    assert test["result"] == {
        "success": True,
        "latency_ms": test["result"]["latency_ms"],
        "response": "Ollama says OK",
    }
    assert stub.requests[-1][1]["stream"] is False


async def test_ollama_models_and_type_schemas(automation: httpx.AsyncClient, auth: dict, stub: Stub) -> None:
    await add(automation, auth, name="Local", backend_type="ollama", model="qwen3:8b", endpoint=stub.url)
    models = (await automation.get("/api/llm-backends/ollama/models", headers=auth)).json()["data"]
    assert models["count"] == 1 and models["models"][0]["name"] == "qwen3:8b"
    resp = await automation.get("/api/llm-backends/ollama/models?endpoint=http://127.0.0.1:9", headers=auth)
    message = "Failed to connect to Ollama: error sending request for url (http://127.0.0.1:9/api/tags)"
    assert_error(resp, 500, "INTERNAL_ERROR")  # the real handler's ErrorResponse::internal
    assert resp.json()["error"]["message"] == message
    schema = (await automation.get("/api/llm-backends/types/openai/schema", headers=auth)).json()["data"]
    assert schema["type"] == "openai" and "api_key" in schema["schema"]["required"]
    assert_error(
        await automation.get("/api/llm-backends/types/skynet/schema", headers=auth), 404, "NOT_FOUND"
    )


async def test_multimodal_override_true_false_and_null(
    automation: httpx.AsyncClient, auth: dict, stub: Stub
) -> None:
    backend = await add(
        automation, auth, name="Plain", backend_type="openai", model="plain-model",
        endpoint=stub.url + "/v1", api_key="k",
    )  # fmt: skip
    path = f"/api/llm-backends/{backend['id']}/capabilities"

    async def patch(value: bool | None) -> dict:
        resp = await automation.patch(path, json={"multimodal": value}, headers=auth)
        return resp.json()["data"]["capabilities"]

    assert backend["capabilities"]["supports_multimodal"] is False
    caps = await patch(True)
    assert caps["supports_multimodal"] is True and caps["multimodal_user_override"] is True
    assert caps["multimodal_source"] == "user"
    caps = await patch(False)
    assert caps["supports_multimodal"] is False and caps["multimodal_user_override"] is False
    caps = await patch(None)
    assert caps["supports_multimodal"] is False and "multimodal_user_override" not in caps
    assert caps["multimodal_source"] == "probe"
    assert_error(await automation.patch(path, json={}, headers=auth), 400, "BAD_REQUEST")
    resp = await automation.patch(path, json={"multimodal": "yes"}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    resp = await automation.patch(
        "/api/llm-backends/nope/capabilities", json={"multimodal": True}, headers=auth
    )
    assert_error(resp, 404, "NOT_FOUND")


async def test_update_activate_delete_and_an_unreachable_backend(
    automation: httpx.AsyncClient, auth: dict, stub: Stub
) -> None:
    backend = await add(
        automation, auth, name="Down", backend_type="llamacpp", model="m", endpoint="http://127.0.0.1:9/v1"
    )
    assert backend["healthy"] is False and backend["capabilities"]["multimodal_source"] == "default"
    test = (await automation.post(f"/api/llm-backends/{backend['id']}/test", headers=auth)).json()["data"]
    assert test["result"]["success"] is False and "unreachable" in test["result"]["error"]

    resp = await automation.put(
        f"/api/llm-backends/{backend['id']}",
        json={"endpoint": stub.url + "/v1", "name": "Up", "model": "plain-model"},
        headers=auth,
    )
    assert resp.json()["data"]["healthy"] is True and resp.json()["data"]["name"] == "Up"
    resp = await automation.post(f"/api/llm-backends/{backend['id']}/activate", headers=auth)
    assert resp.json()["data"]["is_active"] is True
    listed = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert listed["active_id"] == backend["id"] and listed["count"] == 2
    resp = await automation.delete(f"/api/llm-backends/{backend['id']}", headers=auth)
    assert resp.json()["data"] == {"id": backend["id"], "deleted": True}
    listed = (await automation.get("/api/llm-backends", headers=auth)).json()["data"]
    assert listed["active_id"] == "simulated" and listed["count"] == 1


async def test_a_failing_model_fails_the_invoke_with_the_vendor_code(
    automation: httpx.AsyncClient, auth: dict, stub: Stub
) -> None:
    backend = await add(
        automation, auth, name="Broken", backend_type="openai", model="broken",
        endpoint=stub.url + "/v1", api_key="k",
    )  # fmt: skip
    agent = {
        "name": "a", "user_prompt": "hi", "execution_mode": "free", "llm_backend_id": backend["id"],
        "schedule": {"schedule_type": "interval", "interval_seconds": 600},
    }  # fmt: skip
    agent_id = (await automation.post("/api/agents", json=agent, headers=auth)).json()["data"]["id"]
    resp = await automation.post(f"/api/agents/{agent_id}/invoke", headers=auth)
    assert_error(resp, 500, "AGENT_EXECUTION_FAILED")
    rows = (await automation.get(f"/api/agents/{agent_id}/executions", headers=auth)).json()["data"][
        "executions"
    ]
    assert rows[0]["status"] == "Failed" and "HTTP 500" in rows[0]["error"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "x", "backend_type": "skynet", "model": "m"}, 400, "BAD_REQUEST"),
        ({"name": "x", "backend_type": "openai", "model": "m"}, 400, "BAD_REQUEST"),  # needs an api_key
        (
            {"name": "x", "backend_type": "ollama", "model": "m", "thinking_effort": "extreme"},
            400,
            "BAD_REQUEST",
        ),
        ({"name": "x", "backend_type": "ollama"}, 422, "VALIDATION_ERROR"),
        ({"backend_type": "ollama", "model": "m"}, 422, "VALIDATION_ERROR"),
        (
            {"name": "x", "backend_type": "ollama", "model": "m", "temperature": "hot"},
            422,
            "VALIDATION_ERROR",
        ),
    ],
)
async def test_create_refusals(
    automation: httpx.AsyncClient, auth: dict, body: dict, status: int, code: str
) -> None:
    assert_error(await automation.post("/api/llm-backends", json=body, headers=auth), status, code)


async def test_protected_routes_need_auth(automation: httpx.AsyncClient) -> None:
    for method, path in [
        ("GET", "/api/llm-backends"),
        ("POST", "/api/llm-backends"),
        ("GET", "/api/llm-backends/simulated"),
        ("PATCH", "/api/llm-backends/simulated/capabilities"),
    ]:
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
    assert_error(
        await automation.get("/api/llm-backends/nope", headers={"X-API-Key": "nmk_bad"}), 401, "UNAUTHORIZED"
    )


async def test_stats_and_one_shot_generation(automation: httpx.AsyncClient, auth: dict, stub: Stub) -> None:
    backend = await add(
        automation, auth, name="Local", backend_type="ollama", model="qwen3:8b", endpoint=stub.url
    )
    stats = (await automation.get("/api/llm-backends/stats", headers=auth)).json()["data"]
    assert stats == {
        "total_backends": 2, "healthy_backends": 2, "active_id": "simulated",
        "by_type": {"simulated": 1, "ollama": 1},
    }  # fmt: skip
    resp = await automation.post("/api/llm/generate", json={"prompt": "Say hi"}, headers=auth)
    assert resp.json()["data"] == {
        "text": "Acknowledged: Say hi",
        "backend_id": "simulated",
        "model": "twin-sim-1",
    }
    resp = await automation.post(
        "/api/llm/generate", json={"prompt": "Hi", "backend_id": backend["id"]}, headers=auth
    )
    assert resp.json()["data"]["text"] == "Ollama says OK"
    assert_error(
        await automation.post("/api/llm/generate", json={"prompt": " "}, headers=auth), 400, "BAD_REQUEST"
    )
    assert_error(await automation.post("/api/llm/generate", json={}, headers=auth), 422, "VALIDATION_ERROR")
    resp = await automation.post(
        "/api/llm/generate", json={"prompt": "x", "backend_id": "nope"}, headers=auth
    )
    assert_error(resp, 404, "NOT_FOUND")
    assert_error(await automation.post("/api/llm/generate", json={"prompt": "x"}), 401, "UNAUTHORIZED")
