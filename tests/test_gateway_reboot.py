"""A rebooting camera over real sockets: its gateway refuses connections while it boots."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.conftest import SCENARIOS
from twin.camera import BOOT_S, RESTART_DELAY_S
from twin.serve import build, start, stop
from twin.settings import Settings

pytestmark = pytest.mark.socket


def socket_settings(**overrides) -> Settings:
    base = {
        "scenario": SCENARIOS / "test.yaml",
        "step": True,
        "host": "127.0.0.1",
        "port": 0,
        "control_port": 0,
        "mqtt_host": "127.0.0.1",
        "mqtt_port": 0,
        "gateway_addressing": "port",
        "gateway_http_port": 0,
        "gateway_https_port": 0,
    }
    base.update(overrides)
    return Settings(**base)


async def refused(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False


async def poll(check, attempts: int = 250) -> None:
    for _ in range(attempts):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


async def test_restart_closes_both_listeners_until_booted(tmp_path: Path) -> None:
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    try:
        http_addr = running.listeners["cam-01/http"].address
        https_addr = running.listeners["cam-01/https"].address
        base = running.url("cam-01/http")
        async with httpx.AsyncClient(base_url=base) as client:
            login = await client.post("/api/login", json={"username": "admin", "password": "password"})
            token = login.json()["data"]["token"]
            resp = await client.post("/api/v1/system/restart", headers={"Authorization": token})
            assert resp.json()["data"] == {"message": "System reboot initiated"}
        twin.clock.advance(RESTART_DELAY_S)
        await poll(lambda: refused(*http_addr))
        await poll(lambda: refused(*https_addr))
        twin.clock.advance(BOOT_S / 2)
        assert await refused(*http_addr)

        twin.clock.advance(BOOT_S / 2)
        assert running.url("cam-01/http") == base

        async def health_answers() -> bool:
            try:
                async with httpx.AsyncClient(base_url=base) as client:
                    return (await client.get("/api/v1/system/health")).status_code == 200
            except httpx.ConnectError:
                return False

        await poll(health_answers)
        async with httpx.AsyncClient(base_url=base) as client:
            stale = await client.get("/api/v1/system/info", headers={"Authorization": token})
            assert stale.status_code == 401
        async with httpx.AsyncClient(verify=False) as client:
            health = await client.get(running.url("cam-01/https") + "/api/v1/system/health")
            assert health.json()["code"] == 0
    finally:
        await stop(running)
