"""Firmware OTA on a camera: a timed state machine on the world clock, with failure points.

``uploading`` (install) or ``preparing`` (install-from-path) → ``extracting`` (extract, then
validate) → ``deploying`` → ``success``, then a reboot ``REBOOT_AFTER_S`` later; any stage can end
in ``failed``. The status survives the reboot (it lives in ``/data/aipc-data/ota_status.json``) and
switches to ``reboot_confirmed`` once the boot id changed or the grace period passed.

A firmware package is a gzip'd tar holding ``VERSION`` (and optionally ``BUILD_INFO`` lines
``build_date=…``, ``git_commit=…`` and ``deploy.sh``). It is read from memory, never unpacked
anywhere. Failure points for scenarios and the control plane: :meth:`Ota.fail_at` (the next run of a
stage fails) and :meth:`Ota.power_loss` (power is cut now, mid-stage).
"""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.errors import Conflict, DomainError, InvalidInput, NotFound
from hardware.ports.events import EventKind
from hardware.ports.gateway_files import FirmwareInfo
from hardware.ports.types import OtaStatus

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.logs import DeviceLogs
    from twin.camera.power import Power
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

STAGES = ("upload", "prepare", "extract", "validate", "deploy")
STAGE_STATUS = {
    "upload": ("uploading", 5, 2.0),
    "prepare": ("preparing", 5, 2.0),
    "extract": ("extracting", 20, 8.0),
    "validate": ("extracting", 20, 2.0),
    "deploy": ("deploying", 50, 30.0),
}
"""stage → (status, progress, seconds it takes)."""
REBOOT_AFTER_S = 6.0
CONFIRM_GRACE_S = 45.0
STATUS_FILE = "/data/aipc-data/ota_status.json"
LOG_FILE = "/data/aipc-data/ota.log"
WORK_DIR = "/data/aipc-data/ota"
VERSION_FILE = "/etc/aipc/VERSION"
LOG_TAIL_BYTES = 8192


class FirmwareError(Exception):
    """The package is not what a firmware package must be; carries the failing stage."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def read_firmware(data: bytes) -> dict[str, str]:
    """``VERSION`` and ``BUILD_INFO`` of a package, read in memory."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            version_member = members.get("VERSION")
            if version_member is None:
                raise FirmwareError("validate", "VERSION file not found in firmware package")
            info = {"version": _member_text(tar, version_member).strip()}
            if "BUILD_INFO" in members:
                for line in _member_text(tar, members["BUILD_INFO"]).splitlines():
                    key, _, value = line.partition("=")
                    info[key.strip()] = value.strip()
    except (tarfile.TarError, EOFError, OSError) as err:
        raise FirmwareError("extract", f"failed to extract firmware package: {err}") from err
    if not info["version"]:
        raise FirmwareError("validate", "VERSION file is empty")
    return info


def _member_text(tar: tarfile.TarFile, member: tarfile.TarInfo) -> str:
    handle = tar.extractfile(member)
    return handle.read(4096).decode(errors="replace") if handle else ""


class Ota:
    def __init__(
        self, world: Engine, camera_id: str, clock: DeviceClock, power: Power, fs: VirtualFS, logs: DeviceLogs
    ) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.clock, self.power, self.fs, self.logs = clock, power, fs, logs
        self.status: dict[str, Any] = {}
        self._armed: dict[str, str] = {}
        self._process: simpy.Process | None = None
        self._job: dict[str, Any] = {}
        """The running install: first stage, package, whether it is ours, stage and its end (sim time)."""
        self._jobs = 0

    # Failure points --------------------------------------------------------------------------
    def fail_at(self, stage: str, error: str = "") -> None:
        """Make the next run of ``stage`` (one of ``STAGES``) fail with ``error``."""
        if stage not in STAGES:
            raise InvalidInput(f"unknown OTA stage {stage!r}; one of {', '.join(STAGES)}")
        self._armed[stage] = error or f"{stage} failed"

    def power_loss(self) -> None:
        """Cut the camera's power now: a running install fails where it is, the device reboots."""
        if self._process is not None and self._process.is_alive:
            self._process.interrupt("power lost during " + self.status.get("current_step", "install"))
        self.power.restart(delay=0.0, reason="power_loss")

    # Requests --------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._process is not None and self._process.is_alive

    def _check_idle(self) -> None:
        if self.busy or (self.status.get("reboot_needed") and not self._rebooted()):
            raise Conflict("Upgrade already in progress", resource="upgrade")

    def current_version(self) -> str:
        try:
            return self.fs.read(VERSION_FILE).decode().strip()
        except NotFound:
            return ""

    def detect(self) -> tuple[bool, str, str]:
        """(update_available, version, changelog): the twin has no update server, so nothing."""
        return False, "", ""

    def parse(self, filename: str, data: bytes) -> FirmwareInfo:
        if not data:
            raise InvalidInput("firmware file is required")
        try:
            info = read_firmware(data)
        except FirmwareError as err:
            raise InvalidInput(str(err)) from err
        path = f"/tmp/{_safe_name(filename or 'firmware.tar.gz')}"
        self.fs.write(path, data)
        return FirmwareInfo(
            current_version=self.current_version(),
            target_version=info["version"],
            build_date=info.get("build_date", ""),
            git_commit=info.get("git_commit", ""),
            firmware_path=path,
            firmware_size=len(data),
        )

    def install(self, filename: str, data: bytes) -> dict[str, Any]:
        if not data:
            raise InvalidInput("firmware file is required")
        self._check_idle()
        self._jobs += 1
        package = f"{WORK_DIR}/{_safe_name(filename or 'firmware.tar.gz')}"
        self.fs.mkdir(WORK_DIR)
        self.fs.write(package, data)  # StorageFull here is the client's 507
        self._start("upload", package, owned=True)
        return {"message": "Firmware uploaded, upgrade started", "status": self.status["status"]}

    def install_from_path(self, path: str) -> dict[str, Any]:
        if not path:
            raise InvalidInput("path is required")
        if not path.startswith("/"):
            raise InvalidInput("path must be an absolute path on the device")
        if ".." in path.split("/"):
            raise InvalidInput("path must not contain '..'")
        canonical, node = self.fs.resolve(path)
        if node.kind != "-":
            raise InvalidInput(f"not a regular file: {path}")
        self._check_idle()
        self._jobs += 1
        self._start("prepare", canonical, owned=False)
        return {
            "message": "OTA upgrade started",
            "status": "preparing",
            "progress": "5",
            "source_path": path,
        }

    # The machine -----------------------------------------------------------------------------
    def _start(self, first: str, package: str, owned: bool) -> None:
        now = int(self.clock.now())
        self.status = {
            "status": STAGE_STATUS[first][0],
            "progress": STAGE_STATUS[first][1],
            "message": "Upgrade started",
            "current_step": first,
            "version": "",
            "start_time": now,
            "error": "",
            "reboot_needed": False,
            "job_id": f"ota-{now * 1_000_000_000 + self._jobs}",
            "boot_id": self.power.boot_id(),
            "log_path": LOG_FILE,
        }
        self.fs.mkdir(LOG_FILE.rsplit("/", 1)[0])
        self.fs.write(LOG_FILE, b"")
        self._log(f"starting upgrade from {package}")
        self._job = {"first": first, "package": package, "owned": owned}
        self._process = self.env.process(self._run(first, package, owned))

    def _enter(self, stage: str, message: str) -> None:
        status, progress, _ = STAGE_STATUS[stage]
        self.status.update(status=status, progress=progress, current_step=stage, message=message)
        self._log(message)
        self._emit()

    def _package_info(self, package: str) -> dict[str, str]:
        try:
            return read_firmware(self.fs.read(package))
        except FirmwareError as err:
            if err.stage == "extract":
                raise
            return {"error": str(err)}

    def _run(self, first: str, package: str, owned: bool, resume: tuple[str, float] | None = None):
        """The stages in order; ``resume`` = (stage, seconds left) continues a restored install."""
        stages = (first, "extract", "validate", "deploy")
        start = stages.index(resume[0]) if resume else 0
        left = resume[1] if resume else None
        try:
            info = self._package_info(package) if start > 1 else {}
            for stage in stages[start:]:
                if left is None:
                    self._enter(stage, _MESSAGES[stage])
                duration = STAGE_STATUS[stage][2] if left is None else left
                left = None
                self._job.update(stage=stage, ends_at=self.env.now + duration)
                yield self.env.timeout(duration)
                if stage in self._armed:
                    raise FirmwareError(stage, self._armed.pop(stage))
                if stage == "extract":
                    info = self._package_info(package)
                elif stage == "validate":
                    if "error" in info:
                        raise FirmwareError("validate", info["error"])
                    self.status["version"] = info["version"]
                elif stage == "deploy":
                    self.fs.write(VERSION_FILE, (info["version"] + "\n").encode())
            self.status.update(
                status="success",
                progress=100,
                message=f"Upgrade to {info['version']} complete, rebooting in {int(REBOOT_AFTER_S)} s",
                reboot_needed=True,
                finished_at=int(self.clock.now()),
            )
            self._log("deploy complete; rebooting")
            self._emit()
            self._cleanup(package, owned)
            self.power.restart(delay=REBOOT_AFTER_S, reason="ota")
        except FirmwareError as err:
            self._fail(err.stage, str(err))
            self._cleanup(package, owned)
        except DomainError as err:  # the package or a target file vanished, a partition filled up
            self._fail(self.status.get("current_step", ""), err.message)
            self._cleanup(package, owned)
        except simpy.Interrupt as stop:
            self._fail(self.status.get("current_step", ""), f"interrupted: {stop.cause}")
            self._cleanup(package, owned)

    def _fail(self, stage: str, error: str) -> None:
        self._log(f"{stage} failed: {error}")
        log = b""
        with contextlib.suppress(DomainError):
            log = self.fs.read(LOG_FILE)
        self.status.update(
            status="failed",
            message="Upgrade failed",
            current_step=stage or self.status.get("current_step", ""),
            error=error,
            finished_at=int(self.clock.now()),
            log_tail=log[-LOG_TAIL_BYTES:].decode(errors="replace"),
        )
        self._persist()
        self._emit()

    def _cleanup(self, package: str, owned: bool) -> None:
        if owned and self.fs.exists(package):
            with contextlib.suppress(DomainError):
                self.fs.remove(package)
        self._persist()

    def _emit(self) -> None:
        s = self.status
        self.world.emit(
            EventKind.CAMERA_OTA_STATE,
            self.camera_id,
            status=s["status"],
            step=s["current_step"],
            progress=s["progress"],
        )

    def _log(self, message: str) -> None:
        """The OTA log and the platform-api journal; a full or missing directory loses the line."""
        with contextlib.suppress(DomainError):
            self.fs.append(LOG_FILE, f"[{int(self.clock.now())}] {message}\n".encode())
        self.logs.write("platform-api", f"ota: {message}")
        self._persist()

    def _persist(self) -> None:
        with contextlib.suppress(DomainError):
            self.fs.write(STATUS_FILE, json.dumps(self.status, sort_keys=True).encode())

    # Reading ---------------------------------------------------------------------------------
    def _rebooted(self) -> bool:
        finished = self.status.get("finished_at", 0)
        return self.status.get("boot_id") != self.power.boot_id() or (
            self.clock.now() - finished >= CONFIRM_GRACE_S and finished > 0
        )

    def report(self) -> OtaStatus:
        """The last install's status; the zero status with the current boot id on a device that
        never ran an OTA."""
        s = self.status
        if not s:
            return OtaStatus("", 0, "", "", "", 0, "", False, current_boot_id=self.power.boot_id())
        confirmed = bool(s.get("reboot_needed")) and s["status"] == "success" and self._rebooted()
        return OtaStatus(
            s["status"],
            s["progress"],
            s["message"],
            s["current_step"],
            s["version"],
            s["start_time"],
            s["error"],
            bool(s.get("reboot_needed")) and not confirmed,
            current_boot_id=self.power.boot_id(),
            job_id=s.get("job_id", ""),
            finished_at=s.get("finished_at", 0),
            reboot_confirmed=confirmed,
            boot_id=s.get("boot_id", ""),
            log_path=s.get("log_path", ""),
            log_tail=s.get("log_tail", ""),
        )

    # Snapshot --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        job = dict(self._job) if self.busy else {}
        return {"status": dict(self.status), "armed": dict(self._armed), "jobs": self._jobs, "job": job}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore; an install that was running carries on from its stage with the time it had left."""
        self.status = dict(state.get("status", {}))
        self._armed = dict(state.get("armed", {}))
        self._jobs = state.get("jobs", 0)
        job = dict(state.get("job") or {})
        if self.status.get("status") not in ("uploading", "preparing", "extracting", "deploying"):
            return
        if "stage" not in job:
            self._fail(self.status["current_step"], "interrupted: the device state was restored")
            return
        self._job = job
        left = max(0.0, job["ends_at"] - self.env.now)
        run = self._run(job["first"], job["package"], job["owned"], (job["stage"], left))
        self._process = self.env.process(run)


_MESSAGES = {
    "upload": "Receiving firmware",
    "prepare": "Copying firmware from path",
    "extract": "Extracting firmware package",
    "validate": "Validating firmware package",
    "deploy": "Deploying firmware",
}


def _safe_name(filename: str) -> str:
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name if name not in ("", ".", "..") else "package.bin"
