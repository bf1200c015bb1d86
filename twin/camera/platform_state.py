"""The app platform's part of a camera snapshot: partitions' byte charges, imported images, installed
apps and their containers, models, the services' flags, device administration and store records.

Restoring rebuilds it on a fresh camera: a container that was running runs again at once (its
workload starts over, so it logs a new start); staged uploads and install tasks in flight are not
kept (a client polling one sees it gone, as after a device restart).

With a state directory the part a device keeps on disk is durable (:class:`DurablePlatform`): the
app manager's registry (``registry.json``), containerd's images and containers, platform-api's model
table with each model's desired state, and a formatted card's file system, as one store document per
camera written by every change; app manifests and uploaded model files are files of the camera's tree
(:class:`twin.camera.fs.DurableFiles`). A new twin on the same directory boots like the device after
a restart: containers exist but none runs, models whose desired state is ``loaded`` are loaded again,
and the app manager's startup recovery (``recoverAppsOnStartup``) marks the apps that were running
``stopped`` and starts every app whose manifest says ``autostart``. What lives in memory is gone: a
mount made with ``mount``, event-bus subscriptions (an app subscribes again when it starts), install
tasks. A container's log keeps its last lines as of the last change written (a stop writes it).
"""

from __future__ import annotations

import contextlib
import json
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import DomainError
from hardware.ports.gateway_apps import LogLine
from twin.camera import app_manifest
from twin.camera.app_runtime import App
from twin.camera.container_records import Container, Image, Volume
from twin.camera.fs import DurableFiles
from twin.camera.model_records import Model
from twin.camera.storage import ROOT

if TYPE_CHECKING:
    from twin.camera.admin import DeviceAdmin
    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.apps import AppManager
    from twin.camera.containers import ContainerRuntime
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.storage import Storage
    from twin.store import Store

LOG_LINES_KEPT = 200
PLATFORM_KIND = "camera_platform"


@dataclass(frozen=True, slots=True)
class Platform:
    """The parts of a camera whose state this module dumps and loads."""

    storage: Storage
    events: DeviceEventBus
    ai: AiRuntime
    containers: ContainerRuntime
    apps: AppManager
    admin: DeviceAdmin


def dump(platform: Platform) -> dict[str, Any]:
    runtime, apps, ai, admin = platform.containers, platform.apps, platform.ai, platform.admin
    return {
        "storage": platform.storage.state(),
        "runtime": {"partition": runtime.storage_partition, "unpack_rate": runtime.unpack_rate},
        "images": [
            {k: v for k, v in asdict(i).items() if k not in ("unpacking",)} | {"unpacking": None}
            for i in runtime.images.values()
        ],
        "containers": [_container(c) | {"state": c.state, "pid": c.pid} for c in runtime.containers.values()],
        "apps": [_app(a) | {"manifest": a.manifest.raw} for a in apps.apps.values()],
        "models": [_model(m) | {"loaded": m.loaded_at is not None} for m in ai.models.values()],
        "services": {"camera": ai.camera_service_running, "event_bus": platform.events.running},
        "admin": {
            "device_name": admin.device_name,
            "factory": dict(admin.factory_fields),
            "settings": dict(admin.setting_values),
        },
        "store_installs": {k: dict(v) for k, v in apps.store.installs.items()},
    }


def _container(c: Container) -> dict[str, Any]:
    """A container's fields a snapshot and the durable document both keep."""
    return {
        "id": c.id,
        "image": c.image,
        "app_id": c.app_id,
        "created_at": c.created_at,
        "volumes": [asdict(v) for v in c.volumes],
        "env": dict(c.env),
        "cpu_limit": c.cpu_limit,
        "memory_limit": c.memory_limit,
        "started_at": c.started_at,
        "stopped_at": c.stopped_at,
        "logs": [asdict(ln) for ln in list(c.logs)[-LOG_LINES_KEPT:]],
    }


def _app(a: App) -> dict[str, Any]:
    """An app's fields a snapshot and the durable document both keep (the manifest as each wants it)."""
    return {
        "manifest_path": a.manifest_path,
        "installed_at": a.installed_at,
        "state": a.state,
        "started_at": a.started_at,
        "stopped_at": a.stopped_at,
        "restart_count": a.restart_count,
        "last_error": a.last_error,
    }


def _app_from(manifest: str, a: dict[str, Any]) -> App:
    """The app :func:`_app` wrote, with its manifest's text."""
    return App(
        app_manifest.parse(manifest),
        str(a["manifest_path"]),
        float(a["installed_at"]),
        state=str(a["state"]),
        started_at=float(a["started_at"]),
        stopped_at=float(a["stopped_at"]),
        restart_count=int(a["restart_count"]),
        last_error=str(a["last_error"]),
    )


def _model(m: Model) -> dict[str, Any]:
    """A model's fields a snapshot and the durable document both keep (not what a load or its
    users hold: the accelerator's memory, the load time, the inference count)."""
    return {k: v for k, v in asdict(m).items() if k not in ("users", "memory", "loaded_at", "inferences")}


def load(platform: Platform, state: dict[str, Any]) -> None:
    """Replace the platform's state with ``state``, also what a durable document put there when the
    camera was built (the snapshot's own copy of it; its startup recovery does not run)."""
    runtime, apps, ai, admin = platform.containers, platform.apps, platform.ai, platform.admin
    apps.durable.cancel_recovery()
    for container in list(runtime.containers.values()):
        runtime.kill(container.id)
    runtime.containers, apps.apps = {}, {}
    for model in ai.models.values():
        ai._release(model)
    platform.storage.set_state(state["storage"])
    runtime.storage_partition = state["runtime"]["partition"]
    runtime.unpack_rate = state["runtime"]["unpack_rate"]
    runtime.images = {i["ref"]: Image(**i) for i in state["images"]}
    ai._scanned = True
    ai.models = {}
    for m in state["models"]:
        fields = {k: v for k, v in m.items() if k != "loaded"}
        ai.models[m["model_id"]] = Model(**fields)
    for m in state["models"]:
        if m["loaded"]:
            ai.load_model(m["model_id"])
    ai.camera_service_running = state["services"]["camera"]
    if not state["services"]["event_bus"]:
        platform.events.stop("restored")
    for a in state["apps"]:
        app = _app_from(_yaml(a["manifest"]), a)
        apps.apps[app.id] = app
    for c in state["containers"]:
        container = runtime.create(
            c["id"],
            c["image"],
            c["app_id"],
            volumes=[Volume(**v) for v in c["volumes"]],
            env=c["env"],
            cpu_limit=c["cpu_limit"],
            memory_limit=c["memory_limit"],
        )
        container.created_at, container.started_at, container.stopped_at = (
            c["created_at"],
            c["started_at"],
            c["stopped_at"],
        )
        container.logs = deque((LogLine(**ln) for ln in c["logs"]), maxlen=container.logs.maxlen)
        if c["state"] == "running":
            runtime.resume(container, c["pid"], apps._workload if c["app_id"] in apps.apps else None)
    admin.device_name = state["admin"]["device_name"]
    admin.factory_fields = dict(state["admin"]["factory"])
    admin.setting_values = dict(state["admin"]["settings"])
    apps.store.installs = {k: dict(v) for k, v in state["store_installs"].items()}


def _yaml(doc: dict[str, Any]) -> str:
    return json.dumps(doc)  # JSON is YAML


# Durable with a state directory ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Stored:
    partition: str
    images: list[Image]
    containers: list[dict[str, Any]]
    apps: list[App]
    models: list[Model]
    scanned: bool
    fstypes: dict[str, str]


class DurablePlatform:
    """The on-disk part of one camera's app platform in the store (see the module's docstring)."""

    def __init__(self, store: Store, camera_id: str, apps: AppManager) -> None:
        self._docs = store.collection(PLATFORM_KIND)
        self.files = DurableFiles(store, camera_id, apps.fs)
        """App manifests and uploaded model files, kept as files of the camera's tree."""
        self._id = camera_id
        self._apps = apps
        self._recovery: object | None = None

    def save(self) -> None:
        """Write the document as the platform is now (after every change)."""
        self._docs.put(self._id, _durable_doc(self._apps))

    def restore(self) -> bool:
        """Read the document back into a camera just built and schedule the startup recovery;
        False when there is none (a first boot) or it cannot be read (then the camera boots as new)."""
        stored = self._docs.get_as(self._id, _stored)
        if stored is None:
            return False
        _apply(self._apps, stored)
        token = self._recovery = object()
        self._apps.env.process(self._recover(token))
        return True

    def cancel_recovery(self) -> None:
        self._recovery = None

    def _recover(self, token: object):
        """``recoverAppsOnStartup``: running apps have no container task any more, so they are
        ``stopped``; then every app whose manifest says autostart starts."""
        yield self._apps.env.timeout(0)
        if self._recovery is not token:
            return
        apps = self._apps
        now = apps.clock.now()
        for app in apps.apps.values():
            if app.state == "running":
                app.state, app.stopped_at = "stopped", now
        apps.power_up()
        self.save()


def _durable_doc(apps: AppManager) -> dict[str, Any]:
    runtime, ai = apps.containers, apps.ai
    return {
        "partition": runtime.storage_partition,
        "images": [
            {k: v for k, v in asdict(i).items() if k not in ("unpacking", "broken")}
            for i in runtime.images.values()
        ],
        "containers": [
            _container(c)
            | {"started": c.state != "created", "log_bytes": runtime.storage.held(f"logs:{c.id}", ROOT)}
            for c in runtime.containers.values()
        ],
        "apps": [
            _app(a) | {"manifest": _yaml(a.manifest.raw)}  # text: the store sorts an object's keys
            for a in apps.apps.values()
        ],
        "models": [_model(m) for m in ai.models.values()],
        "scanned": ai._scanned,
        "fstypes": {name: p.fstype for name, p in runtime.storage.partitions.items() if p.spec.removable},
    }


def _stored(doc: dict[str, Any]) -> _Stored:
    """The typed content of a document; a field missing or of the wrong type raises (the store
    then skips the document and counts it)."""
    try:
        apps = [_app_from(str(a["manifest"]), a) for a in doc["apps"]]
    except DomainError as err:
        raise ValueError(err.message) from err
    models = [Model(**m) for m in doc["models"]]
    containers = [
        dict(c)
        | {"volumes": [Volume(**v) for v in c["volumes"]], "logs": [LogLine(**ln) for ln in c["logs"]]}
        for c in doc["containers"]
    ]
    for c in containers:
        _ = c["id"], c["image"], c["app_id"], c["created_at"], c["env"], c["cpu_limit"], c["memory_limit"]
    return _Stored(
        partition=str(doc["partition"]),
        images=[Image(**i) for i in doc["images"]],
        containers=containers,
        apps=apps,
        models=models,
        scanned=bool(doc["scanned"]),
        fstypes=dict(doc["fstypes"]),
    )


def _apply(apps: AppManager, stored: _Stored) -> None:
    """Put what the document holds on a camera just built: images charged where the runtime's root
    is, containers with no task, models (loaded again when their desired state says so), apps."""
    runtime, ai, storage = apps.containers, apps.ai, apps.containers.storage
    for name, fstype in stored.fstypes.items():
        if name in storage.partitions:
            storage.partitions[name].fstype = fstype
    if stored.partition in storage.partitions:
        runtime.storage_partition = stored.partition
    for image in stored.images:
        try:
            storage.charge(runtime.storage_partition, image.owner, image.archive_size)
            if image.unpacked:
                storage.charge(runtime.storage_partition, f"snapshot:{image.ref}", image.unpacked_size)
        except DomainError:
            continue  # no room any more: the image is lost, as a damaged content store would be
        runtime.images[image.ref] = image
    for c in stored.containers:
        if c["image"] not in runtime.images or c["id"] in runtime.containers:
            continue
        container = Container(
            c["id"], c["image"], c["app_id"], float(c["created_at"]), volumes=c["volumes"],
            env=dict(c["env"]), cpu_limit=float(c["cpu_limit"]), memory_limit=int(c["memory_limit"]),
        )  # fmt: skip
        container.state = "stopped" if c["started"] else "created"
        container.started_at, container.stopped_at = c["started_at"], c["stopped_at"]
        container.logs.extend(c["logs"])
        with contextlib.suppress(DomainError):  # a root partition full of something else: uncharged
            storage.charge(ROOT, f"logs:{container.id}", int(c["log_bytes"]))
        runtime.containers[container.id] = container
    ai._scanned = stored.scanned
    ai.models = {model.model_id: model for model in stored.models}
    ai.reload_desired()
    apps.apps = {app.id: app for app in stored.apps}
