"""The device's app store: a catalogue of apps (categories, tags, versions) and install records.

Installing from the store runs the ordinary app pipeline: the version's image archive is fetched
into the upload area (charged to the root partition like an upload), a manifest is generated from
the version's defaults, and ``install_package`` takes it from there; the answer carries the task id
to poll. Install records follow the app manager: their ``status`` is the app's state.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from hardware.ports.errors import Conflict, InvalidInput, NotFound

if TYPE_CHECKING:
    from hardware.ports.gateway_apps import AppInfo
    from twin.camera.clock import DeviceClock
    from twin.engine import Engine

INSTALLS_KIND = "store_installs"
"""Install records are durable: one document per (camera, app id)."""
CATEGORIES = (
    (1, "security", "Security", "安防", "shield", 1),
    (2, "retail", "Retail", "零售", "cart", 2),
    (3, "traffic", "Traffic", "交通", "car", 3),
    (4, "industry", "Industry", "工业", "factory", 4),
)
TAGS = (
    (1, "people", "People", "人员", 1),
    (2, "vehicle", "Vehicle", "车辆", 2),
    (3, "safety", "Safety", "安全", 3),
)


@dataclass(frozen=True)
class StoreApp:
    id: int
    key: str
    name: str
    name_zh: str
    category: str
    short_desc: str
    tags: tuple[str, ...]
    versions: tuple[tuple[int, str, int], ...]
    """(detail id, version, image archive bytes), newest first."""
    models: tuple[str, ...] = ("yolov8n",)
    featured: bool = False
    downloads: int = 0
    rating: float = 0.0

    def image(self, version: str) -> str:
        return f"{self.key}:{version}"


CATALOGUE = (
    StoreApp(1, "people-counter", "People Counter", "人数统计", "retail", "Counts people crossing a line",
             ("people",), ((11, "1.2.0", 41_000_000), (10, "1.1.0", 39_500_000)), featured=True,
             downloads=1820, rating=4.6),
    StoreApp(2, "vehicle-counter", "Vehicle Counter", "车辆统计", "traffic", "Counts vehicles per lane",
             ("vehicle",), ((21, "2.0.1", 58_000_000),), downloads=940, rating=4.3),
    StoreApp(3, "ppe-detector", "PPE Detector", "安全帽检测", "industry", "Helmets and vests on site",
             ("people", "safety"), ((31, "0.9.4", 73_000_000),), downloads=515, rating=4.1),
    StoreApp(4, "intrusion-alarm", "Intrusion Alarm", "区域入侵", "security", "Alarms on zone intrusion",
             ("people", "safety"), ((41, "1.0.0", 36_000_000),), featured=True, downloads=2210, rating=4.7),
)  # fmt: skip


ZERO_TIME = "0001-01-01T00:00:00Z"
"""Go's zero ``time.Time`` as JSON."""
INSTALL_ZERO: dict[str, Any] = {
    **dict.fromkeys(("container_id", "message", "manifest_path"), ""),
    "pid": 0,
    **dict.fromkeys(("installed_at", "started_at", "stopped_at", "created_at"), ZERO_TIME),
}
"""``model.AppInstall``'s fields a record may lack (no omitempty: zero values are sent)."""


def _store_app(a: StoreApp, now: str) -> dict[str, Any]:
    return {
        "id": a.id,
        "key": a.key,
        "name": a.name,
        "name_zh": a.name_zh,
        "icon": f"/store/icons/{a.key}.png",
        "short_desc": a.short_desc,
        "short_desc_zh": a.name_zh,
        "description": a.short_desc,
        "category": a.category,
        "author": "camthink",
        "website": "",
        "document": "",
        "architectures": "arm64",
        "min_memory": 256,
        "gpu_required": False,
        "soc_support": "hailo8",
        "source": "official",
        "status": "published",
        "featured": a.featured,
        "sort_order": a.id,
        "downloads": a.downloads,
        "rating": a.rating,
        "created_at": now,
        "updated_at": now,
    }


class Installer(Protocol):
    """What the store asks of the app manager: stage a download and a manifest, install them, and
    tell how an install task and an installed app are doing."""

    tasks: dict[str, Any]
    apps: dict[str, Any]

    def stage_download(self, filename: str, size: int, seed: str) -> str: ...

    def stage_manifest(self, text: str) -> str: ...

    def install_package(self, manifest_path: str, image_path: str, force: bool) -> str: ...

    def get(self, app_id: str) -> AppInfo: ...


class AppStore:
    def __init__(self, world: Engine, camera_id: str, clock: DeviceClock, installer: Installer) -> None:
        self.clock, self.installer = clock, installer
        self._docs = world.store.collection(INSTALLS_KIND)
        self._prefix = f"{camera_id}:"
        self.installs: dict[str, dict[str, Any]] = dict(self._docs.items_under(self._prefix))
        self._next_id = max((int(r["id"]) for r in self.installs.values()), default=0) + 1
        self._tasks: dict[str, str] = {}
        """Store key -> the task of its latest install: one install of an app at a time."""

    def _now(self) -> str:
        return dt.datetime.fromtimestamp(self.clock.now(), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _app(self, key: str) -> StoreApp:
        app = next((a for a in CATALOGUE if a.key == key), None)
        if app is None:
            raise NotFound(f"store app not found: {key}")
        return app

    # Catalogue ---------------------------------------------------------------------------------
    def apps(
        self, category: str, search: str, featured: bool | None, page: int, page_size: int
    ) -> dict[str, Any]:
        page = max(page, 1)  # ListApps: out of range means page 1, 20 a page
        page_size = page_size if 1 <= page_size <= 100 else 20
        rows = [
            a
            for a in CATALOGUE
            if (not category or a.category == category)
            and (not search or search.lower() in f"{a.key} {a.name} {a.short_desc}".lower())
            and (featured is None or a.featured == featured)
        ]
        now = self._now()
        start = (page - 1) * page_size
        tags = self.tags()
        page_rows = [
            _store_app(a, now) | {"tags": [t for t in tags if t["key"] in a.tags]}
            for a in rows[start : start + page_size]
        ]
        return {"apps": page_rows, "total": len(rows), "page": page, "page_size": page_size}

    def app(self, key: str) -> dict[str, Any]:
        a = self._app(key)
        now = self._now()
        versions = [
            {
                "id": detail_id,
                "app_id": a.id,
                "version": version,
                "image": a.image(version),
                "default_config": json.dumps({"stream": "main", "model": a.models[0]}),
                "changelog": f"{a.name} {version}",
                "status": "published",
                "release_date": now,
                "created_at": now,
                "updated_at": now,
            }
            for detail_id, version, _ in a.versions
        ]
        return {
            "app": _store_app(a, now),
            "versions": versions,
            "tags": [t for t in self.tags() if t["key"] in a.tags],
        }

    def categories(self) -> list[dict[str, Any]]:
        now = self._now()
        return [
            {
                "id": i,
                "key": k,
                "name": n,
                "name_zh": z,
                "icon": ic,
                "sort": s,
                "created_at": now,
                "updated_at": now,
            }
            for i, k, n, z, ic, s in CATEGORIES
        ]

    def tags(self) -> list[dict[str, Any]]:
        fields = ("id", "key", "name", "name_zh", "sort")
        now = self._now()
        return [dict(zip(fields, row, strict=True)) | {"created_at": now, "updated_at": now} for row in TAGS]

    # Installing ----------------------------------------------------------------------------------
    def install(self, key: str, version: str, config: dict[str, Any]) -> dict[str, Any]:
        a = self._app(key)
        choice = next((v for v in a.versions if v[1] == version), None) if version else a.versions[0]
        if choice is None:
            raise NotFound(f"version {version} of {key} not found")
        detail_id, version, size = choice
        apps = self.installer
        running = apps.tasks.get(self._tasks.get(key, ""))
        if running is not None and running.phase not in ("complete", "error"):
            raise Conflict(f"an install of {key} is already running (task {running.task_id})")
        image_path = apps.stage_download(f"{key}-{version}.tar.gz", size, f"store/{key}/{version}")
        manifest = {
            "apiVersion": "v1",
            "kind": "Application",
            "metadata": {"id": key, "name": a.name, "version": version, "description": a.short_desc},
            "spec": {
                "image": a.image(version),
                "env": [{"name": k.upper(), "value": str(v)} for k, v in config.items()],
                "permissions": {
                    "video": ["main"],
                    "inference": {"models": list(a.models)},
                    "events": {"publish": [f"app/{key}/*"]},
                },
            },
        }
        manifest_path = apps.stage_manifest(yaml.safe_dump(manifest))
        task_id = apps.install_package(manifest_path, image_path, force=key in self.installs)
        self._tasks[key] = task_id
        self.record(
            {"app_id": key, "name": a.name, "version": version, "description": a.short_desc,
             "image": a.image(version), "store_app_id": a.id, "app_detail_id": detail_id,
             "config": json.dumps(config)},
            replace=True,
        )  # fmt: skip
        return {"app_id": key, "message": "Installation started", "task_id": task_id}

    # Install records -----------------------------------------------------------------------------
    def record(self, fields: dict[str, Any], replace: bool = False) -> dict[str, Any]:
        app_id, name = fields.get("app_id"), fields.get("name")
        if not isinstance(app_id, str) or not app_id or not isinstance(name, str) or not name:
            raise InvalidInput("app_id and name are required")
        for key in ("store_app_id", "app_detail_id"):
            value = fields.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise InvalidInput(f"{key} must be an integer")
        for key in ("version", "description", "image", "config"):
            if fields.get(key) is not None and not isinstance(fields[key], str):
                raise InvalidInput(f"{key} must be a string")
        if app_id in self.installs and not replace:
            raise Conflict(f"install record for {app_id} already exists")
        old = self.installs.get(app_id, {})
        rec = {
            "id": old.get("id") or self._take_id(),
            "store_app_id": fields.get("store_app_id"),
            "app_detail_id": fields.get("app_detail_id"),
            "app_id": app_id,
            "name": name,
            "version": fields.get("version") or "",
            "description": fields.get("description") or "",
            "image": fields.get("image") or "",
            "status": "installing",
            "message": "",
            "config": fields.get("config") or "{}",
            "installed_at": self._now(),
            "created_at": self._now(),
        }
        self.installs[app_id] = rec
        self._docs.put(self._prefix + app_id, rec)
        return self.view(app_id)

    def _take_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def view(self, app_id: str) -> dict[str, Any]:
        rec = self.installs.get(app_id)
        if rec is None:
            raise NotFound(f"install record not found: {app_id}")
        out = {**INSTALL_ZERO, "updated_at": rec.get("created_at", ZERO_TIME), **rec}
        for key in ("store_app_id", "app_detail_id"):
            out[key] = out[key] or None  # *uint: null when not linked
        app = self.installer.apps.get(app_id)
        if app is not None:
            info = self.installer.get(app_id)
            out.update(
                status=info.state,
                container_id=info.container_id,
                pid=info.pid,
                manifest_path=info.manifest_path,
            )
        store_app = next((a for a in CATALOGUE if a.id == out["store_app_id"]), None)
        if store_app is not None:  # ListInstalls' store_app, omitempty
            out["store_app"] = _store_app(store_app, self._now())
        return out

    def list(self) -> list[dict[str, Any]]:
        return [self.view(a) for a in sorted(self.installs)]

    def update(self, app_id: str, fields: dict[str, Any]) -> dict[str, Any]:
        rec = self.installs.get(app_id)
        if rec is None:
            raise NotFound(f"install record not found: {app_id}")
        changes: dict[str, Any] = {}
        for key in ("status", "message", "version", "config", "description", "container_id", "pid"):
            value = fields.get(key)
            if value is None:
                continue
            kind_ok = (
                isinstance(value, int) and not isinstance(value, bool)
                if key == "pid"
                else isinstance(value, str)
            )
            if not kind_ok:
                raise InvalidInput(f"{key} must be {'an integer' if key == 'pid' else 'a string'}")
            changes[key] = value
        rec.update(changes)  # the app manager's own state wins in the view while the app exists
        self._docs.put(self._prefix + app_id, rec)
        return self.view(app_id)

    def delete(self, app_id: str) -> None:
        if self.installs.pop(app_id, None) is None:
            raise NotFound(f"install record not found: {app_id}")
        self._docs.delete(self._prefix + app_id)
