"""The automation backend's extensions: installed manifests, their commands, assets and push streams,
and the component marketplace.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ExtensionCommand:
    id: str
    display_name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_fields: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ExtensionMetric:
    name: str
    display_name: str
    data_type: str
    unit: str = ""


@dataclass(frozen=True, slots=True)
class StreamCapability:
    direction: str
    """``upload``, ``download`` or ``bidirectional``."""
    mode: str
    """``stateless``, ``stateful`` or ``push``."""
    supported_data_types: tuple[str, ...]
    max_chunk_size: int
    preferred_chunk_size: int
    max_concurrent_sessions: int


@dataclass(frozen=True, slots=True)
class Extension:
    id: str
    name: str
    version: str
    description: str
    author: str
    extension_type: str
    state: str
    """``Running``, ``Stopped``, ``Error``... (the vendor's display strings)."""
    file_path: str
    loaded_at: float
    health_status: str
    enabled: bool
    commands: tuple[ExtensionCommand, ...]
    metrics: tuple[ExtensionMetric, ...]
    components: tuple[Mapping[str, Any], ...]
    assets: tuple[str, ...]
    stream: StreamCapability | None = None
    disabled_commands: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommandResult:
    extension_id: str
    command: str
    success: bool
    output: Mapping[str, Any]
    duration_ms: int


@dataclass(frozen=True, slots=True)
class SyncReport:
    scanned: int
    installed: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    """(file, reason) for every manifest that could not be installed."""


@dataclass(frozen=True, slots=True)
class PushFrame:
    """One frame of a push-mode stream session."""

    sequence: int
    data: bytes
    data_type: str
    timestamp: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


class StreamSession(Protocol):
    """A push session: frames arrive from the world; ``close`` ends it."""

    session_id: str

    @property
    def dropped(self) -> int:
        """Frames dropped because the reader fell behind."""

    async def next_frame(self) -> PushFrame: ...

    def close(self) -> None: ...


@runtime_checkable
class Extensions(Protocol):
    def list_extensions(self) -> list[Extension]: ...

    def types(self) -> list[str]: ...

    def get_extension(self, extension_id: str) -> Extension: ...

    def health(self, extension_id: str) -> Mapping[str, Any]: ...

    def command(self, extension_id: str, command: str, args: Mapping[str, Any]) -> CommandResult: ...

    def asset(self, extension_id: str, path: str) -> tuple[bytes, str]:
        """(content, media type); ``NotFound`` for anything outside the extension's own assets."""

    def upload(self, file_name: str, content: bytes) -> Extension:
        """Store an uploaded manifest in the extensions directory and install it (``InvalidInput``
        for anything but a valid ``.json`` manifest; ``Conflict`` when the id is installed)."""

    def register(self, file_name: str) -> Extension:
        """Install the manifest the extensions directory holds under ``file_name``."""

    def sync(self) -> SyncReport:
        """Scan the extensions directory and install what is new, before returning."""

    def open_stream(self, extension_id: str) -> StreamSession:
        """``InvalidInput`` with ``stream_code`` when the extension has no push stream."""

    def set_enabled(self, extension_id: str, enabled: bool) -> Extension: ...

    def uninstall(self, extension_id: str) -> None:
        """Remove an installed extension (a later sync installs it again from the directory)."""

    def sessions(self, extension_id: str) -> list[Mapping[str, Any]]:
        """Open stream sessions: ``session_id``, ``frames`` sent, ``dropped``."""

    def set_command_enabled(self, extension_id: str, command: str, enabled: bool) -> Extension:
        """A disabled command is refused (``Conflict``) until enabled again."""

    def reload(self, extension_id: str) -> Extension: ...

    def descriptor(self, extension_id: str) -> Mapping[str, Any]:
        """The installed manifest (asset names, not their contents)."""

    def set_config(self, extension_id: str, config: Mapping[str, Any]) -> Extension: ...

    def logs(self, extension_id: str, limit: int = 100) -> list[Mapping[str, Any]]:
        """Newest last: ``timestamp``, ``level``, ``message``."""

    def clear_logs(self, extension_id: str) -> int: ...

    def sync_status(self) -> Mapping[str, Any]:
        """The last directory scan: when, and what it found."""
