"""What the edge gateway API needs for apps (and the app store), containers, images and the app
event bus: the area Protocols and their frozen value types. Starting and stopping, which take
device time, are :class:`GatewayLifecycle`'s.

Sizes are bytes, times are unix seconds on the device clock unless a field says otherwise.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


# Apps and containers ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AppInfo:
    id: str
    name: str
    version: str
    state: str
    """``installed``, ``running``, ``stopped`` or ``failed``."""
    installed_at: int
    started_at: int
    stopped_at: int
    manifest_path: str
    instance_path: str
    container_id: str = ""
    pid: int = 0
    restart_count: int = 0
    permissions: dict[str, object] | None = None
    web_url: str = ""
    description: str = ""
    image: str = ""


@dataclass(frozen=True, slots=True)
class InstallTask:
    task_id: str
    phase: str
    """``validating``, ``pulling``, ``registering``, ``complete`` or ``error``."""
    percent: float
    message: str
    app_id: str
    error: str


@dataclass(frozen=True, slots=True)
class StagedManifest:
    """An uploaded ``app.yaml``: where it was kept and its ``metadata``."""

    path: str
    app_id: str
    name: str
    version: str
    description: str


@dataclass(frozen=True, slots=True)
class InstallResult:
    message: str
    app_id: str
    updated: bool


@dataclass(frozen=True, slots=True)
class AppStats:
    app_id: str
    uptime_seconds: int
    cpu_usage_percent: float
    memory_usage_bytes: int
    memory_limit_bytes: int

    @property
    def memory_percent(self) -> float:
        return (
            round(100.0 * self.memory_usage_bytes / self.memory_limit_bytes, 2)
            if self.memory_limit_bytes
            else 0.0
        )


@dataclass(frozen=True, slots=True)
class LogLine:
    timestamp_ns: int
    level: str
    message: str


@dataclass(frozen=True, slots=True)
class ContainerInfo:
    id: str
    name: str
    image: str
    state: str
    """containerd's: ``running``, ``created``, ``stopped``, ``paused``, ``pausing``, ``unknown``."""
    created_at: float
    """Unix seconds on the device clock."""
    pid: int = 0
    labels: dict[str, str] | None = None
    cpu_percent: float = 0.0
    memory_usage: int = 0


@dataclass(frozen=True, slots=True)
class ContainerStats:
    cpu_usage: int
    cpu_percent: float
    memory_usage: int
    memory_limit: int
    network_rx: int
    network_tx: int
    block_read: int
    block_write: int
    pids: int

    @property
    def memory_percent(self) -> float:
        return round(100.0 * self.memory_usage / self.memory_limit, 2) if self.memory_limit else 0.0


@dataclass(frozen=True, slots=True)
class ImageInfo:
    id: str
    name: str
    tags: tuple[str, ...]
    size: int
    created_at: float
    in_use: bool


# Event bus ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BusEvent:
    topic: str
    payload: str
    """JSON text, as the device relays it."""
    payload_type: str
    timestamp_ns: int
    source: str
    event_id: str


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic: str
    subscriber_count: int
    total_messages: int = 0
    last_message_ts: int = 0


class BusSubscription(Protocol):
    """What a stream client reads: ``await next()`` yields events; ``None`` once the bus dropped it."""

    dropped: int

    async def next(self) -> BusEvent | None: ...

    def close(self) -> None: ...


class LineFeed(Protocol):
    """Lines as they are written: ``await next()`` yields a line; ``None`` once the source ended."""

    async def next(self) -> str | None: ...

    def close(self) -> None: ...


class ShellSession(Protocol):
    """A simulated shell: text in, text out. ``closed`` once the user typed ``exit``."""

    closed: bool

    def banner(self) -> str: ...

    def feed(self, line: str) -> str: ...


# Areas -------------------------------------------------------------------------------------------
@runtime_checkable
class GatewayApps(Protocol):
    def list(self) -> tuple[AppInfo, ...]: ...

    def get(self, app_id: str) -> AppInfo: ...

    def upload_image(self, filename: str, data: bytes) -> str:
        """Stage an image archive (.tar, .tar.gz, .tgz); returns its path on the device."""

    def upload_manifest(self, filename: str, data: bytes) -> StagedManifest:
        """Stage an ``app.yaml``."""

    def install_package(self, manifest_path: str, image_path: str, force: bool) -> str:
        """Start an install task; returns its id. Progress through :meth:`install_progress`."""

    def install_progress(self, task_id: str) -> InstallTask: ...

    def install(self, manifest_path: str, image_path: str, force: bool) -> InstallResult: ...

    def wizard(self, app_id: str, name: str, image: str, config: dict[str, object]) -> InstallResult: ...

    def uninstall(self, app_id: str, keep_logs: bool) -> None: ...

    def logs(self, app_id: str, max_lines: int) -> tuple[LogLine, ...]: ...

    def stats(self, app_id: str) -> AppStats: ...

    def permissions(self, app_id: str) -> dict[str, object]: ...

    @property
    def store(self) -> GatewayAppStore:
        """The app store: a catalogue whose installs run through the pipeline above."""


@runtime_checkable
class GatewayContainers(Protocol):
    def list(self) -> tuple[ContainerInfo, ...]: ...

    def get(self, container_id: str) -> ContainerInfo: ...

    def stats(self, container_id: str) -> ContainerStats: ...

    def logs(self, container_id: str, tail: int) -> tuple[str, ...]: ...

    def follow(self, container_id: str) -> LineFeed:
        """New log lines as they are written."""

    def remove(self, container_id: str) -> None: ...

    def shell(self, container_id: str) -> ShellSession: ...

    def image_infos(self) -> tuple[ImageInfo, ...]: ...

    def pull(self, image: str) -> None:
        """Always refused on this device (4003)."""

    def delete_image(self, image: str) -> None: ...


@runtime_checkable
class GatewayEvents(Protocol):
    def topics(self) -> tuple[TopicInfo, ...]: ...

    def publish(self, topic: str, payload: dict[str, object]) -> str:
        """Returns the event id. ``InvalidInput`` for a topic outside ``app/<app_id>/<event>``,
        ``Unavailable`` while the bus is not running."""

    def stream(self) -> BusSubscription:
        """Everything published, as the device's relay (one upstream ``*`` subscription)."""


@runtime_checkable
class GatewayAppStore(Protocol):
    def apps(
        self, category: str, search: str, featured: bool | None, page: int, page_size: int
    ) -> dict[str, object]: ...

    def app(self, key: str) -> dict[str, object]: ...

    def categories(self) -> builtins.list[dict[str, object]]: ...

    def tags(self) -> builtins.list[dict[str, object]]: ...

    def install(self, key: str, version: str, config: dict[str, object]) -> dict[str, object]:
        """Fetch the version's image, generate its manifest, start an install task."""

    # Install records -------------------------------------------------------------------------
    def list(self) -> builtins.list[dict[str, object]]: ...

    def view(self, app_id: str) -> dict[str, object]: ...

    def record(self, fields: dict[str, object]) -> dict[str, object]: ...

    def update(self, app_id: str, fields: dict[str, object]) -> dict[str, object]: ...

    def delete(self, app_id: str) -> None: ...


@runtime_checkable
class GatewayLifecycle(Protocol):
    """Starting and stopping apps and containers: each call waits on the world clock for the device
    to finish (in step mode, until time is advanced)."""

    async def start_app(self, app_id: str) -> None:
        """Waits at most the device's 10-s start deadline (``InternalError`` with the gRPC text)."""

    async def stop_app(self, app_id: str, timeout: int) -> None: ...

    async def restart_app(self, app_id: str, timeout: int) -> None: ...

    async def start_container(self, container_id: str) -> None:
        """An app's container starts as its app (the app's state follows)."""

    async def stop_container(self, container_id: str) -> None: ...

    async def restart_container(self, container_id: str) -> None: ...
