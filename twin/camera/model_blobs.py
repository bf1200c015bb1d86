"""platform-api's content-addressed model store (``storage.ModelStorage``): ``POST ai/models/parse``
keeps the uploaded ``.hef`` as ``<models>/blobs/<sha256>.hef`` and answers what hailortcli read from
it; ``POST ai/models`` with that ``file_hash`` registers the blob as a model, ``uploaded`` and not
loaded (``RegisterModel``)."""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Protocol

from hardware.ports.errors import InvalidInput
from hardware.ports.gateway_ai import ModelInfo, ParsedModel
from twin.camera.model_records import MODEL_TYPES, Model, check_format
from twin.camera.storage import write_file

if TYPE_CHECKING:
    from twin.camera.vfs import VirtualFS

BLOB_DIR = "/data/aipc/models/blobs"
INPUT_SIZE = 640

_GUESSES = (
    (("ocr_det",), "ocr_detection"),
    (("ocr_rec", "recognition", "lprnet", "license_plate"), "ocr_recognition"),
    (("yolo", "det"), "detection"),
    (("cls", "class", "vit"), "classification"),
    (("seg", "linknet"), "segmentation"),
    (("pose", "keypoint", "landmark", "face"), "keypoint"),
    (("clip",), "clip"),
    (("embed",), "embedding"),
    (("depth", "scdepth"), "depth"),
    (("qwen", "genai", "vlm", "llm"), "genai"),
)


class Registry(Protocol):
    """The AI runtime's model registry, where a parsed blob is kept and registered."""

    fs: VirtualFS
    models: dict[str, Model]

    def get(self, model_id: str) -> ModelInfo: ...

    def check_room(self, size: int) -> None: ...


def guess_model_type(network_name: str) -> str:
    """``model.GuessModelType``: the first pattern the lower-cased network name contains."""
    name = network_name.lower()
    return next((kind for needles, kind in _GUESSES if any(n in name for n in needles)), "detection")


def blob_path(file_hash: str) -> str:
    return f"{BLOB_DIR}/{file_hash}.hef"


def parse(ai: Registry, filename: str, data: bytes) -> ParsedModel:
    """Keep the file in the store (once per content) and answer what hailortcli reads from it."""
    check_format(filename)
    ext = PurePosixPath(filename).suffix.lower()
    file_hash = hashlib.sha256(data).hexdigest()
    path = blob_path(file_hash)
    if not ai.fs.exists(path):
        ai.check_room(len(data))
        write_file(ai.fs, path, data)
    network = PurePosixPath(filename).stem
    return ParsedModel(
        file_hash, path, len(data), filename, network, INPUT_SIZE, INPUT_SIZE, guess_model_type(network), ext
    )


def register(ai: Registry, model_id: str, file_hash: str, fields: dict[str, object]) -> ModelInfo:
    """Register a parsed blob under ``model_id``; an id already registered answers that model."""
    path = blob_path(file_hash)
    if not ai.fs.exists(path):
        raise InvalidInput("Model file not found. Please re-parse the model first.")
    if not model_id:
        raise InvalidInput("model_id is required")
    model_type = fields.get("model_type") or ""
    if model_type:
        resolved = next((t for t, _, aliases in MODEL_TYPES if model_type in (t, *aliases)), "")
        if not resolved:
            raise InvalidInput(f"Unsupported model_type: {model_type}")
        model_type = resolved
    existing = ai.models.get(model_id)
    if existing is not None:
        return ai.get(model_id)
    given = fields.get("config")
    config: dict[str, object] = given if isinstance(given, dict) else {}
    threshold, max_det = config.get("threshold", 0.5), config.get("max_detections", 100)
    variant = fields.get("model_variant")
    ai.models[model_id] = Model(
        model_id=model_id,
        name=model_id,
        model_path=path,
        file_size=ai.fs.size_of(ai.fs.stat(path)),
        file_hash=file_hash,
        model_type=str(model_type),
        variant=variant if isinstance(variant, str) else "",
        threshold=float(threshold) if isinstance(threshold, int | float) else 0.0,
        max_detections=int(max_det) if isinstance(max_det, int | float) else 0,
        source="dynamic",
    )
    return ai.get(model_id)
