"""A/B OS upgrade on a camera: one job at a time, a timed state machine on the world clock.

``upload`` (the package is stored; the job waits in ``validating``) → ``validate`` (``ready``) →
``install`` (``installing`` while the inactive copy is written, ``installed``, then
``awaiting_reboot``) → ``reboot`` (``rebooting``; after boot ``verifying``) → ``success``, or
``rollback`` when the new copy does not come up, or ``failed``. ``cancel`` ends a job in
``cancelled`` from uploading, validating, ready, failed or awaiting_reboot.

A package is an SWUpdate image (``.swu``, a cpio "newc" archive whose ``sw-description`` names the
version). Failure points for scenarios and the control plane: :meth:`OsUpgrade.fail_at` and
:meth:`OsUpgrade.power_loss`.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.errors import Conflict, InternalError, InvalidInput, NotFound, StorageFull
from hardware.ports.events import EventKind

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.logs import DeviceLogs
    from twin.camera.power import Power
    from twin.camera.storage import Storage
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

STAGES = ("upload", "validate", "install", "verify")
PACKAGE_DIR = "/data/os-upgrade"
OS_VERSION = "1.4"
INSTALL_S = 120.0
INSTALL_STEPS = 10
VERIFY_S = 15.0
HEADROOM = 2 * 1024**3
"""Free space an upload needs beyond the package itself."""
CANCELLABLE = ("uploading", "validating", "ready", "failed", "awaiting_reboot")
ACTIVE = ("uploading", "validating", "ready", "installing", "installed", "awaiting_reboot", "rebooting")
LOG_KEEP = 64 * 1024
_VERSION = re.compile(rb'version\s*=\s*"([^"]+)"')


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


class OsUpgrade:
    def __init__(
        self,
        world: Engine,
        camera_id: str,
        clock: DeviceClock,
        power: Power,
        storage: Storage,
        fs: VirtualFS,
        logs: DeviceLogs,
    ) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.clock, self.power, self.storage, self.fs, self.logs = clock, power, storage, fs, logs
        self.job: dict[str, Any] | None = None
        self.log = ""
        self.version = OS_VERSION
        self.active_copy = "A"
        self._armed: dict[str, str] = {}
        self._process: simpy.Process | None = None
        self._timer: dict[str, Any] = {}
        """When the running step ends (sim time), and the boot count a reboot waits to see change."""
        self._rng = world.streams.get(f"{camera_id}/os-upgrade")

    # Failure points --------------------------------------------------------------------------
    def fail_at(self, stage: str, error: str = "") -> None:
        """Make the next run of ``stage`` (one of ``STAGES``) fail; ``verify`` ends in rollback."""
        if stage not in STAGES:
            raise InvalidInput(f"unknown OS-upgrade stage {stage!r}; one of {', '.join(STAGES)}")
        self._armed[stage] = error or f"{stage} failed"

    def power_loss(self) -> None:
        """Cut power now: a job being installed fails (the active copy stays) and the device reboots."""
        if self._process is not None and self._process.is_alive and self.job:
            self._process.interrupt(f"power lost while {self.job['status']}")
        self.power.restart(delay=0.0, reason="power_loss")

    # Internals -------------------------------------------------------------------------------
    def _now(self) -> str:
        return datetime.fromtimestamp(int(self.clock.now()), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _set(self, status: str, message: str, **fields: Any) -> None:
        assert self.job is not None
        self.job.update(status=status, message=message, updated_at=self._now(), **fields)
        self._log(f"{status}: {message}")
        self.world.emit(
            EventKind.CAMERA_OS_UPGRADE_STATE,
            self.camera_id,
            job_id=self.job["job_id"],
            status=status,
            progress=self.job["progress"],
        )

    def _log(self, line: str) -> None:
        self.log = (self.log + f"[{self._now()}] {line}\n")[-LOG_KEEP:]
        self.logs.write("platform-api", f"os-upgrade: {line}")

    def _job(self, job_id: str) -> dict[str, Any]:
        if self.job is None or (job_id and job_id != self.job["job_id"]):
            raise NotFound(f"OS upgrade job not found: {job_id or '(current)'}")
        return self.job

    def _need(self, job: dict[str, Any], *states: str) -> None:
        if job["status"] not in states:
            raise Conflict(f"job is {job['status']}, expected {' or '.join(states)}", resource="upgrade")

    def _armed_error(self, stage: str) -> str | None:
        return self._armed.pop(stage, None)

    # Requests --------------------------------------------------------------------------------
    def upload(self, filename: str, data: bytes, sha256: str) -> dict[str, Any]:
        if not filename.lower().endswith(".swu"):
            raise InvalidInput("only .swu packages are accepted")
        if not data:
            raise InvalidInput("package is empty")
        if self.job is not None and self.job["status"] in ACTIVE:
            raise Conflict("another OS upgrade job is active")
        if self.storage.partition("data").free < len(data) + HEADROOM:
            raise StorageFull("not enough free space for the package plus 2 GiB")
        digest = hashlib.sha256(data).hexdigest()
        if sha256 and sha256.lower() != digest:
            raise InvalidInput("X-Content-SHA256 does not match the uploaded package")
        job_id = str(uuid.UUID(bytes=self._rng.bytes(16), version=4))
        path = f"{PACKAGE_DIR}/{job_id}.swu"
        self.log = ""
        self.job = {
            "job_id": job_id,
            "status": "uploading",
            "progress": 0,
            "message": "Receiving package",
            "error": "",
            "file_name": filename.replace("\\", "/").rsplit("/", 1)[-1],
            "file_size": len(data),
            "sha256": digest,
            "package_path": path,
            "current_version": self.version,
            "target_version": "",
            "active_copy": self.active_copy,
            "target_copy": "B" if self.active_copy == "A" else "A",
            "upgrade_strategy": "",
            "update_mode": "",
            "sha256_valid": False,
            "signature_valid": False,
            "version_valid": False,
            "supports_ab": True,
            "supports_rollback": True,
            "reboot_required": False,
            "created_at": self._now(),
            "updated_at": self._now(),
        }
        self._log(f"upload of {self.job['file_name']} ({len(data)} bytes)")
        error = self._armed_error("upload")
        if error:
            self._set("failed", "Upload failed", error=error)
            raise InternalError(f"upload failed: {error}")
        self.fs.mkdir(PACKAGE_DIR)
        try:
            self.fs.write(path, data)
        except StorageFull as err:
            self._set("failed", "Upload failed", error=err.message)
            raise
        self._set("validating", "Package uploaded, waiting for validation", progress=100)
        return dict(self.job)

    def validate(self, job_id: str, sha256: str, allow_downgrade: bool) -> dict[str, Any]:
        job = self._job(job_id)
        self._need(job, "validating", "ready")
        try:
            data = self.fs.read(job["package_path"])
        except NotFound as err:
            raise InvalidInput("the package was deleted; upload it again") from err
        problem = self._armed_error("validate")
        if sha256 and sha256.lower() != job["sha256"]:
            problem = "sha256 does not match the package"
        job["sha256_valid"] = not (sha256 and sha256.lower() != job["sha256"])
        if problem is None and not data.startswith((b"070701", b"070702")):
            problem = "not an SWUpdate image (bad cpio header)"
        found = _VERSION.search(data[:65536])
        target = found.group(1).decode(errors="replace") if found else ""
        if problem is None and not target:
            problem = "sw-description has no version"
        if problem is None and not allow_downgrade and _version_key(target) < _version_key(self.version):
            problem = f"downgrade from {self.version} to {target} not allowed"
        job.update(target_version=target, signature_valid=problem is None, version_valid=problem is None)
        if problem:
            self._set("failed", "Validation failed", error=problem)
            raise InvalidInput(problem)
        self._set("ready", f"Package valid: {self.version} -> {target}")
        return dict(job)

    def install(self, job_id: str, strategy: str, update_mode: str) -> dict[str, Any]:
        job = self._job(job_id)
        strategy = strategy or "standard"
        if strategy not in ("standard", "full"):
            raise InvalidInput("upgrade_strategy must be standard or full")
        self._need(job, "ready")
        if not self.fs.exists(job["package_path"]):
            raise InvalidInput("the package was deleted; upload it again")
        job.update(upgrade_strategy=strategy, update_mode=update_mode or "ab")
        self._set("installing", f"Writing copy {job['target_copy']}", progress=0)
        self._process = self.env.process(self._install())
        return {"job_id": job["job_id"], "status": "installing"}

    def _wait(self, seconds: float, **extra: Any) -> simpy.Timeout:
        self._timer = {"ends_at": self.env.now + seconds, **extra}
        return self.env.timeout(seconds)

    def _install(self, first_step: int = 1, left: float | None = None):
        job = self.job
        assert job is not None
        try:
            for step in range(first_step, INSTALL_STEPS + 1):
                yield self._wait(INSTALL_S / INSTALL_STEPS if left is None else left)
                left = None
                if step == INSTALL_STEPS // 2 and "install" in self._armed:
                    self._set("failed", "Installation failed", error=self._armed.pop("install"))
                    return
                job["progress"] = step * 100 // INSTALL_STEPS
            self._set("installed", f"Copy {job['target_copy']} written", progress=100)
            self._set("awaiting_reboot", "Reboot to activate the new OS", reboot_required=True)
        except simpy.Interrupt as stop:
            self._set("failed", "Installation interrupted", error=str(stop.cause))

    def reboot(self, job_id: str) -> dict[str, Any]:
        job = self._job(job_id)
        self._need(job, "awaiting_reboot")
        self._set("rebooting", f"Rebooting into copy {job['target_copy']}")
        self._process = self.env.process(self._reboot())
        return {"job_id": job["job_id"], "status": "rebooting"}

    def _reboot(self, boots: int | None = None, verify_left: float | None = None):
        """Reboot, wait for the boot, verify; a restored job resumes with ``boots`` (the boot count
        before its reboot) or ``verify_left`` (seconds of verification left)."""
        job = self.job
        assert job is not None
        if verify_left is None:
            if boots is None or (self.power.powered and self.power.boot_count == boots):
                boots = self.power.boot_count
                self.power.restart(reason="os_upgrade")
            while self.power.boot_count == boots:
                yield self._wait(1.0, boots=boots)
            self._set("verifying", f"Verifying copy {job['target_copy']}")
        yield self._wait(VERIFY_S if verify_left is None else verify_left)
        error = self._armed_error("verify")
        if error:
            self._set("rollback", f"Copy {job['target_copy']} failed; back on {self.active_copy}")
            job.update(error=error, reboot_required=False)
            return
        self.active_copy, self.version = job["target_copy"], job["target_version"]
        self._set("success", f"Running OS {self.version} from copy {self.active_copy}", reboot_required=False)

    def cancel(self, job_id: str) -> dict[str, Any]:
        job = self._job(job_id)
        self._need(job, *CANCELLABLE)
        self._set("cancelled", "Cancelled by user", reboot_required=False)
        return dict(job)

    def delete_package(self, job_id: str) -> dict[str, Any]:
        job = self._job(job_id)
        if job["status"] in ("installing", "installed", "rebooting", "verifying"):
            raise Conflict(f"job is {job['status']}; the package is in use", resource="upgrade")
        if not self.fs.exists(job["package_path"]):
            raise NotFound("package already deleted", resource="file")
        self.fs.remove(job["package_path"])
        self._log("package deleted")
        return {"job_id": job["job_id"], "message": "Package deleted"}

    # Reading ---------------------------------------------------------------------------------
    def report(self) -> dict[str, Any] | None:
        if self.job is None:
            return None
        out = {k: v for k, v in self.job.items() if k != "package_path"}
        out["log"] = self.log
        return out

    # Snapshot --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "job": dict(self.job) if self.job else None,
            "log": self.log,
            "version": self.version,
            "active_copy": self.active_copy,
            "armed": dict(self._armed),
            "timer": dict(self._timer),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self.job = dict(state["job"]) if state.get("job") else None
        self.log = state.get("log", "")
        self.version = state.get("version", OS_VERSION)
        self.active_copy = state.get("active_copy", "A")
        self._armed = dict(state.get("armed", {}))
        timer = dict(state.get("timer") or {})
        status = self.job["status"] if self.job else ""
        if status not in ("installing", "installed", "rebooting", "verifying"):
            return
        assert self.job is not None
        left = max(0.0, timer.get("ends_at", self.env.now) - self.env.now)
        if status == "installing":
            done = self.job["progress"] * INSTALL_STEPS // 100
            self._process = self.env.process(self._install(done + 1, left))
        elif status == "installed":
            self._set("awaiting_reboot", "Reboot to activate the new OS", reboot_required=True)
        elif status == "rebooting":
            self._process = self.env.process(self._reboot(boots=timer.get("boots")))
        else:
            self._process = self.env.process(self._reboot(verify_left=left))
