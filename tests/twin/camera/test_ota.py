"""The OTA and OS-upgrade state machines in the world alone: stages on the clock, failure points,
power loss, reboot and what survives it."""

from __future__ import annotations

import io
import tarfile

import pytest

from hardware.ports.errors import Conflict, InternalError, InvalidInput, NotFound
from hardware.ports.events import EventKind
from twin.camera import os_upgrade as osu
from twin.camera import ota as ota_module
from twin.camera.camera import Camera
from twin.camera.power import BOOT_S, RESTART_DELAY_S
from twin.camera.wing import cameras_of
from twin.fleet import CameraSpec, WorldConfig
from twin.wings import KINDS
from twin.world import World


def firmware(version: str = "0.2.0", *, with_version: bool = True) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        files = {"BUILD_INFO": b"build_date=2026-08-01\ngit_commit=abc1234\n", "deploy.sh": b"#!/bin/sh\n"}
        if with_version:
            files["VERSION"] = version.encode() + b"\n"
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def swu(version: str = "1.5") -> bytes:
    return b"070701" + b"0" * 104 + f'software = {{ version = "{version}"; }};'.encode() + b"\0" * 512


@pytest.fixture
def world() -> World:
    return World(WorldConfig(seed=5, cameras=CameraSpec(1)), kinds=KINDS)


@pytest.fixture
def camera(world: World) -> Camera:
    return cameras_of(world)["cam-01"]


def run(world: World, seconds: float) -> None:
    world.env.run(until=world.env.now + seconds)


def test_ota_happy_path_stage_by_stage_then_reboot(world: World, camera: Camera) -> None:
    data = camera.storage.partition("data")
    before = data.used
    token = camera.login("admin", "password", 0)
    boot_id = camera.power.boot_id()
    package = firmware()
    camera.ota.install("fw.tar.gz", package)
    seen = []
    for seconds in (0.5, 2, 8, 2):
        run(world, seconds)
        s = camera.ota.report()
        seen.append((s.status, s.progress, s.current_step))
    assert seen == [
        ("uploading", 5, "upload"),
        ("extracting", 20, "extract"),
        ("extracting", 20, "validate"),
        ("deploying", 50, "deploy"),
    ]
    assert data.used > before  # the package sits on the data partition meanwhile
    run(world, 30)
    done = camera.ota.report()
    assert (done.status, done.progress, done.version, done.reboot_needed) == ("success", 100, "0.2.0", True)
    assert done.job_id.startswith("ota-") and done.boot_id == boot_id and not done.reboot_confirmed
    assert camera.check_token(token) == "admin"
    run(world, ota_module.REBOOT_AFTER_S)
    assert not camera.powered
    with pytest.raises(Exception, match="token"):
        camera.check_token(token)
    run(world, BOOT_S)
    after = camera.ota.report()
    assert camera.powered and after.reboot_confirmed and not after.reboot_needed
    assert after.current_boot_id != boot_id and after.status == "success"
    assert camera.ota.current_version() == "0.2.0"
    assert not camera.fs.exists("/data/aipc-data/ota/fw.tar.gz")
    assert b'"status": "success"' in camera.fs.read(ota_module.STATUS_FILE)


@pytest.mark.parametrize("stage", ["upload", "extract", "validate", "deploy"])
def test_ota_fails_at_an_armed_stage_and_does_not_reboot(world: World, camera: Camera, stage: str) -> None:
    camera.ota.fail_at(stage, f"injected {stage} fault")
    camera.ota.install("fw.tar.gz", firmware())
    run(world, 60)
    s = camera.ota.report()
    assert (s.status, s.current_step, s.error) == ("failed", stage, f"injected {stage} fault")
    assert s.finished_at > 0 and "failed" in s.log_tail and s.log_path == ota_module.LOG_FILE
    assert camera.powered and camera.boot_count == 0
    assert camera.ota.current_version() == "0.1.0"
    camera.ota.install("fw.tar.gz", firmware())  # one-shot: the next install goes through
    run(world, 60)
    assert camera.ota.report().status == "success"


def test_install_from_path_prepares_and_can_fail_at_prepare(world: World, camera: Camera) -> None:
    camera.fs.write("/data/aipc/uploads/fw.tar.gz", firmware("0.3.0"))
    answer = camera.ota.install_from_path("/data/aipc/uploads/fw.tar.gz")
    assert answer["status"] == "preparing" and answer["source_path"] == "/data/aipc/uploads/fw.tar.gz"
    assert camera.ota.report().current_step == "prepare"
    run(world, 60)
    assert camera.ota.report().status == "success"
    assert camera.fs.exists("/data/aipc/uploads/fw.tar.gz")  # a file the user put there stays
    run(world, 100)
    camera.ota.fail_at("prepare")
    camera.ota.install_from_path("/data/aipc/uploads/fw.tar.gz")
    run(world, 10)
    assert (camera.ota.report().status, camera.ota.report().current_step) == ("failed", "prepare")


def test_bad_packages_fail_naturally(world: World, camera: Camera) -> None:
    camera.ota.install("junk.bin", b"not a tarball at all")
    run(world, 60)
    assert (camera.ota.report().status, camera.ota.report().current_step) == ("failed", "extract")
    camera.ota.install("fw.tar.gz", firmware(with_version=False))
    run(world, 60)
    s = camera.ota.report()
    assert (s.status, s.current_step) == ("failed", "validate") and "VERSION" in s.error


def test_power_loss_mid_deploy_fails_the_install_and_reboots(world: World, camera: Camera) -> None:
    token = camera.login("admin", "password", 0)
    camera.ota.install("fw.tar.gz", firmware())
    run(world, 15)
    assert camera.ota.report().status == "deploying"
    camera.ota.power_loss()
    run(world, 0.1)
    assert not camera.powered
    s = camera.ota.report()
    assert (s.status, s.current_step, s.error) == (
        "failed",
        "deploy",
        "interrupted: power lost during deploy",
    )
    run(world, BOOT_S)
    assert camera.powered and camera.ota.report().status == "failed"
    with pytest.raises(Exception, match="token"):
        camera.check_token(token)


def test_ota_refuses_a_second_install_and_bad_requests(world: World, camera: Camera) -> None:
    camera.ota.install("fw.tar.gz", firmware())
    with pytest.raises(Conflict):
        camera.ota.install("fw.tar.gz", firmware())
    with pytest.raises(InvalidInput):
        camera.ota.install_from_path("data/fw.tar.gz")
    with pytest.raises(NotFound):
        camera.ota.install_from_path("/data/none.tar.gz")
    with pytest.raises(InvalidInput):
        camera.ota.fail_at("nowhere")


def test_os_upgrade_happy_path_through_reboot_and_verify(world: World, camera: Camera) -> None:
    up = camera.os_upgrade
    job = up.upload("os-1.5.swu", swu(), "")
    assert (job["status"], job["progress"]) == ("validating", 100)
    assert up.validate(job["job_id"], "", False)["status"] == "ready"
    assert up.install("", "standard", "") == {"job_id": job["job_id"], "status": "installing"}
    run(world, osu.INSTALL_S / 2 + 0.1)
    assert up.report()["progress"] == 50
    run(world, osu.INSTALL_S / 2)
    assert up.report()["status"] == "awaiting_reboot" and up.report()["reboot_required"]
    token = camera.login("admin", "password", 0)
    assert up.reboot(job["job_id"])["status"] == "rebooting"
    run(world, RESTART_DELAY_S + 0.5)
    assert not camera.powered
    with pytest.raises(Exception, match="token"):
        camera.check_token(token)
    run(world, BOOT_S + 1)
    assert camera.powered and up.report()["status"] == "verifying"
    run(world, osu.VERIFY_S)
    final = up.report()
    assert (final["status"], up.version, up.active_copy) == ("success", "1.5", "B")
    assert "success" in final["log"]


@pytest.mark.parametrize("stage", ["upload", "validate", "install", "verify"])
def test_os_upgrade_fails_at_each_stage(world: World, camera: Camera, stage: str) -> None:
    up = camera.os_upgrade
    up.fail_at(stage, "injected")
    try:
        up.upload("os.swu", swu(), "")
        up.validate("", "", False)
        up.install("", "full", "")
        run(world, osu.INSTALL_S + 1)
        up.reboot("")
        run(world, RESTART_DELAY_S + BOOT_S + 2 + osu.VERIFY_S)
    except (InvalidInput, InternalError, Conflict):
        assert stage in ("upload", "validate", "install")
    report = up.report()
    assert report is not None
    expected = "rollback" if stage == "verify" else "failed"
    assert report["status"] == expected and report["error"] == "injected"
    assert up.version == osu.OS_VERSION and up.active_copy == "A"


def test_os_upgrade_power_loss_while_installing(world: World, camera: Camera) -> None:
    up = camera.os_upgrade
    up.upload("os.swu", swu(), "")
    up.validate("", "", False)
    up.install("", "standard", "")
    run(world, 30)
    up.power_loss()
    run(world, 1)
    assert up.report()["status"] == "failed" and "power lost" in up.report()["error"]
    assert not camera.powered
    with pytest.raises(Conflict):
        up.reboot("")
    assert up.cancel("")["status"] == "cancelled"


def test_os_upgrade_validation_rules(world: World, camera: Camera) -> None:
    up = camera.os_upgrade
    with pytest.raises(InvalidInput):
        up.upload("os.img", swu(), "")
    with pytest.raises(InvalidInput):
        up.upload("os.swu", swu(), "0" * 64)
    job = up.upload("old.swu", swu("1.2"), "")
    with pytest.raises(Conflict):
        up.upload("again.swu", swu(), "")
    with pytest.raises(InvalidInput, match="downgrade"):
        up.validate(job["job_id"], "", False)
    assert up.cancel(job["job_id"])["status"] == "cancelled"
    job = up.upload("old.swu", swu("1.2"), "")
    assert up.validate(job["job_id"], "", True)["status"] == "ready"
    with pytest.raises(NotFound):
        up.validate("another-id", "", False)
    assert up.delete_package("")["message"] == "Package deleted"
    with pytest.raises(InvalidInput):
        up.install("", "standard", "")


def test_an_ota_in_flight_resumes_after_snapshot_and_restore(world: World) -> None:
    camera = cameras_of(world)["cam-01"]
    camera.ota.install("fw.tar.gz", firmware("0.7.0"))
    run(world, 20)  # deploying, 8 s into its 30
    snap = world.snapshot()
    world.restore(snap)
    restored = cameras_of(world)["cam-01"]
    s = restored.ota.report()
    assert (s.status, s.current_step, s.version) == ("deploying", "deploy", "0.7.0")
    run(world, 21)
    assert restored.ota.report().status == "deploying"
    run(world, 2)
    assert restored.ota.report().status == "success" and restored.ota.current_version() == "0.7.0"
    run(world, ota_module.REBOOT_AFTER_S + 1)
    assert not restored.powered


@pytest.mark.parametrize(
    ("after_reboot", "status"),
    [(0.001, "rebooting"), (RESTART_DELAY_S + 1, "rebooting"), (RESTART_DELAY_S + BOOT_S + 3, "verifying")],
)
def test_an_os_upgrade_in_flight_resumes_after_snapshot_and_restore(
    world: World, after_reboot: float, status: str
) -> None:
    up = cameras_of(world)["cam-01"].os_upgrade
    up.upload("os.swu", swu("1.7"), "")
    up.validate("", "", False)
    up.install("", "standard", "")
    run(world, osu.INSTALL_S + 1)
    up.reboot("")
    run(world, after_reboot)
    before = up.report()
    assert before["status"] == status
    world.restore(world.snapshot())
    restored = cameras_of(world)["cam-01"].os_upgrade
    assert restored.report()["status"] == before["status"]
    run(world, RESTART_DELAY_S + BOOT_S + osu.VERIFY_S + 5)
    assert restored.report()["status"] == "success" and restored.version == "1.7"


def test_an_os_install_resumes_mid_way(world: World) -> None:
    up = cameras_of(world)["cam-01"].os_upgrade
    up.upload("os.swu", swu("1.7"), "")
    up.validate("", "", False)
    up.install("", "standard", "")
    run(world, osu.INSTALL_S / 2 + 1)
    world.restore(world.snapshot())
    restored = cameras_of(world)["cam-01"].os_upgrade
    assert restored.report()["status"] == "installing" and restored.report()["progress"] == 50
    run(world, osu.INSTALL_S / 2)
    assert restored.report()["status"] == "awaiting_reboot"


def test_transitions_are_world_events(world: World, camera: Camera) -> None:
    sub = world.bus.subscribe({EventKind.CAMERA_OTA_STATE, EventKind.CAMERA_OS_UPGRADE_STATE})
    camera.ota.install("fw.tar.gz", firmware())
    run(world, 50)
    camera.os_upgrade.upload("os.swu", swu(), "")
    events = list(iter(sub.get_nowait, None))
    ota = [(e.data["status"], e.data["step"]) for e in events if e.kind is EventKind.CAMERA_OTA_STATE]
    assert ota == [
        ("uploading", "upload"),
        ("extracting", "extract"),
        ("extracting", "validate"),
        ("deploying", "deploy"),
        ("success", "deploy"),
    ]
    os_states = [e.data["status"] for e in events if e.kind is EventKind.CAMERA_OS_UPGRADE_STATE]
    assert os_states == ["validating"]


def test_a_package_removed_mid_install_fails_the_install_not_the_world(world: World, camera: Camera) -> None:
    camera.fs.write("/data/aipc/uploads/fw.tar.gz", firmware())
    camera.ota.install_from_path("/data/aipc/uploads/fw.tar.gz")
    camera.fs.remove("/data/aipc/uploads/fw.tar.gz")
    run(world, 60)  # a crashed process would raise here
    s = camera.ota.report()
    assert (s.status, s.current_step) == ("failed", "extract") and "no such file" in s.error


def test_full_disks_and_removed_directories_do_not_stop_the_machines(world: World, camera: Camera) -> None:
    camera.ota.install("fw.tar.gz", firmware())
    run(world, 3)
    camera.storage.fill("root")
    camera.storage.fill("data")
    camera.fs.remove("/var/log/aipc")
    camera.fs.remove("/data/aipc-data")
    run(world, 600)
    assert camera.logs.dropped > 0 and len(camera.logs.journals["platform-api"]) > 1
    s = camera.ota.report()
    assert (s.status, s.current_step) == ("failed", "extract")  # its package went with the directory
    assert "no such file" in s.error and s.finished_at > 0 and not camera.ota.busy
