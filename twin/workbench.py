"""The development workbench: projects whose files live on the camera's file system under
``/data/aipc/dev/<id>``, and builds — timed on the world clock — that produce an installable image
archive and manifest in the upload area, ready for ``apps/install-package``.

A project's own ``app.yaml`` is used when it has one (it must name the project's image); otherwise
a manifest is generated. Paths inside a project are relative, without ``..``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from hardware.ports.errors import DomainError, InvalidInput, NotFound
from twin import app_manifest
from twin.storage import remove_file, write_file

if TYPE_CHECKING:
    from twin.camera import Camera

DEV_DIR = "/data/aipc/dev"
BASE_IMAGES = (
    ("aipc/python:3.11-slim", 48_000_000, "Python 3.11 with the AIPC SDK"),
    ("aipc/hailo-runtime:4.18", 96_000_000, "HailoRT 4.18 and GStreamer"),
    ("aipc/node:20-alpine", 41_000_000, "Node.js 20"),
)
BUILD_BASE_S = 20.0
BUILD_RATE = 4_000_000
"""Bytes a second a build packs (project files and the base image's layers)."""
MAX_FILE = 1024 * 1024


@dataclass
class Build:
    build_id: str
    version: str
    status: str
    started_at: float
    finished_at: float = 0.0
    image_path: str = ""
    manifest_path: str = ""
    image: str = ""
    error: str = ""

    def view(self) -> dict[str, object]:
        return {
            "build_id": self.build_id,
            "version": self.version,
            "status": self.status,
            "started_at": _rfc3339(self.started_at),
            "finished_at": _rfc3339(self.finished_at) if self.finished_at else "",
            "image": self.image,
            "image_path": self.image_path,
            "manifest_path": self.manifest_path,
            "error": self.error,
        }


@dataclass
class Project:
    id: str
    name: str
    description: str
    base_image: str
    created_at: float
    updated_at: float
    files: dict[str, int] = field(default_factory=dict)
    builds: list[Build] = field(default_factory=list)

    def view(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "base_image": self.base_image,
            "created_at": _rfc3339(self.created_at),
            "updated_at": _rfc3339(self.updated_at),
            "file_count": len(self.files),
            "build_count": len(self.builds),
        }


class Workbench:
    def __init__(self, camera: Camera) -> None:
        self.camera = camera
        self.env = camera.world.env
        self.projects: dict[str, Project] = {}

    def _now(self) -> float:
        return self.camera.clock.now()

    def _token(self, kind: str) -> str:
        return f"{int(self.camera.world.streams.get(f'{self.camera.id}/dev/{kind}').integers(0, 2**32)):08x}"

    def _fs(self) -> Any:
        return getattr(self.camera, "fs", None)

    def base_images(self) -> list[dict[str, object]]:
        return [{"name": n, "size": s, "description": d} for n, s, d in BASE_IMAGES]

    # Projects ------------------------------------------------------------------------------------
    def project(self, project_id: str) -> Project:
        project = self.projects.get(project_id)
        if project is None:
            raise NotFound(f"project not found: {project_id}")
        return project

    def create(self, name: str, description: str, base_image: str) -> Project:
        if not app_manifest.APP_ID.match(name):
            raise InvalidInput("name: lower-case letters, digits, '.', '_' and '-'", resource="parameter")
        base_image = base_image or BASE_IMAGES[0][0]
        if base_image not in {b[0] for b in BASE_IMAGES}:
            raise InvalidInput(f"unknown base image {base_image}", resource="parameter")
        now = self._now()
        project = Project(f"proj-{self._token('projects')}", name, description, base_image, now, now)
        self.projects[project.id] = project
        fs = self._fs()
        if fs is not None:
            fs.mkdir(f"{DEV_DIR}/{project.id}")
        return project

    def update(self, project_id: str, fields: dict[str, object]) -> Project:
        project = self.project(project_id)
        for key in ("description", "base_image"):
            value = fields.get(key)
            if value is None:
                continue
            if not isinstance(value, str):
                raise InvalidInput(f"{key} must be a string")
            if key == "base_image" and value not in {b[0] for b in BASE_IMAGES}:
                raise InvalidInput(f"unknown base image {value}", resource="parameter")
            setattr(project, key, value)
        project.updated_at = self._now()
        return project

    def delete(self, project_id: str) -> None:
        project = self.project(project_id)
        for path in list(project.files):
            remove_file(self._fs(), self.camera.storage, self._abs(project, path))
        fs = self._fs()
        if fs is not None and fs.exists(f"{DEV_DIR}/{project.id}"):
            fs.remove(f"{DEV_DIR}/{project.id}")
        del self.projects[project_id]

    # Files ---------------------------------------------------------------------------------------
    @staticmethod
    def _rel(path: str) -> str:
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if not path or path.startswith("/") or ".." in parts or not parts:
            raise InvalidInput("path must be relative to the project, without '..'", resource="parameter")
        return "/".join(parts)

    def _abs(self, project: Project, rel: str) -> str:
        return f"{DEV_DIR}/{project.id}/{rel}"

    def write(self, project_id: str, path: str, data: bytes) -> dict[str, object]:
        project = self.project(project_id)
        rel = self._rel(path)
        write_file(self._fs(), self.camera.storage, self._abs(project, rel), data)
        project.files[rel] = len(data)
        project.updated_at = self._now()
        return {"path": rel, "size": len(data)}

    def read(self, project_id: str, path: str) -> dict[str, object]:
        project = self.project(project_id)
        rel = self._rel(path)
        if rel not in project.files:
            raise NotFound(f"file not found: {rel}", resource="file")
        fs = self._fs()
        data = fs.read(self._abs(project, rel)) if fs is not None else b""
        if len(data) > MAX_FILE:
            raise InvalidInput("file too large to show; download it instead")
        return {"path": rel, "size": len(data), "content": data.decode(errors="replace")}

    def files(self, project_id: str) -> list[dict[str, object]]:
        return [{"path": p, "size": s} for p, s in sorted(self.project(project_id).files.items())]

    # Builds --------------------------------------------------------------------------------------
    def builds(self, project_id: str) -> list[dict[str, object]]:
        return [b.view() for b in self.project(project_id).builds]

    def build(self, project_id: str, version: str) -> dict[str, object]:
        project = self.project(project_id)
        version = version or f"0.{len(project.builds) + 1}.0"
        build = Build(f"build-{self._token('builds')}", version, "building", self._now())
        project.builds.append(build)
        self.env.process(self._build(project, build))
        return build.view()

    def _build(self, project: Project, build: Build):
        base = next(b for b in BASE_IMAGES if b[0] == project.base_image)
        size = base[1] + sum(project.files.values())
        yield self.env.timeout(BUILD_BASE_S + size / BUILD_RATE)
        build.finished_at = self._now()
        build.image = f"{project.name}:{build.version}"
        apps = self.camera.apps
        try:
            manifest = self._manifest(project, build)
            build.image_path = apps.stage_download(
                f"{project.name}-{build.version}.tar", size, build.build_id
            )
            build.manifest_path = apps.stage_manifest(manifest)
        except DomainError as err:  # a bad app.yaml, a full partition: the build fails
            build.status, build.error = "failed", err.message
            return
        build.status = "success"

    def _manifest(self, project: Project, build: Build) -> str:
        if "app.yaml" in project.files and self._fs() is not None:
            text = self._fs().read(self._abs(project, "app.yaml")).decode(errors="replace")
            parsed = app_manifest.parse(text)
            if parsed.image != build.image:
                raise InvalidInput(f"app.yaml names image {parsed.image}, the build makes {build.image}")
            return text
        doc = {
            "apiVersion": "v1",
            "kind": "Application",
            "metadata": {"id": project.name, "name": project.name, "version": build.version},
            "spec": {"image": build.image, "permissions": {"video": ["main"]}},
        }
        return yaml.safe_dump(doc)


def _rfc3339(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
