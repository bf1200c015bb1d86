"""Channel filters: read and set with the vendor's messages, kept with the channel (through updates
and restarts), and honoured when messages go out over real deliveries."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx

from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from tests.receivers import HttpReceiver
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

ALERT = {"category": "alert", "title": "Door open", "message": "Back door open"}


async def test_filters_decide_what_a_channel_receives(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    async with HttpReceiver() as hooks:
        for name in ("ops", "all"):
            body = {"name": name, "channel_type": "webhook", "url": f"{hooks.url}/{name}"}
            assert (
                await automation.post("/api/messages/channels", json=body, headers=auth)
            ).status_code == 200
        url = "/api/messages/channels/ops/filter"
        empty = (await automation.get(url, headers=auth)).json()["data"]
        assert empty == {"source_types": [], "categories": [], "min_severity": None}
        body = {"source_types": [], "categories": ["alert"], "min_severity": "警告"}
        resp = await automation.put(url, json=body, headers=auth)
        assert resp.json()["data"] == {
            "message": "Filter updated successfully",
            "message_zh": "过滤器更新成功",
            "channel": "ops",
            "filter": {"source_types": [], "categories": ["alert"], "min_severity": "warning"},
        }
        for severity in ("info", "critical"):
            sent = await automation.post("/api/messages", json={**ALERT, "severity": severity}, headers=auth)
            assert sent.status_code == 200
        system = {**ALERT, "category": "system", "severity": "emergency"}
        await automation.post("/api/messages", json=system, headers=auth)
        await automation_of(twin.world).outbox.flush()
        got = sorted((r.path, r.json()["severity"]) for r in hooks.requests)
        assert got == [("/all", "critical"), ("/all", "emergency"), ("/all", "info"), ("/ops", "critical")]
        await automation.put("/api/messages/channels/ops", json={"enabled": True}, headers=auth)
        kept = (await automation.get(url, headers=auth)).json()["data"]
        assert kept["min_severity"] == "warning"  # an update keeps the filter


async def test_filter_failures(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    body = {"name": "ops", "channel_type": "webhook", "url": "http://127.0.0.1:1/x"}
    await automation.post("/api/messages/channels", json=body, headers=auth)
    url = "/api/messages/channels/ops/filter"
    bad = await automation.put(
        url, json={"source_types": [], "categories": [], "min_severity": "loud"}, headers=auth
    )
    assert_error(
        bad, 400, "BAD_REQUEST", "Invalid min_severity 'loud'. Valid values: info, warning, error, critical"
    )
    assert_error(await automation.get("/api/messages/channels/nope/filter", headers=auth), 404, "NOT_FOUND")
    nope = "/api/messages/channels/nope/filter"
    missing = await automation.put(nope, json={"source_types": [], "categories": []}, headers=auth)
    assert_error(missing, 404, "NOT_FOUND", "Channel not found: nope")
    for body in ({}, {"source_types": []}, {"source_types": "x", "categories": []}):
        assert_error(await automation.put(url, json=body, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get(url), 401, "UNAUTHORIZED")
    assert_error(await automation.put(url, json={"source_types": [], "categories": []}), 401, "UNAUTHORIZED")


async def test_a_filter_survives_a_restart(tmp_path: Path, settings: Settings) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path)
    twin = build(durable)
    async with _client(twin.automation_app, "http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        body = {"name": "ops", "channel_type": "webhook", "url": "http://127.0.0.1:1/x"}
        await client.post("/api/messages/channels", json=body, headers=auth)
        rule = {"source_types": ["device"], "categories": [], "min_severity": None}
        await client.put("/api/messages/channels/ops/filter", json=rule, headers=auth)
    twin.world.store.close()
    again = build(durable)
    async with _client(again.automation_app, "http://automation") as client:
        login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        auth = {"Authorization": f"Bearer {login.json()['token']}"}
        stored = (await client.get("/api/messages/channels/ops/filter", headers=auth)).json()["data"]
        assert stored == rule
