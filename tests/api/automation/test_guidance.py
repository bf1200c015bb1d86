"""First-run guidance: the setup wizard's last steps, the onboarding checklist (durable dismissal),
the chat's input suggestions derived from the world, and the llama.cpp server probe over a real
loopback server."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request

from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from tests.receivers import closed_port
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

SENSOR = "env_sensor-0001"


# Setup --------------------------------------------------------------------------------------------
async def test_setup_complete_needs_an_administrator(automation: httpx.AsyncClient) -> None:
    resp = await automation.post("/api/setup/complete")
    assert_error(resp, 400, "SETUP_INCOMPLETE")
    assert resp.json()["error"]["message"] == "Cannot complete setup before creating an admin account"
    await admin_token(automation)
    done = await automation.post("/api/setup/complete")  # public, as on the real router
    assert done.status_code == 200
    assert done.json() == {"message": "Setup completed successfully", "redirect": "/dashboard"}


async def test_setup_llm_config_only_before_the_first_user(automation: httpx.AsyncClient) -> None:
    url = "/api/setup/llm-config"
    bad = await automation.post(url, json={"provider": "nope", "model": "m"})
    assert_error(bad, 400, "INVALID_PROVIDER")
    assert "ollama, openai, anthropic, google, xai, llamacpp" in bad.json()["error"]["message"]
    assert_error(await automation.post(url, json={"provider": "ollama", "model": ""}), 400, "INVALID_MODEL")
    assert_error(await automation.post(url, json={"provider": "ollama"}), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"provider": 1, "model": "m"}), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, content=b"{", headers={"content-type": "application/json"}),
                 400, "BAD_REQUEST")  # fmt: skip
    ok = await automation.post(url, json={"provider": "llamacpp", "model": "", "api_key": "sk-secret"})
    assert ok.status_code == 200 and ok.json() == {
        "message": "LLM configuration saved",
        "provider": "llamacpp",
        "model": "",
    }
    saved = await automation.post(url, json={"provider": "ollama", "model": "qwen3:8b"})
    assert saved.json()["model"] == "qwen3:8b"
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    exported = (await automation.get("/api/config/export", headers=auth)).json()["data"]
    assert exported["llm_settings"]["backend"] == "ollama" and "api_key" not in exported["llm_settings"]
    late = await automation.post(url, json={"provider": "ollama", "model": "m"})
    assert_error(late, 403, "SETUP_ALREADY_COMPLETED")


# Onboarding ---------------------------------------------------------------------------------------
async def test_onboarding_checklist_dismiss_and_reset(automation: httpx.AsyncClient) -> None:
    status = await automation.get("/api/onboarding/status")  # public: the wizard shows before login
    assert status.status_code == 200 and status.json() == {
        "dismissed": False,
        "system_status": {"has_llm_backend": True, "has_devices": True, "device_count": 3},
        "steps": {"llm": {"completed": True}, "device": {"completed": True}},
    }
    assert (await automation.post("/api/onboarding/dismiss")).json() == {"success": True, "dismissed": True}
    assert (await automation.get("/api/onboarding/status")).json()["dismissed"] is True
    assert (await automation.post("/api/onboarding/reset")).json() == {"success": True, "dismissed": False}
    assert (await automation.get("/api/onboarding/status")).json()["dismissed"] is False
    assert (await automation.get("/api/onboarding/dismiss")).status_code == 405


async def test_onboarding_dismissal_survives_a_restart(tmp_path: Path, settings: Settings) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path)
    twin = build(durable)
    async with _client(twin.automation_app, "http://automation") as client:
        await client.post("/api/onboarding/dismiss")
    twin.world.store.close()
    again = build(durable)
    async with _client(again.automation_app, "http://automation") as client:
        assert (await client.get("/api/onboarding/status")).json()["dismissed"] is True


# Suggestions --------------------------------------------------------------------------------------
async def test_suggestions_follow_the_world(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    resp = await automation.get("/api/suggestions")  # public, called by the chat input without a token
    body = resp.json()
    assert resp.status_code == 200 and set(body) == {"suggestions", "context"}
    # 2026-01-01 00:00 UTC is 08:00 in the server's default time zone (Asia/Shanghai)
    assert body["context"] == {
        "timestamp": 1767225600,
        "learned_patterns_count": 0,
        "device_count": 3,
        "time_context": "morning",
    }
    ids = [s["id"] for s in body["suggestions"]]
    assert ids[:3] == ["recent-welcome", "time-morning-turn-on", "time-morning-check-status"]
    assert {"device-list-env_sensor", "device-check-env_sensor", "system-help"} <= set(ids)
    priorities = [s["priority"] for s in body["suggestions"]]
    assert priorities == sorted(priorities, reverse=True)
    first = body["suggestions"][1]
    assert first == {
        "id": "time-morning-turn-on", "label": "打开所有设备 (3个设备)", "prompt": "打开所有设备",
        "icon": "Zap", "category": "automation", "priority": 80, "context": "当前有3个设备",
    }  # fmt: skip
    assert "context" not in next(s for s in body["suggestions"] if s["id"] == "system-help")
    again = (await automation.get("/api/suggestions")).json()
    assert again == body  # deterministic

    twin.clock.advance(6 * 3600)  # 14:00 local
    later = (await automation.get("/api/suggestions?category=analytics")).json()
    assert later["context"]["time_context"] == "afternoon"
    assert {s["category"] for s in later["suggestions"]} == {"analytics"}
    assert later["suggestions"][0]["id"] == "time-afternoon-analytics"
    await automation.put("/api/settings/timezone", json={"timezone": "America/New_York"}, headers=auth)
    night = (await automation.get("/api/suggestions")).json()["context"]["time_context"]
    assert night == "night"  # 01:00 in New York

    found = (await automation.get("/api/suggestions", params={"input": "帮助"})).json()["suggestions"]
    assert [s["id"] for s in found] == ["system-help"]
    assert len((await automation.get("/api/suggestions?limit=2")).json()["suggestions"]) == 2
    assert (await automation.get("/api/suggestions?limit=0")).json()["suggestions"] == []
    assert_error(await automation.get("/api/suggestions?limit=many"), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/suggestions?limit=-1"), 422, "VALIDATION_ERROR")


async def test_suggestions_notice_offline_devices(automation: httpx.AsyncClient, twin: Twin) -> None:
    automation_of(twin.world).outages.take_offline(SENSOR)
    twin.clock.advance(3600)
    rows = (await automation.get("/api/suggestions?category=device")).json()["suggestions"]
    offline = next(s for s in rows if s["id"] == "device-offline-check")
    assert offline["label"] == "检查离线设备 (1个)" and offline["context"] == "2/3 在线"


async def test_suggestion_categories(automation: httpx.AsyncClient) -> None:
    resp = await automation.get("/api/suggestions/categories")
    assert resp.json() == ["device", "automation", "alert", "analytics", "agent", "settings", "general"]


# llama.cpp ----------------------------------------------------------------------------------------
def llamacpp_app(seen: list[tuple[str, str | None]]) -> FastAPI:
    app = FastAPI()

    @app.middleware("http")
    async def record(request: Request, call_next):
        seen.append((request.url.path, request.headers.get("authorization")))
        return await call_next(request)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict:
        return {"data": [{"id": "qwen2.5-vl-7b-instruct-q4_k_m.gguf", "meta": {"n_ctx_train": 32768}}]}

    @app.get("/props")
    async def props() -> dict:
        settings = {"n_ctx": 8192}
        return {"default_generation_settings": settings, "total_slots": 4, "build_info": "b5000-abc"}

    return app


@pytest.fixture
async def llamacpp() -> AsyncIterator[tuple[str, list]]:
    seen: list[tuple[str, str | None]] = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(llamacpp_app(seen), log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", seen
    finally:
        server.should_exit = True
        await task
        sock.close()


async def test_llamacpp_server_info(automation: httpx.AsyncClient, auth: dict, llamacpp) -> None:
    url, seen = llamacpp
    params = {"endpoint": url + "/", "api_key": "k1"}
    resp = await automation.get("/api/llm-backends/llamacpp/server-info", params=params, headers=auth)
    info = resp.json()["data"]
    assert info["status"] == "ok" and info["health"]["status"] == "ok"
    assert info["server"] == {
        "model_name": "qwen2.5-vl-7b-instruct-q4_k_m.gguf",
        "n_ctx": 8192,
        "total_slots": 4,
        "version": "b5000-abc",
    }
    caps = info["capabilities"]
    assert caps["max_context"] == 32768 and caps["supports_multimodal"] is True
    assert [p for p, _ in seen] == ["/health", "/v1/models", "/props"]
    assert {a for _, a in seen} == {"Bearer k1"}

    down = f"http://127.0.0.1:{closed_port()}"
    resp = await automation.get(
        "/api/llm-backends/llamacpp/server-info", params={"endpoint": down}, headers=auth
    )
    info = resp.json()["data"]
    assert resp.status_code == 200 and info["status"] == "error"
    assert info["health"]["status"].startswith("unreachable: ")
    assert info["server"]["model_name"] is None
    assert_error(await automation.get("/api/llm-backends/llamacpp/server-info"), 401, "UNAUTHORIZED")
