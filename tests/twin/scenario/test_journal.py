"""The request journal: every request to either vendor app, stamped on the world clock."""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

from api.journal import NO_CURSOR, cursor_in, query_of, state_in
from tests.conftest import admin_token
from tests.sockets import socket_settings, until
from twin.serve import Twin, build, start, stop


def test_cursor_in_reads_the_tail_of_a_body() -> None:
    assert cursor_in(b'..."pagination":{"total":3,"next_cursor":1767225700}}') == 1767225700
    assert cursor_in(b'{"pagination":{"next_cursor":null},"x":1}') is None
    assert cursor_in(b'{"next_cursor":1.5}') == 1.5
    assert cursor_in(b'{"data":[]}') == NO_CURSOR


async def test_requests_are_journalled_with_route_status_and_sim_time(
    twin: Twin, automation: httpx.AsyncClient, gateway: httpx.AsyncClient, control: httpx.AsyncClient
) -> None:
    token = await admin_token(automation)
    await control.post("/clock/advance", json={"seconds": 30})
    auth = {"Authorization": f"Bearer {token}"}
    resp = await automation.get("/api/devices/env_sensor-0001/telemetry", params={"limit": 2}, headers=auth)
    assert resp.status_code == 200
    cursor = resp.json()["data"]["pagination"]["next_cursor"]
    await automation.get("/api/devices/nope", headers=auth)
    await automation.get("/api/no/such/route")
    await gateway.get("/api/v1/system/health")

    body = (await control.get("/journal")).json()
    entries = body["entries"]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    setup, page, missing, unknown, health = entries
    assert setup["server"] == "automation" and setup["method"] == "POST" and setup["at"] == 0
    assert page["route"] == "/api/devices/{device_id}/telemetry" and page["query"] == "limit=2"
    assert page["at"] == 30 and page["status"] == 200 and page["next_cursor"] == cursor
    assert missing["status"] == 404 and missing["path"] == "/api/devices/nope"
    assert missing["next_cursor"] == NO_CURSOR
    assert unknown["route"] == "unmatched" and unknown["status"] == 404
    assert health["server"] == "cam-01" and health["route"] == "/api/v1/system/health"
    assert health["client"] == "127.0.0.1"

    filtered = (await control.get("/journal", params={"server": "cam-01"})).json()["entries"]
    assert [e["seq"] for e in filtered] == [health["seq"]]
    paged = (await control.get("/journal", params={"since": 3, "limit": 1})).json()
    assert [e["seq"] for e in paged["entries"]] == [4] and paged["next_since"] == 4
    bad = await control.get("/journal", params={"limit": 0})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"


async def test_rate_limited_requests_carry_retry_after(
    twin: Twin, automation: httpx.AsyncClient, control: httpx.AsyncClient
) -> None:
    token = await admin_token(automation)
    resp = await control.post("/actions/rate_limit_storm", json={"params": {"limit": 1}, "for": 120})
    assert resp.status_code == 200 and resp.json()["undo_at"] == 120
    auth = {"Authorization": f"Bearer {token}"}
    statuses = [(await automation.get("/api/devices", headers=auth)).status_code for _ in range(3)]
    assert statuses == [200, 429, 429]
    limited = (await control.get("/journal", params={"status": 429})).json()["entries"]
    assert [e["retry_after"] for e in limited] == ["60", "60"]
    await control.post("/clock/advance", json={"seconds": 121})
    assert twin.control.active_actions() == []


def test_status_routes_journal_the_state_they_answered() -> None:
    assert state_in(b'{"code":0,"data":{"status":"deploying","progress":50}}') == "deploying"
    assert state_in(b'{"data":{"status":"success","reboot_confirmed": true}}') == "reboot_confirmed"
    assert state_in(b'{"code":0}') is None


async def test_ota_status_polls_carry_the_state(
    twin: Twin, gateway: httpx.AsyncClient, control: httpx.AsyncClient
) -> None:
    assert (await gateway.get("/api/v1/system/ota/status")).status_code == 200
    entry = (await control.get("/journal")).json()["entries"][-1]
    assert entry["route"] == "/api/v1/system/ota/status" and entry["state"] == ""


def test_secrets_in_query_strings_are_masked() -> None:
    assert query_of(b"limit=2&token=abc&api_key=k1&metric=x") == "limit=2&token=***&api_key=***&metric=x"
    assert query_of(b"cursor=5") == "cursor=5" and query_of(b"") == ""


async def test_websockets_are_journalled_when_they_end() -> None:
    live = build(socket_settings())
    with tempfile.TemporaryDirectory() as tmp:
        running = await start(live, Path(tmp))
        try:
            base = running.url("cam-01/http")
            async with httpx.AsyncClient() as http:
                creds = {"username": "admin", "password": "password"}
                login = await http.post(base + "/api/login", json=creds)
                token = login.json()["data"]["token"].removeprefix("Bearer ")
            ws_base = base.replace("http", "ws", 1) + "/api/v1/events/stream"
            async with connect(f"{ws_base}?token={token}"):
                live.clock.advance(5)
            try:
                async with connect(f"{ws_base}?token=wrong"):
                    pass
            except Exception:
                pass
            await until(lambda: sum(e.method == "WS" for e in live.journal.entries) == 2)
        finally:
            await stop(running)
    opened, denied = [e for e in live.journal.entries if e.method == "WS"]
    assert (opened.status, opened.at, opened.end, opened.query) == (101, 0, 5, "")
    assert opened.route == "/api/v1/events/stream" and denied.status == 401
