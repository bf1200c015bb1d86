"""The camera's AI runtime: model files on the data partition, the accelerator's memory as a
``simpy.Container``, and inference subscriptions of running apps.

- Upload stores a ``.hef`` under ``/data/aipc/models`` (charged to the data partition; the device
  wants 100 MB free for model storage). Delete removes the file and gives the bytes back.
- Load charges the model's estimated memory on the accelerator; unload gives it back and is
  refused while an app uses the model. Each sets the model's desired state (``loaded`` or
  ``unloaded``): a reboot empties the accelerator, and the models whose desired state is ``loaded``
  are loaded again when the device is up (``reload_desired``).
- An app's inference subscription names a model and a stream; a name the device does not know is
  ``NOT_FOUND``. Without the camera service there are no frames: detections stay at zero
  (``stop_camera_service`` provokes it; killing the ``camera-daemon`` process does the same).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import simpy

from hardware.ports.errors import DomainError, InternalError, InvalidInput, NotFound, StorageFull
from hardware.ports.gateway_ai import AiStats, ModelInfo, ModelStats, ModelUpload, ParsedModel
from hardware.ports.gateway_monitor import MachineFigures
from twin.camera import model_blobs
from twin.camera.durable import Durable, NotDurable
from twin.camera.model_records import MODEL_DIR, MODEL_TYPES, Model, check_format, upload_path
from twin.camera.stats import NPU_MEMORY_BYTES, RUNTIME_RESIDENT_BYTES, accelerator_stats
from twin.camera.storage import DATA, remove_file, write_file
from twin.camera.video.stream import DEFAULT_STREAMS

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.power import Power
    from twin.camera.storage import Storage
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

MODEL_STORAGE_MIN_FREE = 100 * 1024 * 1024
INFERENCE_FPS = 15.0
LATENCY_US = 8200.0


@dataclass
class Subscription:
    app_id: str
    model_id: str
    stream_id: str
    since: float


class AiRuntime:
    """The AI port: a change made through it is written to the durable platform (``durable``,
    wired by the camera)."""

    def __init__(
        self, world: Engine, camera_id: str, clock: DeviceClock, power: Power, storage: Storage, fs: VirtualFS
    ) -> None:
        self.world = world
        self.camera_id = camera_id
        self.clock, self.power, self.storage, self.fs = clock, power, storage, fs
        self.model_users: Callable[[str, str], set[str]] = lambda model_id, name: set()
        """Apps whose manifest names a model (by id and name); the app manager answers."""
        self.machine: Callable[[], MachineFigures] | None = None
        """The figures of the machine the runtime runs on (the monitor's; wired by the camera): the
        host part of ``stats``."""
        self.models: dict[str, Model] = {}
        self.memory = simpy.Container(self.world.env, capacity=NPU_MEMORY_BYTES, init=RUNTIME_RESIDENT_BYTES)
        self.subscriptions: dict[str, Subscription] = {}
        self.camera_service_running = True
        self._scanned = False
        self.durable: Durable = NotDurable()

    # Camera service ------------------------------------------------------------------------
    def stop_camera_service(self) -> None:
        """The camera daemon goes down: no frames, apps fall back to simulation mode."""
        self.camera_service_running = False

    def start_camera_service(self) -> None:
        self.camera_service_running = True

    def power_cycle(self) -> None:
        """A reboot: the accelerator forgets every loaded model; the camera daemon starts again."""
        for model in self.models.values():
            self._release(model)
            model.users.clear()
        self.subscriptions.clear()
        self.camera_service_running = True

    def stream_names(self) -> tuple[str, ...]:
        return tuple(c.stream_id for c in DEFAULT_STREAMS)

    # Models --------------------------------------------------------------------------------
    def _ensure_scanned(self) -> None:
        """Models on disk at boot (the stock model) are registered on first use."""
        if not self._scanned:
            self._scanned = True
            self._scan()

    def _find(self, model_id: str) -> Model | None:
        self._ensure_scanned()
        by_name = (m for m in self.models.values() if m.name == model_id)
        return self.models.get(model_id) or next(by_name, None)

    def _model(self, model_id: str) -> Model:
        model = self._find(model_id)
        if model is None:
            raise NotFound(f"Model not found: {model_id}", resource="model")
        return model

    def list(self) -> tuple[ModelInfo, ...]:
        self._ensure_scanned()
        return tuple(m.info() for m in sorted(self.models.values(), key=lambda m: m.model_id))

    def get(self, model_id: str) -> ModelInfo:
        return self._model(model_id).info()

    def upload(self, upload: ModelUpload) -> ModelInfo:
        check_format(upload.filename)
        stem = PurePosixPath(upload.filename).stem
        model_id = upload.model_id or stem
        path = upload_path(self.fs, model_id)
        if model_id in self.models:
            self._delete(model_id)
        self.check_room(len(upload.data))
        write_file(self.fs, path, upload.data)
        self.models[model_id] = Model(
            model_id=model_id,
            name=stem,
            model_path=path,
            file_size=len(upload.data),
            file_hash=hashlib.sha256(upload.data).hexdigest(),
            model_type=upload.model_type,
            variant=upload.variant,
            threshold=upload.threshold,
            max_detections=upload.max_detections,
        )
        self.durable.files.save(path)
        self.durable.save()
        return self.get(model_id)

    def parse(self, filename: str, data: bytes) -> ParsedModel:
        parsed = model_blobs.parse(self, filename, data)
        self.durable.files.save(parsed.file_path)
        return parsed

    def register_parsed(self, model_id: str, file_hash: str, fields: dict[str, object]) -> ModelInfo:
        info = model_blobs.register(self, model_id, file_hash, fields)
        self.durable.save()
        return info

    def check_room(self, size: int) -> None:
        """A model file of ``size`` bytes must leave :data:`MODEL_STORAGE_MIN_FREE` free."""
        if self.storage.free_bytes(DATA) - size < MODEL_STORAGE_MIN_FREE:
            raise StorageFull(
                "insufficient storage for model: at least 100 MB must stay free", resource="model"
            )

    def register(self, model_id: str, model_path: str, fields: dict[str, object]) -> ModelInfo:
        if not model_id or not model_path:
            raise InvalidInput("model_id and model_path are required")
        if not model_path.startswith("/"):
            raise InvalidInput("model_path must be absolute", resource="parameter")
        check_format(model_path)
        existing = next((m for m in self.models.values() if m.model_path == model_path), None)
        if existing is None:
            raise NotFound(f"model file not found: {model_path}", resource="file")
        model = replace(existing, model_id=model_id, source="dynamic", users=set())
        for key in ("model_type", "variant"):
            if isinstance(fields.get(key), str):
                setattr(model, key, fields[key])
        self.models[model_id] = model
        self.durable.save()
        return self.get(model_id)

    def scan(self) -> dict[str, int]:
        """Register every ``.hef`` under the model directory that the registry does not know yet
        (a file copied there through the files API): ``{scanned, added, skipped}`` (``SeedDiskModels``)."""
        self._ensure_scanned()
        added = len(self._scan())
        scanned = sum(1 for m in self.models.values() if m.model_path.startswith(MODEL_DIR + "/"))
        self.durable.save()
        return {"scanned": scanned, "added": added, "skipped": scanned - added}

    def _scan(self) -> tuple[ModelInfo, ...]:
        fs = self.fs
        if not fs.exists(MODEL_DIR):
            return ()
        known = {m.model_path for m in self.models.values()}
        found = []
        for name, node in fs.listdir(MODEL_DIR):
            path = f"{MODEL_DIR}/{name}"
            if not name.lower().endswith(".hef") or path in known or getattr(node, "kind", "") != "-":
                continue
            stem = name[: -len(".hef")]
            size = fs.size_of(node)
            digest = hashlib.sha256(f"{path}/{size}".encode()).hexdigest()
            self.models[stem] = Model(stem, stem, path, size, digest, model_type="detection")
            found.append(self.get(stem))
        return tuple(found)

    def load(self, model_id: str) -> ModelInfo:
        info = self.load_model(model_id)
        self.durable.save()
        return info

    def load_model(self, model_id: str) -> ModelInfo:
        """Put the model on the accelerator (its desired state ``loaded``), as the device does on
        request and again after a reboot."""
        model = self._model(model_id)
        if model.loaded_at is not None:
            raise InvalidInput("Model is already loaded")
        need = model.estimated_memory()
        free = self.memory.capacity - self.memory.level
        if need > free:
            raise InternalError(
                f"Failed to load model: accelerator memory exhausted ({need} bytes needed, {free} free)",
                resource="model_load",
            )
        self.memory.put(need)
        model.memory = need
        model.loaded_at = self.clock.now()
        model.desired = True
        return self.get(model.model_id)

    def reload_desired(self) -> None:
        """The device is up: load again the models whose desired state is ``loaded`` (one the
        accelerator has no room for stays uploaded)."""
        for model in list(self.models.values()):
            if model.desired and model.loaded_at is None:
                try:
                    self.load_model(model.model_id)
                except DomainError:
                    continue

    def unload(self, model_id: str) -> ModelInfo:
        model = self._model(model_id)
        if model.loaded_at is None:
            raise InvalidInput("Model is not loaded")
        if model.users:
            raise InternalError(
                f"model is used by apps: {', '.join(sorted(model.users))}", resource="operation"
            )
        self._release(model)
        model.desired = False
        self.durable.save()
        return self.get(model.model_id)

    def _release(self, model: Model) -> None:
        if model.loaded_at is not None and model.memory:
            self.memory.get(model.memory)
        model.memory = 0
        model.loaded_at = None

    def delete(self, model_id: str) -> tuple[str, ...]:
        path = self._model(model_id).model_path
        affected = self._delete(model_id)
        if not self.fs.exists(path):
            self.durable.files.drop(path)
        self.durable.save()
        return affected

    def _delete(self, model_id: str) -> tuple[str, ...]:
        """Unload, remove the file, give the bytes back; running apps lose their subscription."""
        model = self._model(model_id)
        affected = tuple(sorted(self.apps_of(model.model_id)))
        for app_id in affected:
            self.subscriptions.pop(app_id, None)
        model.users.clear()
        self._release(model)
        del self.models[model.model_id]
        if not any(m.model_path == model.model_path for m in self.models.values()):
            remove_file(self.fs, model.model_path)
        return affected

    def model_apps(self, model_id: str) -> tuple[str, ...]:
        return tuple(sorted(self.apps_of(model_id)))

    def apps_of(self, model_id: str) -> set[str]:
        """Apps whose manifest names the model, installed or running (none for an unknown id)."""
        model = self._find(model_id)
        if model is None:
            return self.model_users(model_id, model_id)
        return self.model_users(model.model_id, model.name) | model.users

    # Inference -----------------------------------------------------------------------------
    def subscribe(self, app_id: str, model_name: str, stream_id: str) -> Subscription:
        """An app asks for inference results of ``model_name`` on ``stream_id``."""
        model = self._model(model_name)
        if stream_id not in self.stream_names():
            raise NotFound(f"stream not found: {stream_id}", resource="stream")
        if model.loaded_at is None:
            self.load(model.model_id)
        model.users.add(app_id)
        sub = Subscription(app_id, model.model_id, stream_id, self.world.env.now)
        self.subscriptions[app_id] = sub
        return sub

    def unsubscribe(self, app_id: str) -> None:
        sub = self.subscriptions.pop(app_id, None)
        if sub is not None and sub.model_id in self.models:
            self.models[sub.model_id].users.discard(app_id)

    def detections(self, app_id: str) -> int:
        """Detections in the app's latest frame: zero without a video source."""
        sub = self.subscriptions.get(app_id)
        if sub is None or not self.camera_service_running:
            return 0
        self.models[sub.model_id].inferences += int(INFERENCE_FPS)
        rng = self.world.streams.get(f"{self.camera_id}/ai/{app_id}")
        return int(rng.poisson(2.5))

    # Figures -------------------------------------------------------------------------------
    def used_memory(self) -> int:
        return int(self.memory.level)

    def utilization(self) -> float:
        """Fraction of the accelerator busy: a share per loaded model with subscribers."""
        active = sum(1 for m in self.models.values() if m.loaded_at is not None and m.users)
        return min(
            1.0, 0.04 * sum(1 for m in self.models.values() if m.loaded_at is not None) + 0.18 * active
        )

    def stats(self) -> AiStats:
        base = accelerator_stats(self.world.seed, self.camera_id, self.world.env.now, self.power.uptime())
        rows = []
        for m in sorted(self.models.values(), key=lambda m: m.model_id):
            if m.loaded_at is None:
                continue
            qps = INFERENCE_FPS * len(m.users) if self.camera_service_running else 0.0
            rows.append(ModelStats(m.model_id, m.inferences, 0, LATENCY_US if qps else 0.0, qps, 0, qps))
        util = max(base.device_utilization / 100.0, self.utilization())
        cpu, ram_total, ram_used = 0.0, 0, 0
        if self.machine is not None:
            figures = self.machine()
            memory = figures.memory()
            cpu, ram_total, ram_used = figures.cpu_usage()[0], memory.total // 1024, memory.used // 1024
        return AiStats(
            model_stats=tuple(rows),
            device_utilization=round(util, 4),
            device_temperature=base.device_temperature,
            total_memory_bytes=base.total_memory_bytes,
            used_memory_bytes=self.used_memory(),
            cpu_utilization=cpu,
            ram_total_kib=ram_total,
            ram_used_kib=ram_used,
        )

    def capabilities(self) -> dict[str, object]:
        fields = [
            {
                "key": "threshold",
                "type": "number",
                "required": False,
                "default": 0.5,
                "min": 0,
                "max": 1,
                "step": 0.05,
            },
            {
                "key": "max_detections",
                "type": "number",
                "required": False,
                "default": 100,
                "min": 1,
                "max": 1000,
            },
        ]
        types = []
        for type_id, label, aliases in MODEL_TYPES:
            row: dict[str, object] = {"id": type_id, "label": label, "fields": fields}
            if aliases:
                row["aliases"] = list(aliases)
            types.append(row)
        return {
            "formats": [{"extension": ".hef", "mime_type": "application/octet-stream", "label": "Hailo HEF"}],
            "model_types": types,
        }
