"""What the edge gateway API needs for storage, the AI runtime, apps, containers, images, the app
event bus and monitoring: the area Protocols and their frozen value types.

Sizes are bytes, times are unix seconds on the device clock unless a field says otherwise.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class PartitionUsage:
    """One mounted (or unmounted removable) partition as ``df`` would show it."""

    name: str
    """Symbolic name inside the twin: ``root``, ``data`` or a removable disk's name."""
    device: str
    mountpoint: str
    fstype: str
    total: int
    used: int
    is_system: bool = False
    is_removable: bool = False
    is_protected: bool = False
    label: str = ""

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)

    @property
    def usage_percent(self) -> float:
        return round(100.0 * self.used / self.total, 2) if self.total else 0.0


# AI runtime ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelInfo:
    model_id: str
    name: str
    model_path: str
    status: str
    """``uploaded`` or ``loaded``."""
    source: str = "disk"
    desired_state: str = ""
    owner_app_id: str = ""
    used_by_apps: tuple[str, ...] = ()
    load_timestamp: int = 0
    estimated_memory: int = 0
    model_type: str = ""
    variant: str = ""
    threshold: float = 0.0
    max_detections: int = 0
    file_size: int = 0
    file_hash: str = ""
    network_name: str = ""
    input_width: int = 0
    input_height: int = 0


@dataclass(frozen=True, slots=True)
class ParsedModel:
    """A ``.hef`` kept in the content-addressed store, and what hailortcli reads from it."""

    file_hash: str
    file_path: str
    file_size: int
    filename: str
    network_name: str
    input_width: int
    input_height: int
    suggested_type: str
    format: str


@dataclass(frozen=True, slots=True)
class ModelUpload:
    filename: str
    data: bytes
    model_id: str = ""
    model_type: str = ""
    variant: str = ""
    threshold: float = 0.0
    max_detections: int = 0


@dataclass(frozen=True, slots=True)
class ModelStats:
    model_id: str
    total_inferences: int
    total_errors: int
    avg_latency_us: float
    current_qps: float
    queue_depth: int
    hw_fps: float


@dataclass(frozen=True, slots=True)
class AiStats:
    model_stats: tuple[ModelStats, ...]
    device_utilization: float
    device_temperature: float
    total_memory_bytes: int
    used_memory_bytes: int
    cpu_utilization: float
    ram_total_kib: int
    ram_used_kib: int


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
class GatewayAi(Protocol):
    def capabilities(self) -> dict[str, object]: ...

    def models(self) -> tuple[ModelInfo, ...]: ...

    def model(self, model_id: str) -> ModelInfo:
        """``NotFound(resource="model")`` for an unknown id."""

    def upload(self, upload: ModelUpload) -> ModelInfo:
        """Store a ``.hef`` file; ``InvalidInput(resource="model_format")`` otherwise, ``StorageFull``
        with less than 100 MB free."""

    def parse(self, filename: str, data: bytes) -> ParsedModel:
        """Keep a ``.hef`` in the content-addressed store."""

    def register_parsed(self, model_id: str, file_hash: str, fields: dict[str, object]) -> ModelInfo:
        """Register a parsed blob by its hash, ``uploaded``; an id already known answers that model."""

    def register(self, model_id: str, model_path: str, fields: dict[str, object]) -> ModelInfo: ...

    def scan(self) -> dict[str, int]: ...  # {scanned, added, skipped}, as SeedDiskModels counts them

    def load(self, model_id: str) -> ModelInfo:
        """Onto the accelerator, charging its memory; ``InvalidInput`` if already loaded."""

    def unload(self, model_id: str) -> ModelInfo: ...

    def delete(self, model_id: str) -> tuple[str, ...]:
        """Remove the model and its file; returns the apps that used it."""

    def model_apps(self, model_id: str) -> tuple[str, ...]: ...

    def stats(self) -> AiStats: ...


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

    async def start(self, app_id: str) -> None:
        """Waits at most the device's 10-s start deadline (``InternalError`` with the gRPC text)."""

    async def stop(self, app_id: str, timeout: int) -> None: ...

    async def restart(self, app_id: str, timeout: int) -> None: ...

    def uninstall(self, app_id: str, keep_logs: bool) -> None: ...

    def logs(self, app_id: str, max_lines: int) -> tuple[LogLine, ...]: ...

    def stats(self, app_id: str) -> AppStats: ...

    def permissions(self, app_id: str) -> dict[str, object]: ...

    # The app store: a catalogue whose installs run through the pipeline above --------------------
    def store_apps(
        self, category: str, search: str, featured: bool | None, page: int, page_size: int
    ) -> dict[str, object]: ...

    def store_app(self, key: str) -> dict[str, object]: ...

    def store_categories(self) -> builtins.list[dict[str, object]]: ...

    def store_tags(self) -> builtins.list[dict[str, object]]: ...

    def store_install(self, key: str, version: str, config: dict[str, object]) -> dict[str, object]:
        """Fetch the version's image, generate its manifest, start an install task."""

    def install_records(self) -> builtins.list[dict[str, object]]: ...

    def install_record(self, app_id: str) -> dict[str, object]: ...

    def create_install_record(self, fields: dict[str, object]) -> dict[str, object]: ...

    def update_install_record(self, app_id: str, fields: dict[str, object]) -> dict[str, object]: ...

    def delete_install_record(self, app_id: str) -> None: ...


@runtime_checkable
class GatewayContainers(Protocol):
    def list(self) -> tuple[ContainerInfo, ...]: ...

    def get(self, container_id: str) -> ContainerInfo: ...

    def stats(self, container_id: str) -> ContainerStats: ...

    def logs(self, container_id: str, tail: int) -> tuple[str, ...]: ...

    def follow(self, container_id: str) -> LineFeed:
        """New log lines as they are written."""

    async def start(self, container_id: str) -> None: ...

    async def stop(self, container_id: str) -> None: ...

    async def restart(self, container_id: str) -> None: ...

    def remove(self, container_id: str) -> None: ...

    def shell(self, container_id: str) -> ShellSession: ...

    def images(self) -> tuple[ImageInfo, ...]: ...

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
class GatewayStorage(Protocol):
    def partitions(self) -> tuple[PartitionUsage, ...]: ...

    def disks(self) -> dict[str, object]:
        """``lsblk -b -J`` output."""

    def mount(self, device: str, target: str) -> None: ...

    def unmount(self, target: str) -> None: ...

    def format(self, device: str, fstype: str) -> None: ...


@runtime_checkable
class GatewayMonitor(Protocol):
    """Figures computed from what runs in the world, as plain dicts of the device's fields."""

    def summary(self) -> dict[str, object]: ...

    def cpu(self) -> dict[str, object]: ...

    def memory(self) -> dict[str, object]: ...

    def network(self) -> dict[str, object]: ...

    def snapshot(self) -> dict[str, object]: ...

    def processes(self, sort: str, limit: int, search: str) -> dict[str, object]: ...

    def process(self, pid: int) -> dict[str, object]: ...

    def kill(self, pid: int, signal: str) -> dict[str, object]: ...

    def attitude(self, rate: float) -> AsyncIterator[tuple[str, dict[str, object]]]:
        """The gyro's SSE events (``status``, ``orientation``, ``heartbeat``) paced at ``rate`` Hz."""
