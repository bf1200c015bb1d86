"""The app platform's part of a camera snapshot: partitions' byte charges, imported images, installed
apps and their containers, models, the services' flags, device administration and store records.

Restoring rebuilds it on a fresh camera: a container that was running runs again at once (its
workload starts over, so it logs a new start); staged uploads and install tasks in flight are not
kept (a client polling one sees it gone, as after a device restart).
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from hardware.ports.gateway_apps import LogLine
from twin.camera import app_manifest
from twin.camera.ai_runtime import Model
from twin.camera.app_runtime import App
from twin.camera.containers import Image, Volume

if TYPE_CHECKING:
    from twin.camera.admin import DeviceAdmin
    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.apps import AppManager
    from twin.camera.containers import ContainerRuntime
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.storage import Storage

LOG_LINES_KEPT = 200


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
        "containers": [
            {
                "id": c.id,
                "image": c.image,
                "app_id": c.app_id,
                "created_at": c.created_at,
                "volumes": [asdict(v) for v in c.volumes],
                "env": dict(c.env),
                "cpu_limit": c.cpu_limit,
                "memory_limit": c.memory_limit,
                "state": c.state,
                "pid": c.pid,
                "started_at": c.started_at,
                "stopped_at": c.stopped_at,
                "logs": [asdict(ln) for ln in list(c.logs)[-LOG_LINES_KEPT:]],
            }
            for c in runtime.containers.values()
        ],
        "apps": [
            {
                "manifest": a.manifest.raw,
                "manifest_path": a.manifest_path,
                "installed_at": a.installed_at,
                "state": a.state,
                "started_at": a.started_at,
                "stopped_at": a.stopped_at,
                "restart_count": a.restart_count,
                "last_error": a.last_error,
            }
            for a in apps.apps.values()
        ],
        "models": [
            {k: v for k, v in asdict(m).items() if k not in ("users", "memory", "loaded_at", "inferences")}
            | {"loaded": m.loaded_at is not None}
            for m in ai.models.values()
        ],
        "services": {"camera": ai.camera_service_running, "event_bus": platform.events.running},
        "admin": {
            "device_name": admin.device_name,
            "factory": dict(admin.factory),
            "settings": dict(admin.settings),
        },
        "store_installs": {k: dict(v) for k, v in apps.store.installs.items()},
    }


def load(platform: Platform, state: dict[str, Any]) -> None:
    runtime, apps, ai, admin = platform.containers, platform.apps, platform.ai, platform.admin
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
            ai.load(m["model_id"])
    ai.camera_service_running = state["services"]["camera"]
    if not state["services"]["event_bus"]:
        platform.events.stop("restored")
    for a in state["apps"]:
        manifest = app_manifest.parse(_yaml(a["manifest"]))
        apps.apps[manifest.app_id] = App(
            manifest,
            a["manifest_path"],
            a["installed_at"],
            state=a["state"],
            started_at=a["started_at"],
            stopped_at=a["stopped_at"],
            restart_count=a["restart_count"],
            last_error=a["last_error"],
        )
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
    admin.factory = dict(state["admin"]["factory"])
    admin.settings = dict(state["admin"]["settings"])
    apps.store.installs = {k: dict(v) for k, v in state["store_installs"].items()}


def _yaml(doc: dict[str, Any]) -> str:
    return json.dumps(doc)  # JSON is YAML
