"""The twin's files, log-stream and shell areas of the gateway port, over one camera.

Each call looks the camera up in the current world, so the same object keeps working across resets
and restores.
"""

from __future__ import annotations

import builtins

from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.gateway_files import (
    BatchDeleteResult,
    FileData,
    FileEntry,
    LogFollower,
    TerminalSession,
)
from twin.camera import shell
from twin.camera.area import CameraArea
from twin.camera.fs import DurableFiles
from twin.camera.vfs import DEFAULT_DIR, Confined, Dir, File, mode_text
from twin.clock import SimClock
from twin.world import World

DIR_SIZE = 4096


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

    def batch_delete(self, paths: builtins.list[str]) -> BatchDeleteResult:
        deleted: builtins.list[str] = []
        failed: builtins.list[tuple[str, str]] = []
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

    def collect(self, paths: builtins.list[str]) -> builtins.list[FileData]:
        out: builtins.list[FileData] = []
        for path in paths:
            lexical = self._view.check(path)
            base = lexical.rsplit("/", 1)[0]
            for canonical, node in self.camera.fs.walk_files(lexical):
                name = lexical + canonical.removeprefix(self.camera.fs.canonical(lexical))
                out.append(FileData(name, name.removeprefix(base + "/"), node.read()))
        return out


class LogStream(CameraArea):
    """New lines of the camera's logs as they are written, waited for on the world clock."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        super().__init__(world, camera_id)
        self._clock = clock

    def follow(self, kind: str, target: str) -> LogFollower:
        return self.camera.logs.follow(kind, target, self._clock.wait)


class TwinGatewayShell(CameraArea):
    def ssh_config(self) -> dict[str, str]:
        return shell.ssh_config(self.camera)

    def set_ssh_config(self, changes: dict[str, str], restart: bool) -> None:
        camera = self.camera
        shell.set_ssh_config(camera, changes, restart)
        camera.apps.durable.files.save(shell.SSHD_CONFIG)

    def ssh_status(self) -> str:
        return "active" if self.camera.powered else "unknown"

    def ssh_logs(self) -> builtins.list[str]:
        return shell.ssh_logs(self.camera)

    def open_terminal(self) -> TerminalSession:
        return shell.Terminal(self.camera)
