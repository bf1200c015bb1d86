"""A model in the AI runtime's registry: its file, its place on the accelerator, its desired state,
and the model types platform-api knows."""

from __future__ import annotations

from dataclasses import dataclass, field

from hardware.ports.errors import InvalidInput
from hardware.ports.gateway_ai import ModelInfo
from twin.camera.vfs import Confined, VirtualFS

MODEL_DIR = "/data/aipc/models"
MEMORY_OVERHEAD = 24 * 1024 * 1024
MEMORY_FACTOR = 1.5
"""Accelerator memory of a loaded model: its file size times this + a fixed context overhead."""

MODEL_TYPES = (
    ("detection", "Object detection", ("yolo",)),
    ("classification", "Classification", ()),
    ("segmentation", "Segmentation", ()),
    ("keypoint", "Keypoints", ("landmarks", "landmark")),
    ("clip", "CLIP", ()),
    ("embedding", "Embedding", ()),
    ("ocr_detection", "OCR detection", ()),
    ("ocr_recognition", "OCR recognition", ()),
    ("depth", "Depth estimation", ()),
    ("genai", "Generative AI", ()),
)


@dataclass
class Model:
    model_id: str
    name: str
    model_path: str
    file_size: int
    file_hash: str
    model_type: str = ""
    variant: str = ""
    threshold: float = 0.0
    max_detections: int = 0
    source: str = "disk"
    owner_app_id: str = ""
    loaded_at: float | None = None
    desired: bool = False
    """The desired state: True once loaded, False once unloaded; a reboot keeps it."""
    memory: int = 0
    inferences: int = 0
    users: set[str] = field(default_factory=set)

    def info(self) -> ModelInfo:
        return ModelInfo(
            model_id=self.model_id,
            name=self.name,
            model_path=self.model_path,
            status="loaded" if self.loaded_at is not None else "uploaded",
            source=self.source,
            desired_state="loaded" if self.desired else "unloaded",
            owner_app_id=self.owner_app_id,
            used_by_apps=tuple(sorted(self.users)),
            load_timestamp=int(self.loaded_at) if self.loaded_at is not None else 0,
            estimated_memory=self.estimated_memory(),
            model_type=self.model_type,
            variant=self.variant,
            threshold=self.threshold,
            max_detections=self.max_detections,
            file_size=self.file_size,
            file_hash=self.file_hash,
            network_name=self.name,
            input_width=640,
            input_height=640,
        )

    def estimated_memory(self) -> int:
        return int(self.file_size * MEMORY_FACTOR) + MEMORY_OVERHEAD


def upload_path(fs: VirtualFS, model_id: str) -> str:
    """Where an uploaded model is kept, ``<models>/<model_id>.hef``: an id that leads out of the
    models folder (``../``, encoded or not, or through a link) is refused as the files API refuses
    such a path (``Forbidden``, 403)."""
    return Confined(fs, (MODEL_DIR,)).check_mutable(f"{MODEL_DIR}/{model_id}.hef")


def check_format(filename: str) -> None:
    if not filename.lower().endswith(".hef"):
        raise InvalidInput("Invalid model format: only .hef files are accepted", resource="model_format")
