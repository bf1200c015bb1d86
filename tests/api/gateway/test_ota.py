"""Firmware OTA through the gateway in step mode: parse, install, install-from-path, the public
status at every stage (no token, also while the device reboots), failures at each stage, and the
sessions a reboot drops."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.api.gateway.test_reboot import refused
from tests.conftest import gateway_token
from tests.sockets import socket_settings, until
from tests.twin.camera.test_ota import firmware
from twin.camera import ota as ota_module
from twin.camera.power import BOOT_S
from twin.camera.wing import cameras_of
from twin.serve import Twin, build, start, stop

STATUS = "/api/v1/system/ota/status"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def status(gateway: httpx.AsyncClient) -> dict:
    resp = await gateway.get(STATUS)  # public: never a token
    assert resp.status_code == 200
    return resp.json()["data"]


async def install(
    gateway: httpx.AsyncClient, auth: dict[str, str], data: bytes | None = None
) -> httpx.Response:
    files = {"firmware": ("fw-0.2.0.tar.gz", data if data is not None else firmware())}
    return await gateway.post("/api/v1/system/ota/install", files=files, headers=auth)


async def test_happy_path_polled_without_a_token_through_the_reboot(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    first = await status(gateway)
    resp = await install(gateway, auth)
    assert resp.json() == {
        "code": 0,
        "message": "Success",
        "data": {"message": "Firmware uploaded, upgrade started", "status": "uploading"},
    }
    trail = []
    for seconds in (0.5, 2, 8, 2, 30):
        twin.clock.advance(seconds)
        s = await status(gateway)
        trail.append((s["status"], s["progress"], s["current_step"]))
    assert trail == [
        ("uploading", 5, "upload"),
        ("extracting", 20, "extract"),
        ("extracting", 20, "validate"),
        ("deploying", 50, "deploy"),
        ("success", 100, "deploy"),
    ]
    done = await status(gateway)
    assert done["version"] == "0.2.0" and done["reboot_needed"] is True
    assert done["job_id"].startswith("ota-") and done["boot_id"] == first["current_boot_id"]
    assert "reboot_confirmed" not in done and "error" in done and done["error"] == ""
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 200
    twin.clock.advance(ota_module.REBOOT_AFTER_S)
    assert not twin.gateways["cam-01"].reachable()
    down = await status(gateway)
    assert down["status"] == "success"
    assert (await gateway.get("/api/v1/system/os-upgrade/status")).json()["data"] == {"status": "idle"}
    twin.clock.advance(BOOT_S)
    after = await status(gateway)
    assert after["reboot_needed"] is False and after["reboot_confirmed"] is True
    assert after["current_boot_id"] != first["current_boot_id"]
    stale = await gateway.get("/api/v1/system/info", headers=auth)
    assert stale.status_code == 401 and stale.json()["code"] == 2000
    assert (await gateway.get(STATUS, params={"job_id": "other"})).json()["data"] == after  # ignored


@pytest.mark.parametrize("stage", ["upload", "extract", "validate", "deploy"])
async def test_a_failure_at_each_stage(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str], stage: str
) -> None:
    cameras_of(twin.world)["cam-01"].ota.fail_at(stage, f"{stage} broke")
    assert (await install(gateway, auth)).status_code == 200
    twin.clock.advance(50)
    s = await status(gateway)
    assert (s["status"], s["current_step"], s["error"], s["message"]) == (
        "failed",
        stage,
        f"{stage} broke",
        "Upgrade failed",
    )
    assert s["finished_at"] > 0 and f"{stage} failed" in s["log_tail"]
    twin.clock.advance(60)
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 200  # no reboot


async def test_a_corrupt_package_fails_at_extract(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await install(gateway, auth, b"\x1f\x8b garbage")
    twin.clock.advance(20)
    s = await status(gateway)
    assert (s["status"], s["current_step"]) == ("failed", "extract")


async def test_install_from_path(twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    upload = await gateway.post(
        "/api/v1/files/upload",
        files={"file": ("fw.tar.gz", firmware("0.4.0"))},
        data={"path": "/data/aipc/uploads"},
        headers=auth,
    )
    assert upload.status_code == 200
    path = "/data/aipc/uploads/fw.tar.gz"
    resp = await gateway.post("/api/v1/system/ota/install-from-path", json={"path": path}, headers=auth)
    assert resp.json()["data"] == {
        "message": "OTA upgrade started",
        "status": "preparing",
        "progress": "5",
        "source_path": path,
    }
    assert (await status(gateway))["current_step"] == "prepare"
    busy = await gateway.post("/api/v1/system/ota/install-from-path", json={"path": path}, headers=auth)
    assert busy.status_code == 500 and busy.json()["code"] == 4003
    assert busy.json()["error"]["detail"] == "Upgrade already in progress"
    twin.clock.advance(45)
    assert (await status(gateway))["version"] == "0.4.0"


@pytest.mark.parametrize(
    ("body", "status_code", "code"),
    [
        ({"path": "data/aipc/uploads/fw.tar.gz"}, 400, 1001),
        ({"path": "/data/../etc/fw.tar.gz"}, 400, 1001),
        ({"path": "/data/aipc/none.tar.gz"}, 404, 8000),
        ({"path": "/data/aipc"}, 400, 1001),
        ({}, 400, 1001),
        ({"path": 7}, 400, 1001),
    ],
)
async def test_install_from_path_refusals(
    gateway: httpx.AsyncClient, auth: dict[str, str], body: dict, status_code: int, code: int
) -> None:
    resp = await gateway.post("/api/v1/system/ota/install-from-path", json=body, headers=auth)
    assert resp.status_code == status_code and resp.json()["code"] == code


async def test_parse_and_detect(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    parsed = await gateway.post(
        "/api/v1/system/ota/parse", files={"firmware": ("fw.tar.gz", firmware("0.9.1"))}, headers=auth
    )
    data = parsed.json()["data"]
    assert data == {
        "current_version": "0.1.0",
        "target_version": "0.9.1",
        "build_date": "2026-08-01",
        "git_commit": "abc1234",
        "firmware_path": "/tmp/fw.tar.gz",
        "firmware_size": len(firmware("0.9.1")),
    }
    bad = await gateway.post(
        "/api/v1/system/ota/parse", files={"firmware": ("fw.tar.gz", b"nope")}, headers=auth
    )
    assert bad.status_code == 400 and bad.json()["code"] == 1001
    wrong_field = await gateway.post(
        "/api/v1/system/ota/parse", files={"file": ("fw.tar.gz", firmware())}, headers=auth
    )
    assert wrong_field.status_code == 400
    not_multipart = await gateway.post("/api/v1/system/ota/install", json={"firmware": "x"}, headers=auth)
    assert not_multipart.status_code == 400 and not_multipart.json()["code"] == 1001
    detect = await gateway.get("/api/v1/system/ota/detect", headers=auth)
    assert detect.json()["data"] == {"update_available": False, "version": "", "changelog": ""}


async def test_power_loss_mid_install_reported_after_boot(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await install(gateway, auth)
    twin.clock.advance(20)
    cameras_of(twin.world)["cam-01"].ota.power_loss()
    twin.clock.advance(BOOT_S + 1)
    s = await status(gateway)
    assert s["status"] == "failed" and s["error"] == "interrupted: power lost during deploy"
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 401


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/ota/detect"),
        ("POST", "/ota/parse"),
        ("POST", "/ota/install"),
        ("POST", "/ota/install-from-path"),
    ],
)
async def test_protected_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, "/api/v1/system" + path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


@pytest.mark.socket
async def test_over_real_sockets_the_status_answers_before_and_after_the_reboot(tmp_path: Path) -> None:
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    try:
        base = running.url("cam-01/http")
        address = running.listeners["cam-01/http"].address
        async with httpx.AsyncClient(base_url=base) as client:
            auth = {"Authorization": await gateway_token(client)}
            assert (await install(client, auth)).status_code == 200
            for seconds in (0.5, 2, 8, 2, 30):
                twin.clock.advance(seconds)
                assert (await client.get(STATUS)).status_code == 200
        twin.clock.advance(ota_module.REBOOT_AFTER_S)
        await until(lambda: refused(*address))
        twin.clock.advance(BOOT_S)

        async def status_answers() -> bool:
            try:
                async with httpx.AsyncClient(base_url=base) as client:
                    return (await client.get(STATUS)).status_code == 200
            except httpx.ConnectError:
                return False

        await until(status_answers)
        async with httpx.AsyncClient(base_url=base) as client:
            after = (await client.get(STATUS)).json()["data"]
            assert after["status"] == "success" and after["reboot_confirmed"] is True
            assert (await client.get("/api/v1/system/info", headers=auth)).status_code == 401
    finally:
        await stop(running)
