"""The twin's files, logs, shell and upgrade areas of the gateway port, over one camera.

Like the other areas in ``twin/gateway.py``, each call looks the camera up in the current world, so
the same object keeps working across resets and restores.
"""

from __future__ import annotations

from typing import Any

from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.gateway_files import (
    BatchDeleteResult,
    FileData,
    FileEntry,
    FirmwareInfo,
    LogFile,
    LogFollower,
    TerminalSession,
)
from twin.camera import shell
from twin.camera.area import CameraArea
from twin.camera.fs import DurableFiles
from twin.camera.logs import SERVICE_NAMES, SERVICES
from twin.camera.vfs import DEFAULT_DIR, Confined, Dir, File, mode_text
from twin.clock import SimClock
from twin.world import World

DIR_SIZE = 4096
DEBUG_DEFAULT_LINES, DEBUG_MAX_LINES = 10000, 50000


class TwinGatewayFiles(CameraArea):
    default_dir = DEFAULT_DIR

    @property
    def _view(self) -> Confined:
        return Confined(self.camera.fs)

    @property
    def _durable(self) -> DurableFiles:
        return DurableFiles(self._world.store, self._id, self.camera.fs)

    def list(self, path: str) -> list[FileEntry]:
        path = path or DEFAULT_DIR
        lexical = self._view.check(path)
        fs = self.camera.fs
        node = fs.stat(lexical)
        if not isinstance(node, Dir):
            raise InvalidInput(f"not a directory: {path}")
        entries = [
            FileEntry(
                name=name,
                path=lexical.rstrip("/") + "/" + name,
                is_dir=isinstance(child, Dir),
                size=child.size if isinstance(child, File) else DIR_SIZE if isinstance(child, Dir) else 0,
                mod_time=child.mtime,
                mode=mode_text(child),
            )
            for name, child in fs.listdir(lexical)
        ]
        return sorted(entries, key=lambda e: (not e.is_dir, e.name))

    def read(self, path: str, max_bytes: int = 0) -> FileData:
        if not path:
            raise InvalidInput("path is required")
        lexical = self._view.check(path)
        node = self.camera.fs.stat(lexical)
        if isinstance(node, Dir):
            raise InvalidInput(f"is a directory: {path}")
        assert isinstance(node, File)
        if max_bytes and node.size > max_bytes:
            raise InvalidInput(f"file too large to display ({node.size} bytes, max {max_bytes})")
        return FileData(lexical, lexical.rsplit("/", 1)[-1], node.read())

    def write(self, path: str, content: bytes) -> int:
        if not path:
            raise InvalidInput("path is required")
        target = self._view.check_mutable(path)
        size = self.camera.fs.write(target, content)
        self._durable.save(target)
        return size

    def upload(self, directory: str, filename: str, data: bytes) -> tuple[str, int]:
        directory = directory or DEFAULT_DIR
        name = filename.replace("\\", "/").rsplit("/", 1)[-1]
        if name in ("", ".", ".."):
            raise InvalidInput("invalid file name")
        lexical = self._view.check(directory)
        if not isinstance(self.camera.fs.stat(lexical), Dir):
            raise InvalidInput(f"not a directory: {directory}")
        target = self._view.check_mutable(lexical.rstrip("/") + "/" + name)
        size = self.camera.fs.write(target, data)
        self._durable.save(target)
        return target, size

    def delete(self, path: str) -> None:
        if not path:
            raise InvalidInput("path is required")
        target = self._view.check_mutable(path)
        self.camera.fs.remove(target)
        self._durable.drop(target)

    def batch_delete(self, paths: list[str]) -> BatchDeleteResult:
        deleted: list[str] = []
        failed: list[tuple[str, str]] = []
        for path in paths:
            try:
                self.delete(path)
                deleted.append(path)
            except DomainError as err:
                failed.append((path, err.message))
        return BatchDeleteResult(tuple(deleted), tuple(failed))

    def mkdir(self, path: str) -> None:
        if not path:
            raise InvalidInput("path is required")
        target = self._view.check_mutable(path)
        self.camera.fs.mkdir(target)
        self._durable.save(target)

    def rename(self, old_path: str, new_path: str) -> None:
        if not old_path or not new_path:
            raise InvalidInput("old_path and new_path are required")
        view = self._view
        old, new = view.check_mutable(old_path), view.check_mutable(new_path)
        self.camera.fs.rename(old, new)
        self._durable.drop(old)
        self._durable.save(new)

    def collect(self, paths: list[str]) -> list[FileData]:
        out: list[FileData] = []
        for path in paths:
            lexical = self._view.check(path)
            base = lexical.rsplit("/", 1)[0]
            for canonical, node in self.camera.fs.walk_files(lexical):
                name = lexical + canonical.removeprefix(self.camera.fs.canonical(lexical))
                out.append(FileData(name, name.removeprefix(base + "/"), node.read()))
        return out


class TwinGatewayLogs(CameraArea):
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        super().__init__(world, camera_id)
        self._clock = clock

    def services(self) -> list[tuple[str, str]]:
        return [(s, SERVICE_NAMES[s]) for s in SERVICES]

    def files(self) -> list[LogFile]:
        return [
            LogFile(path, path.rsplit("/", 1)[-1], size, mtime, service)
            for path, size, mtime, service in self.camera.logs.log_files()
        ]

    def content(self, kind: str, target: str, lines: int) -> tuple[int, str]:
        return self.camera.logs.tail(kind, target, lines)

    def download(self, kind: str, target: str) -> FileData:
        body = "\n".join(self.camera.logs.lines(kind, target)) + "\n"
        name = f"{target}.log" if kind == "service" else target.rsplit("/", 1)[-1]
        return FileData(target, name, body.encode())

    def follow(self, kind: str, target: str) -> LogFollower:
        return self.camera.logs.follow(kind, target, self._clock.wait)

    def debug_services(self) -> list[tuple[str, str]]:
        return [(s, SERVICE_NAMES[s]) for s in SERVICES]

    def debug_files(self) -> list[LogFile]:
        return self.files()

    def debug_export(self, services: list[str], files: list[str], lines: int) -> list[FileData]:
        lines = lines or DEBUG_DEFAULT_LINES
        if not 1 <= lines <= DEBUG_MAX_LINES:
            raise InvalidInput(f"lines must be between 1 and {DEBUG_MAX_LINES}")
        if not services and not files:
            services = list(SERVICES)
        out = []
        for service in services:
            if service not in SERVICES:
                raise InvalidInput(f"unknown service: {service}")
            _, text = self.camera.logs.tail("service", service, lines)
            out.append(FileData(service, f"journal/{service}.log", (text + "\n").encode()))
        for path in files:
            text = "\n".join(self.camera.logs.lines("file", path)[-lines:])
            out.append(FileData(path, "files/" + path.rsplit("/", 1)[-1], (text + "\n").encode()))
        return out


class TwinGatewayShell(CameraArea):
    def ssh_config(self) -> dict[str, str]:
        return shell.ssh_config(self.camera)

    def set_ssh_config(self, changes: dict[str, str], restart: bool) -> None:
        camera = self.camera
        shell.set_ssh_config(camera, changes, restart)
        camera.apps.durable.file_written(shell.SSHD_CONFIG)

    def ssh_status(self) -> str:
        return "active" if self.camera.powered else "unknown"

    def ssh_logs(self) -> list[str]:
        return shell.ssh_logs(self.camera)

    def open_terminal(self) -> TerminalSession:
        return shell.Terminal(self.camera)


class TwinGatewayUpgrade(CameraArea):
    def ota_detect(self) -> tuple[bool, str, str]:
        return False, "", ""

    def ota_parse(self, filename: str, data: bytes) -> FirmwareInfo:
        return self.camera.ota.parse(filename, data)

    def ota_install(self, filename: str, data: bytes) -> dict[str, Any]:
        return self.camera.ota.install(filename, data)

    def ota_install_from_path(self, path: str) -> dict[str, Any]:
        return self.camera.ota.install_from_path(path)

    def os_upload(self, filename: str, data: bytes, sha256: str) -> dict[str, Any]:
        return self.camera.os_upgrade.upload(filename, data, sha256)

    def os_validate(self, job_id: str, sha256: str, allow_downgrade: bool) -> dict[str, Any]:
        return self.camera.os_upgrade.validate(job_id, sha256, allow_downgrade)

    def os_install(self, job_id: str, strategy: str, update_mode: str) -> dict[str, Any]:
        return self.camera.os_upgrade.install(job_id, strategy, update_mode)

    def os_reboot(self, job_id: str) -> dict[str, Any]:
        return self.camera.os_upgrade.reboot(job_id)

    def os_cancel(self, job_id: str) -> dict[str, Any]:
        return self.camera.os_upgrade.cancel(job_id)

    def os_delete_package(self, job_id: str) -> dict[str, Any]:
        return self.camera.os_upgrade.delete_package(job_id)
