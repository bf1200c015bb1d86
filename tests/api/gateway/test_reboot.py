"""A rebooting camera over real sockets: its gateway refuses connections while it boots."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.sockets import socket_settings, until
from twin.camera.power import BOOT_S, RESTART_DELAY_S
from twin.serve import build, start, stop

pytestmark = pytest.mark.socket


async def refused(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection(host, port)
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:  # caught the listener mid-close: not refused yet, ask again
        return False
    writer.close()
    return False


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
        await until(lambda: refused(*http_addr))
        await until(lambda: refused(*https_addr))
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

        await until(health_answers)
        async with httpx.AsyncClient(base_url=base) as client:
            stale = await client.get("/api/v1/system/info", headers={"Authorization": token})
            assert stale.status_code == 401
        async with httpx.AsyncClient(verify=False) as client:
            health = await client.get(running.url("cam-01/https") + "/api/v1/system/health")
            assert health.json()["code"] == 0
    finally:
        await stop(running)
