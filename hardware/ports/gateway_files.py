"""The edge gateway's file, log, shell and upgrade areas: what the API needs from one camera.

Paths are absolute paths *on the device*. A backend confines the files area to its allowed roots
and refuses escapes (``..``, links that leave the roots, relative paths) with ``Forbidden``
(``resource="path"``); it never touches the file system of the machine it runs on on a client's
behalf. Upgrades are timed state machines: a call starts or moves a job and returns at once, and
the public status methods report where it is.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hardware.ports.types import OtaStatus


# Files ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    path: str
    is_dir: bool
    size: int
    mod_time: float
    """Unix seconds on the device clock."""
    mode: str
    """``ls -l`` style: ``-rw-r--r--``, ``drwxr-xr-x``, ``lrwxrwxrwx``."""


@dataclass(frozen=True, slots=True)
class FileData:
    path: str
    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class BatchDeleteResult:
    deleted: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    """(path, reason) for every path that could not be deleted."""


@runtime_checkable
class GatewayFiles(Protocol):
    default_dir: str

    def list(self, path: str) -> list[FileEntry]:
        """A directory's entries, directories first then by name. ``NotFound(resource="file")``."""

    def read(self, path: str, max_bytes: int = 0) -> FileData:
        """A regular file's bytes; ``InvalidInput`` for a directory or, with ``max_bytes``, a larger file."""

    def write(self, path: str, content: bytes) -> int:
        """Create or replace a file (its directory must exist); returns the new size."""

    def upload(self, directory: str, filename: str, data: bytes) -> tuple[str, int]:
        """Store ``data`` as ``directory/filename``; returns (path, size). ``StorageFull`` if no room."""

    def delete(self, path: str) -> None:
        """A file, or a directory with everything under it; a root itself is ``Forbidden``."""

    def batch_delete(self, paths: builtins.list[str]) -> BatchDeleteResult: ...

    def mkdir(self, path: str) -> None:
        """Create a directory and its missing parents (``mkdir -p``)."""

    def rename(self, old_path: str, new_path: str) -> None: ...

    def collect(self, paths: builtins.list[str]) -> builtins.list[FileData]:
        """Every regular file at or under ``paths``, named relative to its parent, for an archive."""


# Logs -------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LogFile:
    path: str
    name: str
    size: int
    modified_time: float
    service: str = ""


@runtime_checkable
class LogFollower(Protocol):
    """New lines of one log as they are written, in world time."""

    async def next_lines(self) -> list[str]:
        """Wait until at least one new line exists; ``Unavailable`` once the device went down."""

    def close(self) -> None: ...


@runtime_checkable
class GatewayLogs(Protocol):
    def services(self) -> list[tuple[str, str]]:
        """(id, display name) of the services whose journal can be read."""

    def files(self) -> list[LogFile]:
        """``*.log`` files under the device's log directories."""

    def content(self, kind: str, target: str, lines: int) -> tuple[int, str]:
        """The last ``lines`` lines (0: the default 500; at most 10000) of a service journal
        (``kind="service"``) or a log file (``kind="file"``, under a log directory), and that count."""

    def download(self, kind: str, target: str) -> FileData: ...

    def debug_services(self) -> list[tuple[str, str]]:
        """(id, display name) of the systemd services a debug export can include."""

    def debug_files(self) -> list[LogFile]: ...

    def debug_export(self, services: list[str], files: list[str], lines: int) -> list[FileData]:
        """The members of a debug-log archive: one journal per service, then the files."""


@runtime_checkable
class GatewayLogStream(Protocol):
    def follow(self, kind: str, target: str) -> LogFollower:
        """New lines of a service journal or a log file (``kind`` and ``target`` as in
        :meth:`GatewayLogs.content`) as they are written."""


# Shell: SSH settings and the web terminal -------------------------------------------------------
@runtime_checkable
class TerminalSession(Protocol):
    """A simulated login shell over the device's virtual file system (never a host process)."""

    def banner(self) -> str: ...

    def login(self, username: str, password: str) -> bool: ...

    def prompt(self) -> str: ...

    def run(self, line: str) -> str:
        """Run one command line; returns its output (``\\r\\n`` line ends)."""

    @property
    def closed(self) -> bool:
        """True after ``exit`` or once the device went down."""


@runtime_checkable
class GatewayShell(Protocol):
    def ssh_config(self) -> dict[str, str]:
        """The ``sshd_config`` keywords the device reports, as text."""

    def set_ssh_config(self, changes: dict[str, str], restart: bool) -> None:
        """Keys as in :meth:`ssh_config`; ``InvalidInput(resource="parameter")`` for a bad value."""

    def ssh_status(self) -> str:
        """``active``, ``inactive`` or ``unknown``."""

    def ssh_logs(self) -> list[str]: ...

    def open_terminal(self) -> TerminalSession: ...


# Upgrades ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FirmwareInfo:
    current_version: str
    target_version: str
    build_date: str
    git_commit: str
    firmware_path: str
    firmware_size: int


@runtime_checkable
class GatewayOta(Protocol):
    """Firmware (OTA) updates."""

    def detect(self) -> tuple[bool, str, str]:
        """(update_available, version, changelog)."""

    def parse(self, filename: str, data: bytes) -> FirmwareInfo: ...

    def install(self, filename: str, data: bytes) -> dict[str, Any]:
        """Start a firmware install from an upload; ``Conflict(resource="upgrade")`` while busy."""

    def install_from_path(self, path: str) -> dict[str, Any]:
        """Start a firmware install from an absolute path on the device."""

    def report(self) -> OtaStatus:
        """The last install's status (the zero status with the current boot id if none ran)."""


@runtime_checkable
class GatewayOsUpgrade(Protocol):
    """OS upgrades (``.swu`` packages), one job at a time."""

    def upload(self, filename: str, data: bytes, sha256: str) -> dict[str, Any]:
        """Store an OS package as a new job; ``Conflict`` while another job is active."""

    def validate(self, job_id: str, sha256: str, allow_downgrade: bool) -> dict[str, Any]: ...

    def install(self, job_id: str, strategy: str, update_mode: str) -> dict[str, Any]: ...

    def reboot(self, job_id: str) -> dict[str, Any]: ...

    def cancel(self, job_id: str) -> dict[str, Any]: ...

    def delete_package(self, job_id: str) -> dict[str, Any]: ...

    def report(self) -> dict[str, Any] | None:
        """The current job, or None when there is none."""
