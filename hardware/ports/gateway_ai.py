"""What the edge gateway API needs of the camera's AI runtime: the models on the device, their
place on the accelerator, and its figures.

Sizes are bytes, times are unix seconds on the device clock unless a field says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


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


@runtime_checkable
class GatewayAi(Protocol):
    def capabilities(self) -> dict[str, object]: ...

    def list(self) -> tuple[ModelInfo, ...]: ...

    def get(self, model_id: str) -> ModelInfo:
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
