"""The gateway's system area over a simulated camera: device time, stats, password, restart, statuses."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pytest

from tests.conftest import _client, gateway_token
from twin.camera.power import BOOT_S, RESTART_DELAY_S
from twin.camera.wing import cameras_of
from twin.serve import Twin, build
from twin.settings import Settings

EPOCH = 1767225600
BAD_FORMAT = {"code": 1001, "message": "Invalid request", "error": {"detail": "Invalid request format"}}


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/time"),
        ("POST", "/time/set"),
        ("POST", "/time/sync-from-client"),
        ("GET", "/time/config"),
        ("PUT", "/time/config"),
        ("PUT", "/time/timezone"),
        ("GET", "/time/timezones"),
        ("PUT", "/time/ntp"),
        ("POST", "/time/ntp/sync"),
        ("GET", "/stats"),
        ("POST", "/password"),
        ("POST", "/restart"),
    ],
)
async def test_protected_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, "/api/v1/system" + path, json={})
    assert resp.status_code == 401
    assert resp.json()["code"] == 2000 and resp.json()["error"]["type"] == "auth"


async def test_upgrade_statuses_are_public_and_idle(gateway: httpx.AsyncClient) -> None:
    ota = (await gateway.get("/api/v1/system/ota/status")).json()
    data = ota["data"]
    boot_id = data.pop("current_boot_id")
    assert len(boot_id) == 36
    assert data == {
        "status": "",
        "progress": 0,
        "message": "",
        "current_step": "",
        "version": "",
        "start_time": 0,
        "error": "",
        "reboot_needed": False,
    }
    os_up = (await gateway.get("/api/v1/system/os-upgrade/status")).json()
    assert os_up == {"code": 0, "message": "Success", "data": {"status": "idle"}}


async def test_time_reads_the_world_clock(twin: Twin, gateway: httpx.AsyncClient, auth) -> None:
    twin.clock.advance(125)
    data = (await gateway.get("/api/v1/system/time", headers=auth)).json()["data"]
    assert data == {
        "current_time": "2026-01-01T00:02:05Z",
        "unix_timestamp": EPOCH + 125,
        "timezone": "UTC",
        "uptime": 7 * 86_400 + 125,  # up since the world's past began (a week by default)
        "uptime_formatted": "7 days 0 hours",
    }


async def test_set_time_needs_ntp_off_then_moves_every_device_timestamp(
    twin: Twin, gateway: httpx.AsyncClient, auth
) -> None:
    body = {"datetime": "2030-06-01T12:00:00Z"}
    refused = await gateway.post("/api/v1/system/time/set", json=body, headers=auth)
    assert refused.status_code == 400
    assert refused.json()["error"]["detail"].startswith("Cannot set time manually while NTP is enabled")

    off = await gateway.put("/api/v1/system/time/ntp", json={"enabled": False}, headers=auth)
    assert off.json() == {"code": 0, "message": "NTP configuration updated"}
    resp = await gateway.post("/api/v1/system/time/set", json=body, headers=auth)
    assert resp.json() == {"code": 0, "message": "Time updated successfully"}
    target = 1906545600  # 2030-06-01T12:00:00Z
    twin.clock.advance(10)
    now = target + 10
    assert (await gateway.get("/api/v1/system/time", headers=auth)).json()["data"]["unix_timestamp"] == now
    assert (await gateway.get("/api/v1/system/health")).json()["data"]["time"] == now
    key = (await gateway.get("/api/v1/auth/public-key")).json()["data"]
    assert key["unix_timestamp"] == now
    assert (await gateway.get("/api/v1/system/stats", headers=auth)).json()["data"]["timestamp"] == now
    # The login skew check follows device time, not world time.
    login = {"username": "admin", "password": "password"}
    stale = await gateway.post("/api/login", json={**login, "timestamp": EPOCH + 10})
    assert stale.json()["code"] == 1005
    assert (await gateway.post("/api/login", json={**login, "timestamp": now})).status_code == 200
    config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
    assert config["sync_mode"] == "manual" and config["ntp"]["enabled"] is False

    # An NTP sync puts the device back on world time (and turns NTP on).
    sync = await gateway.post("/api/v1/system/time/ntp/sync", headers=auth)
    assert sync.json() == {"code": 0, "message": "NTP synchronization triggered"}
    assert (await gateway.get("/api/v1/system/health")).json()["data"]["time"] == EPOCH + 10
    config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
    assert config["ntp"]["enabled"] is True and config["ntp"]["synced"] is True


async def test_sync_from_client(twin: Twin, gateway: httpx.AsyncClient, auth) -> None:
    url = "/api/v1/system/time/sync-from-client"
    near = await gateway.post(url, json={"client_timestamp": EPOCH + 20}, headers=auth)
    assert near.json()["data"] == {
        "synced": False,
        "diff_seconds": 20,
        "message": "Time is within acceptable range",
    }
    far = await gateway.post(url, json={"client_timestamp": EPOCH + 3600}, headers=auth)
    assert far.json()["data"] == {
        "synced": True,
        "diff_seconds": 3600,
        "message": "Time synced from browser (diff: 3600s)",
    }
    assert (await gateway.get("/api/v1/system/health")).json()["data"]["time"] == EPOCH + 3600
    for body in ({}, {"client_timestamp": "soon"}, {"client_timestamp": 1.5}, {"client_timestamp": 0}):
        resp = await gateway.post(url, json=body, headers=auth)
        assert (resp.status_code, resp.json()) == (400, BAD_FORMAT)


async def test_timezone_and_config(gateway: httpx.AsyncClient, auth) -> None:
    zones = (await gateway.get("/api/v1/system/time/timezones", headers=auth)).json()["data"]
    assert {"name": "Asia/Shanghai", "country": "China", "offset": "UTC+08:00", "offset_sec": 28800} in zones
    resp = await gateway.put("/api/v1/system/time/timezone", json={"timezone": "Asia/Shanghai"}, headers=auth)
    assert resp.json() == {"code": 0, "message": "Timezone updated successfully"}
    data = (await gateway.get("/api/v1/system/time", headers=auth)).json()["data"]
    assert data["current_time"] == "2026-01-01T08:00:00+08:00" and data["timezone"] == "Asia/Shanghai"
    bad = await gateway.put("/api/v1/system/time/timezone", json={"timezone": "Mars/Olympus"}, headers=auth)
    assert (bad.status_code, bad.json()) == (
        400,
        {"code": 1001, "message": "Invalid request", "error": {"detail": "Invalid timezone: Mars/Olympus"}},
    )
    for body in (b"nope", b"[]", b"{}", b'{"timezone": 8}'):
        resp = await gateway.put(
            "/api/v1/system/time/timezone", content=body, headers={**auth, "content-type": "application/json"}
        )
        assert (resp.status_code, resp.json()) == (400, BAD_FORMAT)

    config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
    assert config["timezone"] == "Asia/Shanghai" and config["time_format"] == "24h"
    assert config["ntp"]["server"] == "pool.ntp.org" and config["ntp"]["interval"] == 3600
    assert config["ntp"]["fallback_servers"][0] == "0.pool.ntp.org" and config["auto_sync"] is True
    saved = await gateway.put(
        "/api/v1/system/time/config",
        json={
            "timezone": "UTC",
            "time_format": "12h",
            "sync_mode": "manual",
            "manual_datetime": "2027-01-01T00:00:00Z",
        },
        headers=auth,
    )
    assert saved.json() == {"code": 0, "message": "Time configuration saved"}
    config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
    assert (config["timezone"], config["time_format"], config["sync_mode"]) == ("UTC", "12h", "manual")
    assert (await gateway.get("/api/v1/system/health")).json()["data"]["time"] == 1798761600
    bad = await gateway.put("/api/v1/system/time/config", json={"timezone": "Nowhere"}, headers=auth)
    assert bad.json()["error"]["detail"] == "Invalid timezone: Nowhere"
    bad = await gateway.put("/api/v1/system/time/ntp", json={"interval": -1}, headers=auth)
    assert bad.json()["error"]["detail"] == "interval must be non-negative"
    bad = await gateway.post("/api/v1/system/time/set", json={"datetime": "tomorrow"}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["detail"].startswith("Invalid datetime format")


async def test_stats_are_deterministic(twin: Twin, gateway: httpx.AsyncClient, auth) -> None:
    twin.clock.advance(3)
    first = (await gateway.get("/api/v1/system/stats", headers=auth)).json()["data"]
    again = (await gateway.get("/api/v1/system/stats", headers=auth)).json()["data"]
    assert first == again
    assert first["timestamp"] == EPOCH + 3
    npu = first["services"]["ai-runtime"]
    assert set(npu) == {
        "device_utilization", "device_temperature", "total_memory_bytes", "used_memory_bytes",
        "cpu_utilization", "ram_total_kib", "ram_used_kib",  # the host part: the camera machine's figures
    }  # fmt: skip
    assert 0 < npu["ram_used_kib"] < npu["ram_total_kib"] and npu["cpu_utilization"] > 0
    assert 0 < npu["used_memory_bytes"] < npu["total_memory_bytes"]
    assert 20 < npu["device_temperature"] < 80


async def test_password_change_drops_sessions_two_seconds_later(
    twin: Twin, gateway: httpx.AsyncClient, auth
) -> None:
    url = "/api/v1/system/password"
    wrong = await gateway.post(url, json={"old_password": "nope", "new_password": "newpass123"}, headers=auth)
    assert (wrong.status_code, wrong.json()) == (
        400,
        {"code": 1001, "message": "Invalid request", "error": {"detail": "Incorrect old password"}},
    )
    for new in ("short", "x" * 33):
        resp = await gateway.post(url, json={"old_password": "password", "new_password": new}, headers=auth)
        assert (resp.status_code, resp.json()) == (
            400,
            {
                "code": 1004,
                "message": "Invalid parameter value",
                "error": {"detail": "Password length must be 8-32"},
            },
        )
    for body in ({}, {"old_password": "password"}, {"new_password": 12345678}):
        resp = await gateway.post(url, json=body, headers=auth)
        assert resp.status_code == 400 and resp.json()["code"] == 1001
    skew = await gateway.post(
        url, json={"new_password": "newpass123", "timestamp": EPOCH - 400}, headers=auth
    )
    assert skew.json()["code"] == 1005

    ok = await gateway.post(
        url, json={"old_password": "password", "new_password": "newpass123"}, headers=auth
    )
    assert ok.json() == {
        "code": 0,
        "message": "Success",
        "data": {"message": "Password updated successfully. Service is restarting."},
    }
    twin.clock.advance(RESTART_DELAY_S - 0.5)
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 200
    twin.clock.advance(1)
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 401
    old = await gateway.post("/api/login", json={"username": "admin", "password": "password"})
    assert old.status_code == 401
    new = await gateway.post("/api/login", json={"username": "admin", "password": "newpass123"})
    assert new.status_code == 200


async def test_restart_drops_sessions_and_reboots(twin: Twin, gateway: httpx.AsyncClient, auth) -> None:
    boot_id = (await gateway.get("/api/v1/system/ota/status")).json()["data"]["current_boot_id"]
    resp = await gateway.post("/api/v1/system/restart", headers=auth)
    assert resp.json() == {"code": 0, "message": "Success", "data": {"message": "System reboot initiated"}}
    camera = cameras_of(twin.world)["cam-01"]
    assert camera.powered
    twin.clock.advance(RESTART_DELAY_S)
    assert not camera.powered and not twin.gateways["cam-01"].reachable()
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 401
    twin.clock.advance(BOOT_S)
    assert camera.powered
    data = (await gateway.get("/api/v1/system/ota/status")).json()["data"]
    assert data["current_boot_id"] != boot_id
    token = await gateway_token(gateway)
    uptime = (await gateway.get("/api/v1/system/time", headers={"Authorization": token})).json()["data"][
        "uptime"
    ]
    assert uptime == 0


async def test_restart_survives_snapshot_restore(twin: Twin) -> None:
    camera = cameras_of(twin.world)["cam-01"]
    camera.power.restart()
    twin.clock.advance(RESTART_DELAY_S + 1)
    snap = twin.world.snapshot()
    twin.world.restore(snap)
    restored = cameras_of(twin.world)["cam-01"]
    assert not restored.powered
    twin.clock.advance(BOOT_S)
    assert restored.powered and restored.boot_count == 1


async def test_the_time_area_survives_a_restart_with_a_state_dir(settings: Settings, tmp_path: Path) -> None:
    """Timezone, NTP settings, format, sync mode and a manually set clock are the device's own
    durable settings: a twin rebuilt on the same state dir reads them back; another camera and a
    twin without the state dir keep the defaults."""
    durable = dataclasses.replace(settings, state_dir=tmp_path / "state", cameras=2)
    first = build(durable)
    async with _client(first.gateway_apps["cam-01"], "http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        for method, path, body in (
            ("PUT", "/time/timezone", {"timezone": "Asia/Tokyo"}),
            ("PUT", "/time/ntp", {"enabled": False, "interval": 600}),
            ("POST", "/time/set", {"datetime": "2030-06-01T12:00:00Z"}),  # Tokyo wall time
            ("PUT", "/time/timezone", {"timezone": "Mars/Olympus"}),  # refused: changes nothing
        ):
            await gateway.request(method, "/api/v1/system" + path, json=body, headers=auth)
        config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
        moved = (await gateway.get("/api/v1/system/time", headers=auth)).json()["data"]["unix_timestamp"]
    first.world.store.close()
    assert moved == 1906513200  # 2030-06-01T12:00:00+09:00

    again = build(durable)
    async with _client(again.gateway_apps["cam-01"], "http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        assert (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"] == config
        data = (await gateway.get("/api/v1/system/time", headers=auth)).json()["data"]
        assert (data["timezone"], data["unix_timestamp"]) == ("Asia/Tokyo", moved)  # world time 0 again
        assert config["timezone"] == "Asia/Tokyo" and config["sync_mode"] == "manual"
        assert config["ntp"]["enabled"] is False and config["ntp"]["interval"] == 600
        # The rest of the area: NTP back on with a server, then a saved configuration.
        await gateway.put(
            "/api/v1/system/time/ntp", json={"enabled": True, "server": "ntp.example"}, headers=auth
        )
        saved = {"timezone": "Europe/Paris", "time_format": "12h", "sync_mode": "ntp", "ntp_interval": 900}
        await gateway.put("/api/v1/system/time/config", json=saved, headers=auth)
        config = (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"]
    assert cameras_of(again.world)["cam-02"].clock.timezone == "UTC"
    again.world.store.close()

    third = build(durable)
    async with _client(third.gateway_apps["cam-01"], "http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        assert (await gateway.get("/api/v1/system/time/config", headers=auth)).json()["data"] == config
        assert (await gateway.get("/api/v1/system/health")).json()["data"]["time"] == EPOCH  # on NTP again
    assert (config["timezone"], config["time_format"], config["ntp"]["server"]) == (
        "Europe/Paris",
        "12h",
        "ntp.example",
    )
    third.world.store.close()
    assert cameras_of(build(settings).world)["cam-01"].clock.timezone == "UTC"  # no state dir, no memory


async def test_device_name_settings_and_network_survive_a_restart_with_a_state_dir(
    settings: Settings, tmp_path: Path
) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path / "state")
    static = {"mode": "static", "ip_address": "10.0.0.7", "subnet_mask": "255.0.0.0", "dns1": "10.0.0.1"}
    first = build(durable)
    async with _client(first.gateway_apps["cam-01"], "http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        for method, path, body in (
            ("PUT", "/device-info", {"device_name": "gate-east"}),
            ("POST", "/device-info/factory", {"field": "vendor", "value": "acme"}),
            ("POST", "/settings", {"key": "kept", "value": "1"}),
            ("POST", "/settings", {"key": "dropped", "value": "2"}),
            ("DELETE", "/settings/dropped", None),
            ("POST", "/network/config", static),
            ("POST", "/network/config", {"mode": "static", "ip_address": "999.1.1.1"}),  # refused
            (
                "POST",
                "/event-logs",
                {
                    "event_type": "door",
                    "category": "operation",
                    "level": "warning",
                    "source": "test",
                    "message": "Door forced",
                },
            ),
        ):
            await gateway.request(method, "/api/v1" + path, json=body, headers=auth)
        before = [
            (await gateway.get("/api/v1" + path, headers=auth)).json()["data"]
            for path in ("/device-info", "/device-info/factory", "/settings", "/network/config")
        ]
    first.world.store.close()
    assert before[0]["device_name"] == "gate-east" and before[2] == {"settings": {"kept": "1"}}
    assert before[3]["ip_address"] == "10.0.0.7" and before[3]["dns1"] == "10.0.0.1"

    again = build(durable)
    async with _client(again.gateway_apps["cam-01"], "http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        assert [
            (await gateway.get("/api/v1" + path, headers=auth)).json()["data"]
            for path in ("/device-info", "/device-info/factory", "/settings", "/network/config")
        ] == before
        # The event log too, with this start's boot after the first one's.
        logs = (await gateway.get("/api/v1/event-logs", headers=auth)).json()["data"]
        assert [(e["id"], e["event_type"]) for e in logs["entries"]] == [
            (3, "system.boot"),
            (2, "door"),
            (1, "system.boot"),
        ]
        again.clock.advance(86400 + 60)
        cleared = await gateway.request("DELETE", "/api/v1/event-logs", json={"days": 1}, headers=auth)
        assert cleared.json()["data"]["days"] == 1 and not cameras_of(again.world)["cam-01"].admin.logs
    again.world.store.close()
    third = build(durable)
    logs = cameras_of(third.world)["cam-01"].admin.logs
    assert [e["event_type"] for e in logs] == ["system.boot"]  # what was cleared stays gone
    third.world.store.close()
