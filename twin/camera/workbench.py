"""The development workbench: projects whose files live on the camera's file system under
``/data/aipc/dev/<key>``, and builds — timed on the world clock — that produce an installable image
archive and manifest in the upload area, ready for ``apps/install-package``.

Shapes follow the device's swagger (``AppProject``, ``BaseImage``, ``AppBuild``; integer ids). The
manifest of a build is the project's ``app_config`` when set, else its ``app.yaml``, else generated;
either way it must name the image the build makes. Paths inside a project are relative, without
``..``; a source archive's members are checked the same way before anything is written.
"""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from hardware.ports.errors import Conflict, DomainError, InvalidInput, NotFound
from twin.camera import app_manifest
from twin.camera.storage import remove_file, write_file
from twin.camera.workbench_records import BASE_IMAGES, Build, Project, base_image, rfc3339

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

PROJECTS_KIND = "dev_projects"
"""Projects (with their file index and builds) are durable: one document per project."""
BUILD_BASE_S = 20.0
BUILD_RATE = 4_000_000
"""Bytes a second a build packs (project files and the base image's layers)."""
MAX_FILE = 1024 * 1024
VERSION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
"""A build's version is its image tag."""
MAX_ARCHIVE_MEMBERS = 2000
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024


class Stager(Protocol):
    """Where a finished build leaves its image archive and manifest: the app manager's staging."""

    def stage_download(self, filename: str, size: int, seed: str) -> str: ...

    def stage_manifest(self, text: str) -> str: ...


class Workbench:
    """The workbench port."""

    def __init__(
        self,
        world: Engine,
        camera_id: str,
        clock: DeviceClock,
        fs: VirtualFS,
        installer: Stager,
    ) -> None:
        self.env = world.env
        self.clock, self.fs, self.installer = clock, fs, installer
        self._seeded = rfc3339(clock.now())  # the platform seeds its base images as it starts
        self.by_id: dict[int, Project] = {}
        self._docs = world.store.collection(PROJECTS_KIND)
        self._prefix = f"{camera_id}:"
        self._load()
        self._next_project = max(self.by_id, default=0) + 1
        self._next_build = max((b.id for p in self.by_id.values() for b in p.builds), default=0) + 1

    def _load(self) -> None:
        for _, doc in self._docs.items_under(self._prefix):
            builds = [Build(**b) for b in doc.pop("builds", [])]
            project = Project(**doc, builds=builds)
            for b in builds:
                if b.status == "building":  # the device went down mid-build
                    b.status = project.status = "failed"
                    b.log.append("ERROR: interrupted by a restart")
            self.by_id[project.id] = project

    def _save(self, project: Project) -> None:
        self._docs.put(f"{self._prefix}{project.id}", asdict(project))

    def _now(self) -> float:
        return self.clock.now()

    def base_images(self) -> list[dict[str, object]]:
        return [b.view(self._seeded) for b in BASE_IMAGES]

    # Projects ------------------------------------------------------------------------------------
    def _project(self, project_id: str | int) -> Project:
        try:
            key = int(project_id)
        except (TypeError, ValueError):
            raise InvalidInput("Invalid project ID") from None
        project = self.by_id.get(key)
        if project is None:
            raise NotFound(f"project not found: {project_id}")
        return project

    def projects(self) -> list[dict[str, object]]:
        return [p.view() for _, p in sorted(self.by_id.items())]

    def project(self, project_id: str | int) -> dict[str, object]:
        project = self._project(project_id)
        """``GetProject``: the project, its base image (null when none) and its builds."""
        image = base_image(project.base_image_id) if project.base_image_id else None
        return {
            "project": project.view(),
            "base_image": image.view(self._seeded) if image else None,
            "builds": [b.view() for b in reversed(project.builds)],
        }

    def create(self, fields: dict[str, Any]) -> dict[str, object]:
        name, key = fields.get("name"), fields.get("key")
        if not isinstance(name, str) or not name or not isinstance(key, str) or not key:
            raise InvalidInput("Invalid request body: name and key are required")
        if not app_manifest.APP_ID.match(key):
            raise InvalidInput("key: lower-case letters, digits, '.', '_' and '-'", resource="parameter")
        if any(p.key == key for p in self.by_id.values()):
            raise Conflict(f"project key already exists: {key}")
        image = base_image(_int(fields, "base_image_id") or BASE_IMAGES[0].id)
        language = _str(fields, "language") or image.language
        now = self._now()
        project = Project(
            self._next_project, name, key, _str(fields, "description"), image.id, language,
            image.entry_file, now, now,
        )  # fmt: skip
        self._next_project += 1
        self.by_id[project.id] = project
        self._save(project)
        self.fs.mkdir(project.source_path)
        return project.view()

    def update(self, project_id: str | int, fields: dict[str, Any]) -> dict[str, object]:
        project = self._project(project_id)
        changes: dict[str, Any] = {}
        for name in ("name", "description", "entry_file", "app_config", "volumes"):
            if fields.get(name) is not None:
                changes[name] = _str(fields, name)
        if fields.get("base_image_id") is not None:
            changes["base_image_id"] = base_image(_int(fields, "base_image_id")).id
        if changes.get("name") == "":
            raise InvalidInput("Invalid request body: name must not be empty")
        if changes.get("entry_file"):
            changes["entry_file"] = self._rel(changes["entry_file"])
        for name, value in changes.items():
            setattr(project, name, value)
        project.updated_at = self._now()
        self._save(project)
        return project.view()

    def delete(self, project_id: str | int) -> None:
        project = self._project(project_id)
        if any(b.status == "building" for b in project.builds):
            raise Conflict("a build of this project is running")
        fs = self.fs
        for path in list(project.files):
            remove_file(fs, self._abs(project, path))
        if fs.exists(project.source_path):
            fs.remove(project.source_path)
        del self.by_id[project.id]
        self._docs.delete(f"{self._prefix}{project.id}")

    # Files ---------------------------------------------------------------------------------------
    @staticmethod
    def _rel(path: str) -> str:
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if not path or path.startswith(("/", "\\")) or ".." in parts or not parts or "\x00" in path:
            raise InvalidInput("path must be relative to the project, without '..'", resource="parameter")
        return "/".join(parts)

    @staticmethod
    def _abs(project: Project, rel: str) -> str:
        return f"{project.source_path}/{rel}"

    def _store(self, project: Project, rel: str, data: bytes) -> None:
        if any(rel.startswith(f"{f}/") for f in project.files) or any(
            f.startswith(f"{rel}/") for f in project.files
        ):
            raise Conflict(f"{rel} clashes with a file or directory of the project")
        write_file(self.fs, self._abs(project, rel), data)
        project.files[rel] = len(data)

    def write(self, project_id: str | int, path: str, data: bytes) -> dict[str, object]:
        project = self._project(project_id)
        rel = self._rel(path)
        self._store(project, rel, data)
        project.updated_at = self._now()
        self._save(project)
        return {"name": rel.rsplit("/", 1)[-1], "path": rel, "size": len(data)}

    def source(self, project_id: str | int, filename: str, data: bytes) -> dict[str, object]:
        """Unpack a ``.zip``, ``.tar`` or ``.tar.gz`` source archive into the project. Every member
        is checked (relative, no ``..``, regular files only) before the first one is written."""
        project = self._project(project_id)
        members = _unpack(filename, data)
        for rel, content in members:
            self._store(project, rel, content)
        project.updated_at = self._now()
        self._save(project)
        return {"message": "Source uploaded", "files": len(members)}

    def read(self, project_id: str | int, path: str) -> dict[str, object]:
        project = self._project(project_id)
        rel = self._rel(path)
        if rel not in project.files:
            raise NotFound(f"file not found: {rel}", resource="file")
        data = self.fs.read(self._abs(project, rel))
        if len(data) > MAX_FILE:
            raise InvalidInput("file too large to show; download it instead")
        return {"path": rel, "content": data.decode(errors="replace"), "size": len(data)}

    def files(self, project_id: str | int, path: str = "") -> list[dict[str, object]]:
        """The entries of one directory of the project (its top level when ``path`` is empty)."""
        project = self._project(project_id)
        base = self._rel(path) if path.strip("/.") else ""
        prefix = f"{base}/" if base else ""
        entries: dict[str, dict[str, object]] = {}
        for rel, size in project.files.items():
            if not rel.startswith(prefix):
                continue
            head, _, rest = rel[len(prefix) :].partition("/")
            if rest:
                entries.setdefault(head, {"name": head, "path": prefix + head, "is_dir": True, "size": 0})
            else:
                entries[head] = {"name": head, "path": rel, "is_dir": False, "size": size}
        if base and not entries:
            raise NotFound(f"directory not found: {base}", resource="file")
        return [entries[k] for k in sorted(entries)]

    # Builds --------------------------------------------------------------------------------------
    def builds(self, project_id: str | int) -> list[dict[str, object]]:
        return [b.view() for b in reversed(self._project(project_id).builds)]

    def build(self, project_id: str | int, version: str) -> dict[str, object]:
        project = self._project(project_id)
        if any(b.status == "building" for b in project.builds):
            raise Conflict("a build of this project is already running")
        version = version or f"0.{len(project.builds) + 1}.0"
        if not VERSION.match(version):
            raise InvalidInput("version: an image tag (letters, digits, '.', '_', '-')", resource="parameter")
        build = Build(self._next_build, project.id, version, "building", self._now())
        self._next_build += 1
        project.builds.append(build)
        project.status, project.message = "building", ""
        self._save(project)
        self.env.process(self._build(project, build))
        return build.view()

    def _build(self, project: Project, build: Build):
        base = base_image(project.base_image_id)
        size = base.size + sum(project.files.values())
        build.image = f"{project.key}:{build.version}"
        build.log.append(f"FROM {base.image}")
        build.log.append(f"COPY {len(project.files)} files ({sum(project.files.values())} bytes)")
        yield self.env.timeout(BUILD_BASE_S + size / BUILD_RATE)
        build.finished_at = self._now()
        apps = self.installer
        try:
            manifest = self._manifest(project, build)
            build.image_path = apps.stage_download(
                f"{project.key}-{build.version}.tar", size, f"build/{build.id}"
            )
            build.manifest_path = apps.stage_manifest(manifest)
        except DomainError as err:  # a bad manifest, a full partition: the build fails
            build.status = project.status = "failed"
            build.log.append(f"ERROR: {err.message}")
            project.message = err.message
            self._save(project)
            return
        build.image_size = size
        build.status = "success"
        build.log.append(f"built {build.image} ({size} bytes)")
        project.status, project.build_image = "built", build.image
        self._save(project)

    def _manifest(self, project: Project, build: Build) -> str:
        text = project.app_config
        fs = self.fs
        if not text and "app.yaml" in project.files:
            text = fs.read(self._abs(project, "app.yaml")).decode(errors="replace")
        if text:
            parsed = app_manifest.parse(text)
            if parsed.image != build.image:
                raise InvalidInput(f"the manifest names image {parsed.image}, the build makes {build.image}")
            return text
        doc = {
            "apiVersion": "v1",
            "kind": "Application",
            "metadata": {"id": project.key, "name": project.name, "version": build.version},
            "spec": {"image": build.image, "permissions": {"video": ["main"]}},
        }
        return yaml.safe_dump(doc)


def _str(fields: dict[str, Any], name: str) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidInput(f"Invalid request body: {name} must be a string")
    return value


def _int(fields: dict[str, Any], name: str) -> int:
    value = fields.get(name)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(f"Invalid request body: {name} must be an integer")
    return value


def _unpack(filename: str, data: bytes) -> list[tuple[str, bytes]]:
    members: list[tuple[str, str, int]] = []  # (name, kind, size)
    out: list[tuple[str, bytes]] = []
    try:
        if filename.lower().endswith(".zip") or data[:4] == b"PK\x03\x04":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                infos = zf.infolist()
                for info in infos:
                    kind = "dir" if info.is_dir() else "link" if (info.external_attr >> 28) == 0xA else "file"
                    members.append((info.filename, kind, info.file_size))
                _check(members)
                out = [(Workbench._rel(i.filename), zf.read(i)) for i in infos if not i.is_dir()]
        else:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tf:
                entries = tf.getmembers()
                for entry in entries:
                    kind = "dir" if entry.isdir() else "file" if entry.isreg() else "link"
                    members.append((entry.name, kind, entry.size))
                _check(members)
                for entry in entries:
                    if entry.isreg():
                        handle = tf.extractfile(entry)
                        out.append((Workbench._rel(entry.name), handle.read() if handle else b""))
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise InvalidInput("source must be a .zip, .tar or .tar.gz archive") from err
    if not out:
        raise InvalidInput("the source archive holds no files")
    return out


def _check(members: list[tuple[str, str, int]]) -> None:
    if len(members) > MAX_ARCHIVE_MEMBERS:
        raise InvalidInput(f"the source archive holds more than {MAX_ARCHIVE_MEMBERS} entries")
    if sum(size for _, kind, size in members if kind == "file") > MAX_ARCHIVE_BYTES:
        raise InvalidInput("the source archive unpacks to more than 256 MB")
    for name, kind, _ in members:
        if kind == "link":
            raise InvalidInput(f"links are not allowed in a source archive: {name}", resource="parameter")
        if kind == "file":
            Workbench._rel(name)
        elif name.startswith("/") or ".." in name.split("/"):
            raise InvalidInput(f"path escapes the project: {name}", resource="parameter")
