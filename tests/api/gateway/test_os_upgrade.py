"""The A/B OS upgrade through the gateway in step mode: upload, validate, install, reboot, verify;
the public status (no token) at every step; a failure at each stage; cancel and package deletion."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.conftest import gateway_token
from tests.twin.camera.test_ota import swu
from twin.camera import os_upgrade as osu
from twin.camera.power import BOOT_S, RESTART_DELAY_S
from twin.camera.wing import cameras_of
from twin.serve import Twin

BASE = "/api/v1/system/os-upgrade"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def status(gateway: httpx.AsyncClient) -> dict:
    resp = await gateway.get(BASE + "/status")
    assert resp.status_code == 200
    return resp.json()["data"]


async def upload(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    data: bytes | None = None,
    name: str = "os-1.5.swu",
    **kw,
) -> httpx.Response:
    files = {kw.pop("field", "package"): (name, data if data is not None else swu())}
    return await gateway.post(BASE + "/upload", files=files, headers={**auth, **kw.pop("headers", {})})


async def test_happy_path_with_the_public_status_throughout(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    assert await status(gateway) == {"status": "idle"}
    package = swu()
    up = await upload(
        gateway, auth, package, headers={"X-Content-SHA256": hashlib.sha256(package).hexdigest()}
    )
    job = up.json()["data"]
    assert (job["status"], job["progress"], job["file_name"], job["file_size"]) == (
        "validating",
        100,
        "os-1.5.swu",
        len(package),
    )
    assert job["sha256"] == hashlib.sha256(package).hexdigest() and len(job["job_id"]) == 36
    checked = await gateway.post(BASE + "/validate", json={"job_id": job["job_id"]}, headers=auth)
    assert checked.json()["data"]["status"] == "ready" and checked.json()["data"]["target_version"] == "1.5"
    started = await gateway.post(
        BASE + "/install", json={"job_id": job["job_id"], "upgrade_strategy": "standard"}, headers=auth
    )
    assert started.json()["data"] == {"job_id": job["job_id"], "status": "installing"}
    twin.clock.advance(osu.INSTALL_S / 2 + 1)
    mid = await status(gateway)
    assert mid["status"] == "installing" and mid["progress"] == 50 and "log" in mid
    twin.clock.advance(osu.INSTALL_S / 2)
    assert (await status(gateway))["status"] == "awaiting_reboot"
    rebooting = await gateway.post(BASE + "/reboot", json={"job_id": job["job_id"]}, headers=auth)
    assert rebooting.json()["data"] == {"job_id": job["job_id"], "status": "rebooting"}
    twin.clock.advance(RESTART_DELAY_S + 1)
    assert not twin.gateways["cam-01"].reachable()
    assert (await status(gateway))["status"] == "rebooting"
    twin.clock.advance(BOOT_S + 1)
    assert (await status(gateway))["status"] == "verifying"
    twin.clock.advance(osu.VERIFY_S)
    final = await status(gateway)
    assert (final["status"], final["active_copy"], final["target_version"]) == ("success", "A", "1.5")
    assert final["reboot_required"] is False
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 401  # sessions dropped
    token = await gateway_token(gateway)
    again = await upload(gateway, {"Authorization": token}, swu("1.6"), field="firmware")
    assert again.json()["data"]["current_version"] == "1.5"  # the new copy runs


async def test_failure_at_upload_validate_install_and_verify(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    machine = cameras_of(twin.world)["cam-01"].os_upgrade
    machine.fail_at("upload", "disk write error")
    failed = await upload(gateway, auth)
    assert failed.status_code == 500 and failed.json()["code"] == 3002
    assert (await status(gateway))["status"] == "failed"

    machine.fail_at("validate", "signature invalid")
    await upload(gateway, auth)
    bad = await gateway.post(BASE + "/validate", json={}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["detail"] == "signature invalid"
    assert (await status(gateway))["status"] == "failed"
    assert (await gateway.post(BASE + "/cancel", json={}, headers=auth)).json()["data"][
        "status"
    ] == "cancelled"

    machine.fail_at("install", "eMMC write failed")
    await upload(gateway, auth)
    await gateway.post(BASE + "/validate", json={}, headers=auth)
    await gateway.post(BASE + "/install", json={}, headers=auth)
    twin.clock.advance(osu.INSTALL_S)
    s = await status(gateway)
    assert (s["status"], s["error"]) == ("failed", "eMMC write failed")
    await gateway.post(BASE + "/cancel", json={}, headers=auth)

    machine.fail_at("verify", "new rootfs did not boot")
    await upload(gateway, auth)
    await gateway.post(BASE + "/validate", json={}, headers=auth)
    await gateway.post(BASE + "/install", json={}, headers=auth)
    twin.clock.advance(osu.INSTALL_S + 1)
    await gateway.post(BASE + "/reboot", json={}, headers=auth)
    twin.clock.advance(RESTART_DELAY_S + BOOT_S + osu.VERIFY_S + 3)
    s = await status(gateway)
    assert (s["status"], s["error"], s["active_copy"]) == ("rollback", "new rootfs did not boot", "A")


async def test_power_loss_while_installing(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await upload(gateway, auth)
    await gateway.post(BASE + "/validate", json={}, headers=auth)
    await gateway.post(BASE + "/install", json={}, headers=auth)
    twin.clock.advance(20)
    cameras_of(twin.world)["cam-01"].os_upgrade.power_loss()
    twin.clock.advance(1)
    s = await status(gateway)
    assert s["status"] == "failed" and s["error"] == "power lost while installing"
    twin.clock.advance(BOOT_S)
    assert (await gateway.get("/api/v1/system/info", headers=auth)).status_code == 401


async def test_state_rules_and_package_deletion(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    data = cameras_of(twin.world)["cam-01"].storage.partition("data")
    before = data.used
    job = (await upload(gateway, auth)).json()["data"]
    assert data.used == before + job["file_size"]
    second = await upload(gateway, auth)
    assert second.status_code == 409 and second.json()["code"] == 4001
    early = await gateway.post(BASE + "/install", json={"job_id": job["job_id"]}, headers=auth)
    assert early.status_code == 500 and early.json()["code"] == 4003
    early_reboot = await gateway.post(BASE + "/reboot", json={}, headers=auth)
    assert early_reboot.status_code == 500 and early_reboot.json()["code"] == 4003
    unknown = await gateway.post(BASE + "/validate", json={"job_id": "nope"}, headers=auth)
    assert unknown.status_code == 404 and unknown.json()["code"] == 4000
    deleted = await gateway.request("DELETE", BASE + "/package", json={"job_id": job["job_id"]}, headers=auth)
    assert deleted.json()["data"] == {"job_id": job["job_id"], "message": "Package deleted"}
    assert data.used == before
    gone = await gateway.post(BASE + "/validate", json={}, headers=auth)
    assert gone.status_code == 400
    again = await gateway.request("DELETE", BASE + "/package", json={}, headers=auth)
    assert again.status_code == 404


async def test_upload_refusals(twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    wrong_ext = await upload(gateway, auth, name="os.img")
    assert wrong_ext.status_code == 400 and wrong_ext.json()["code"] == 1001
    mismatch = await upload(gateway, auth, headers={"X-Content-SHA256": "0" * 64})
    assert mismatch.status_code == 400
    wrong_field = await upload(gateway, auth, field="file")
    assert wrong_field.status_code == 400
    data = cameras_of(twin.world)["cam-01"].storage.partition("data")
    data.charge("filler", data.free - 1024**3)  # less than package + 2 GiB left
    full = await upload(gateway, auth)
    assert full.status_code == 507 and full.json()["code"] == 8003
    assert await status(gateway) == {"status": "idle"}


@pytest.mark.parametrize("path", ["/validate", "/install", "/reboot", "/cancel"])
async def test_bodies_must_be_json_objects_with_typed_fields(
    gateway: httpx.AsyncClient, auth: dict[str, str], path: str
) -> None:
    for kwargs in ({"content": b"{"}, {"json": [1]}, {"json": {"job_id": 5}}):
        resp = await gateway.post(BASE + path, headers=auth, **kwargs)
        assert resp.status_code == 400 and resp.json()["code"] == 1001


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/upload"),
        ("POST", "/validate"),
        ("POST", "/install"),
        ("POST", "/reboot"),
        ("POST", "/cancel"),
        ("DELETE", "/package"),
    ],
)
async def test_protected_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, BASE + path, json={})
    assert resp.status_code == 401 and resp.json()["code"] == 2000
