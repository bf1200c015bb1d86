"""The workbench's records: the base images a project builds on, projects and their builds, in the
device's shapes (``BaseImage``, ``AppProject``, ``AppBuild``; integer ids)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from hardware.ports.errors import InvalidInput

DEV_DIR = "/data/aipc/dev"


@dataclass(frozen=True)
class BaseImage:
    id: int
    name: str
    tag: str
    language: str
    description: str
    desc_zh: str
    sdk_version: str
    features: str
    build_cmd: str
    entry_point: str
    entry_file: str
    size: int

    @property
    def image(self) -> str:
        return f"aipc/{self.name}:{self.tag}"

    def view(self, seeded: str) -> dict[str, object]:
        """A ``model.BaseImage`` row; ``seeded`` is when the platform seeded the table."""
        return {
            "id": self.id,
            "name": self.name,
            "tag": self.tag,
            "image": self.image,
            "language": self.language,
            "description": self.description,
            "desc_zh": self.desc_zh,
            "sdk_version": self.sdk_version,
            "features": self.features,
            "build_cmd": self.build_cmd,
            "entry_point": self.entry_point,
            "status": "active",
            "created_at": seeded,
            "updated_at": seeded,
        }


BASE_IMAGES = (
    BaseImage(1, "python", "3.11-slim", "python", "Python 3.11 with the AIPC SDK", "Python 3.11 与 AIPC SDK",
              "1.4.0", "opencv,numpy,aipc-sdk", "pip install -r requirements.txt", "python main.py",
              "main.py", 48_000_000),
    BaseImage(2, "hailo-runtime", "4.18", "python", "HailoRT 4.18 and GStreamer", "HailoRT 4.18 与 GStreamer",
              "4.18.0", "hailort,gstreamer,opencv", "pip install -r requirements.txt", "python app.py",
              "app.py", 96_000_000),
    BaseImage(3, "node", "20-alpine", "nodejs", "Node.js 20", "Node.js 20", "1.4.0", "aipc-sdk-js",
              "npm ci", "node index.js", "index.js", 41_000_000),
)  # fmt: skip


def rfc3339(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def base_image(image_id: int) -> BaseImage:
    found = next((b for b in BASE_IMAGES if b.id == image_id), None)
    if found is None:
        raise InvalidInput(f"unknown base image {image_id}", resource="parameter")
    return found


@dataclass
class Build:
    id: int
    project_id: int
    version: str
    status: str
    created_at: float
    finished_at: float = 0.0
    image: str = ""
    image_size: int = 0
    image_path: str = ""
    manifest_path: str = ""
    log: list[str] = field(default_factory=list)

    def view(self) -> dict[str, object]:
        return {
            "id": self.id,
            "project_id": self.project_id,
            "version": self.version,
            "status": self.status,
            "log": "\n".join(self.log),
            "image": self.image,
            "image_size": self.image_size,
            "image_path": self.image_path,
            "manifest_path": self.manifest_path,
            "started_at": rfc3339(self.created_at),
            "finished_at": rfc3339(self.finished_at) if self.finished_at else None,  # *time.Time
            "created_at": rfc3339(self.created_at),
        }


@dataclass
class Project:
    id: int
    name: str
    key: str
    description: str
    base_image_id: int
    language: str
    entry_file: str
    created_at: float
    updated_at: float
    app_config: str = ""
    volumes: str = ""
    status: str = "draft"  # CreateProject's status
    build_image: str = ""
    message: str = ""
    files: dict[str, int] = field(default_factory=dict)
    builds: list[Build] = field(default_factory=list)

    @property
    def source_path(self) -> str:
        return f"{DEV_DIR}/{self.key}"

    def view(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "key": self.key,
            "description": self.description,
            "base_image_id": self.base_image_id,
            "language": self.language,
            "source_path": self.source_path,
            "entry_file": self.entry_file,
            "build_config": "",
            "app_config": self.app_config,
            "volumes": self.volumes,
            "status": self.status,
            "build_image": self.build_image,
            "message": self.message,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
        }
