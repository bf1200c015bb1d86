"""The camera's app manager: staged uploads, install tasks, installed apps, their lifecycle.

Install in three steps: ``upload_image`` and ``upload_manifest`` stage files under
``/tmp/aipc-upload`` (the root partition: a root full of stale logs refuses the upload),
``install_package`` starts a task — ``validating`` (0, 2, 4, 5) → ``pulling`` (a local archive goes
10 → 80 while it is imported into the container runtime) → ``registering`` (85, 90, 95) →
``complete`` (100), or ``error`` with the percent where it stopped. Staged files are consumed by
the install; uninstall gives back every byte the app held.

What a running app does (its workload, health probes, restarts) is ``twin.camera.app_runtime``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Protocol

import simpy
import yaml

from hardware.ports.errors import Conflict, DomainError, InternalError, InvalidInput, NotFound
from hardware.ports.gateway_apps import AppInfo, AppStats, InstallResult, InstallTask, LogLine, StagedManifest
from twin.camera import app_manifest
from twin.camera.app_manifest import Manifest
from twin.camera.app_runtime import APPS_DIR, App, AppRuntime
from twin.camera.app_store import AppStore
from twin.camera.container_records import Container
from twin.camera.durable import Durable
from twin.camera.storage import remove_file, write_file
from twin.camera.workbench import Workbench

if TYPE_CHECKING:
    from collections.abc import Callable

    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.clock import DeviceClock
    from twin.camera.containers import ContainerRuntime
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.monitor import Monitor
    from twin.camera.power import Power
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

UPLOAD_DIR = "/tmp/aipc-upload"
IMAGE_SUFFIXES = (".tar", ".tar.gz", ".tgz")
MANIFEST_SUFFIXES = (".yaml", ".yml")
GZIP_EXPANSION = 2.6
"""A compressed image archive unpacks to about this many times its size."""
IMPORT_RATE = 40_000_000
PHASE_STEP_S = 0.2
TASK_TTL_S = 1800.0


def _rpc_not_found(app_id: str) -> InternalError:
    return InternalError(f"rpc error: code = NotFound desc = app not found: {app_id}")


class PlatformStore(Durable, Protocol):
    """The durable platform (:class:`twin.camera.platform_state.DurablePlatform`)."""

    def restore(self) -> bool: ...

    def cancel_recovery(self) -> None: ...


@dataclass
class Staged:
    path: str
    filename: str
    size: int
    data: bytes = b""


@dataclass
class Task:
    task_id: str
    created: float
    phase: str = "validating"
    percent: float = 0.0
    message: str = "Validating package"
    app_id: str = ""
    error: str = ""

    def view(self) -> InstallTask:
        return InstallTask(self.task_id, self.phase, self.percent, self.message, self.app_id, self.error)


class AppManager:
    """The apps port: staged uploads, install tasks, installed apps and their lifecycle; what they
    do while they run is ``runtime``'s."""

    def __init__(
        self,
        world: Engine,
        camera_id: str,
        clock: DeviceClock,
        power: Power,
        fs: VirtualFS,
        events: DeviceEventBus,
        ai: AiRuntime,
        containers: ContainerRuntime,
        monitor: Monitor,
        durable: Callable[[AppManager], PlatformStore],
    ) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.clock, self.power, self.fs = clock, power, fs
        self.events, self.ai, self.containers, self.monitor = events, ai, containers, monitor
        self.staged: dict[str, Staged] = {}
        self.tasks: dict[str, Task] = {}
        self.apps: dict[str, App] = {}
        self.store = AppStore(world, camera_id, clock, self)
        self.workbench = Workbench(world, camera_id, clock, fs, self)
        self.runtime = AppRuntime(world, clock, power, containers, events, ai, self)
        self.durable = durable(self)

    # Staging -------------------------------------------------------------------------------
    def _stage(self, filename: str, data: bytes, suffixes: tuple[str, ...], keep: bool) -> Staged:
        name = PurePosixPath(filename or "").name
        if not name or not name.lower().endswith(suffixes):
            raise InvalidInput(f"invalid file type: expected {', '.join(suffixes)}")
        token = int(self.world.streams.get(f"{self.camera_id}/uploads").integers(0, 2**32))
        path = f"{UPLOAD_DIR}/{token:08x}-{name}"  # concurrent uploads of "app.yaml" never collide
        write_file(self.fs, path, data)
        staged = Staged(path, name, len(data), data if keep else b"")
        self.staged[path] = staged
        return staged

    def _unstage(self, path: str) -> None:
        if self.staged.pop(path, None) is not None:
            remove_file(self.fs, path)

    def upload_image(self, filename: str, data: bytes) -> str:
        return self._stage(filename, data, IMAGE_SUFFIXES, keep=False).path

    def stage_download(self, filename: str, size: int, seed: str) -> str:
        """An image archive fetched from the app store: ``size`` bytes staged like an upload."""
        staged = self._stage(filename, b"", IMAGE_SUFFIXES, keep=False)
        self.fs.put_sparse(staged.path, size, seed)
        staged.size = size
        return staged.path

    def stage_manifest(self, text: str) -> str:
        return self._stage("app.yaml", text.encode(), MANIFEST_SUFFIXES, keep=True).path

    def upload_manifest(self, filename: str, data: bytes) -> StagedManifest:
        m = app_manifest.parse(data)
        staged = self._stage(filename, data, MANIFEST_SUFFIXES, keep=True)
        return StagedManifest(staged.path, m.app_id, m.name, m.version, m.description)

    def _manifest_at(self, path: str) -> Manifest:
        staged = self.staged.get(path)
        if staged is not None and staged.data:
            return app_manifest.parse(staged.data)
        for app in self.apps.values():
            if app.manifest_path == path:
                return app.manifest
        raise NotFound(f"manifest not found: {path}", resource="file")

    # Install -------------------------------------------------------------------------------
    def install_package(self, manifest_path: str, image_path: str, force: bool) -> str:
        if not manifest_path:
            raise InvalidInput("manifest_path is required")
        self._purge_tasks()
        task_id = self._task_id()
        task = Task(task_id, self.env.now)
        self.tasks[task_id] = task
        self.env.process(self._install(task, manifest_path, image_path, force))
        return task_id

    def _task_id(self) -> str:
        """The first 8 hex digits of a fresh random UUID (drawn again if a kept task has them)."""
        stream = self.world.streams.get(f"{self.camera_id}/tasks")
        while True:
            task_id = uuid.UUID(bytes=stream.bytes(16), version=4).hex[:8]
            if task_id not in self.tasks:
                return task_id

    def install_progress(self, task_id: str) -> InstallTask:
        self._purge_tasks()
        task = self.tasks.get(task_id)
        if task is None:
            raise InternalError(f"rpc error: code = NotFound desc = task not found: {task_id}")
        return task.view()

    def _purge_tasks(self) -> None:
        for task_id in [t for t, task in self.tasks.items() if self.env.now - task.created > TASK_TTL_S]:
            del self.tasks[task_id]

    def _install(self, task: Task, manifest_path: str, image_path: str, force: bool):
        try:
            for pct in (0, 2, 4, 5):
                task.percent = pct
                yield self.env.timeout(PHASE_STEP_S)
            manifest = self._check(manifest_path, image_path, force)
            task.phase, task.percent, task.message = "pulling", 10.0, f"Importing image {manifest.image}"
            if image_path:
                size = self.staged[image_path].size
                yield self.env.timeout(max(PHASE_STEP_S, size / IMPORT_RATE))
                self._import(manifest, image_path)
            task.percent = 80.0
            task.phase, task.message = "registering", "Registering application"
            for pct in (85, 90, 95):
                task.percent = pct
                yield self.env.timeout(PHASE_STEP_S)
            updated = self._register(manifest, manifest_path)
            task.phase, task.percent, task.app_id = "complete", 100.0, manifest.app_id
            task.message = "Application updated" if updated else "Application installed"
        except DomainError as err:
            task.phase, task.error = "error", err.message
            task.message = f"Installation failed: {err.message}"

    def install(self, manifest_path: str, image_path: str, force: bool) -> InstallResult:
        """The synchronous ``POST apps``."""
        manifest = self._check(manifest_path, image_path, force)
        if image_path:
            self._import(manifest, image_path)
        updated = self._register(manifest, manifest_path)
        return InstallResult(
            "Application updated" if updated else "Application installed", manifest.app_id, updated
        )

    def wizard(self, app_id: str, name: str, image: str, config: dict[str, object]) -> InstallResult:
        self.containers.image(image)
        doc = {
            "apiVersion": "v1",
            "kind": "Application",
            "metadata": {"id": app_id, "name": name, "version": str(config.get("version", "1.0.0"))},
            "spec": {"image": image, **{k: v for k, v in config.items() if k != "version"}},
        }
        manifest = app_manifest.parse(json.dumps(doc))
        if manifest.app_id in self.apps:
            raise Conflict(f"app {app_id} already installed")
        self._register(manifest, f"{APPS_DIR}/{app_id}/app.yaml")
        return InstallResult("Application installed", app_id, False)

    def _check(self, manifest_path: str, image_path: str, force: bool) -> Manifest:
        manifest = self._manifest_at(manifest_path)
        if image_path and image_path not in self.staged:
            raise NotFound(f"image archive not found: {image_path}", resource="file")
        existing = self.apps.get(manifest.app_id)
        if existing is not None and not force:
            raise Conflict(f"app {manifest.app_id} is already installed (use force to update)")
        if existing is not None and existing.state == "running":
            raise Conflict(
                f"app {manifest.app_id} is running: stop it before updating", resource="app_running"
            )
        if not image_path and manifest.image not in self.containers.images:
            raise NotFound(f"image {manifest.image} not found on the device", resource="image")
        return manifest

    def _import(self, manifest: Manifest, image_path: str) -> None:
        staged = self.staged[image_path]
        compressed = staged.filename.lower().endswith((".gz", ".tgz"))
        unpacked = int(staged.size * (GZIP_EXPANSION if compressed else 1.0))
        self.containers.import_image(manifest.image, staged.size, unpacked)
        self._unstage(image_path)

    def _register(self, manifest: Manifest, manifest_path: str) -> bool:
        fs = self.fs
        old = self.apps.get(manifest.app_id)
        if old is not None:
            self._remove_container(old, keep_logs=True)
        instance_manifest = f"{APPS_DIR}/{manifest.app_id}/app.yaml"
        text = self.staged[manifest_path].data if manifest_path in self.staged else b""
        write_file(fs, instance_manifest, text or yaml.safe_dump(manifest.raw).encode())
        self._unstage(manifest_path)
        self.apps[manifest.app_id] = App(manifest, instance_manifest, self.clock.now())
        self.durable.files.save(self.apps[manifest.app_id].instance_path)
        self.durable.save()
        return old is not None

    # Queries -------------------------------------------------------------------------------
    def _app(self, app_id: str) -> App:
        app = self.apps.get(app_id)
        if app is None:
            raise _rpc_not_found(app_id)
        return app

    def get(self, app_id: str) -> AppInfo:
        app = self._app(app_id)
        container = self.containers.containers.get(app.container_id)
        running = container is not None and container.state == "running"
        state = app.state
        if state == "running" and not running:
            state = "stopped"
        m = app.manifest
        return AppInfo(
            id=app.id,
            name=m.name,
            version=m.version,
            state=state,
            installed_at=int(app.installed_at),
            started_at=int(app.started_at),
            stopped_at=int(app.stopped_at),
            manifest_path=app.manifest_path,
            instance_path=app.instance_path,
            container_id=app.container_id if container is not None else "",
            pid=container.pid if running and container is not None else 0,
            restart_count=app.restart_count,
            permissions=m.permissions or None,
            description=m.description,
            image=m.image,
        )

    def list(self) -> tuple[AppInfo, ...]:
        return tuple(self.get(a) for a in sorted(self.apps))

    def permissions(self, app_id: str) -> dict[str, object]:
        return dict(self._app(app_id).manifest.permissions)

    def apps_using_model(self, model_id: str, name: str) -> set[str]:
        return {
            a.id for a in self.apps.values() if model_id in a.manifest.models or name in a.manifest.models
        }

    def logs(self, app_id: str, max_lines: int) -> tuple[LogLine, ...]:
        app = self._app(app_id)
        container = self.containers.containers.get(app.container_id)
        if container is None:
            return ()
        lines = list(container.logs)
        return tuple(lines[-max_lines:] if max_lines > 0 else lines)

    def stats(self, app_id: str) -> AppStats:
        app = self._app(app_id)
        runtime = self.containers
        container = runtime.containers.get(app.container_id)
        cpu, mem = runtime.usage(container) if container is not None else (0.0, 0)
        running = container is not None and container.state == "running"
        uptime = int(self.clock.now() - app.started_at) if running else 0
        return AppStats(app.id, uptime, cpu, mem, app.manifest.memory)

    # Lifecycle -----------------------------------------------------------------------------
    def begin_start(self, app_id: str, deadline: float | None = None) -> simpy.Event:
        """Start the app's container; the event succeeds with None or the error (see
        ``ContainerRuntime.start``). The caller applies the 10-s deadline."""
        app = self._app(app_id)
        runtime = self.containers
        container = runtime.containers.get(app.container_id)
        if container is not None and container.state == "running":
            raise Conflict(f"app {app_id} is already running", resource="app_running")
        container = self.runtime.container(app)
        started = runtime.start(container.id, self._workload, deadline)
        done = self.env.event()

        def _settle(event: simpy.Event) -> None:
            error = event.value
            now = self.clock.now()
            if error is None:
                app.state, app.started_at, app.last_error = "running", now, ""
            else:
                app.state, app.last_error = "failed", error.message
            self.durable.save()
            done.succeed(error)

        started.callbacks.append(_settle)
        return done

    def begin_stop(self, app_id: str) -> simpy.Event:
        app = self._app(app_id)
        container = self.containers.containers.get(app.container_id)
        if container is None or container.state != "running":
            raise InvalidInput(f"app {app_id} is not running", resource="app_not_running")
        done = self.containers.stop(container.id)

        def _settle(_: simpy.Event) -> None:
            self.runtime.detach(app)
            app.state, app.stopped_at = "stopped", self.clock.now()
            self.durable.save()

        done.callbacks.append(_settle)
        return done

    # Power -------------------------------------------------------------------------------------
    def power_down(self) -> None:
        """The device goes down: every container with it; the platform's services come back fresh."""
        self._power_down()

    def power_up(self) -> None:
        """The device is up again: apps whose manifest says ``autostart`` start (one whose image is
        gone stays down, as its start fails on the device), after the models whose desired state is
        ``loaded``."""
        self.ai.reload_desired()
        for app in list(self.apps.values()):
            if app.manifest.autostart and app.state != "running":
                try:
                    self.begin_start(app.id)
                except DomainError as err:
                    app.state, app.last_error = "failed", err.message

    def _power_down(self) -> None:
        runtime = self.containers
        for container in list(runtime.containers.values()):
            runtime.kill(container.id)
        now = self.clock.now()
        for app in self.apps.values():
            self.runtime.detach(app)
            if app.state == "running":
                app.state, app.stopped_at = "stopped", now
        self.ai.power_cycle()
        self.events.start()
        self.monitor.killed.clear()

    def count_restart(self, app_id: str) -> None:
        self._app(app_id).restart_count += 1

    def break_health(self, app_id: str, broken: bool = True) -> None:
        """The app stops answering its health probe (a hung worker); ``False`` heals it."""
        self._app(app_id).unhealthy = broken

    def _workload(self, container: Container):
        return self.runtime.run(self.apps[container.app_id], container)

    def uninstall(self, app_id: str, keep_logs: bool) -> None:
        app = self._app(app_id)
        self._remove_container(app, keep_logs=keep_logs)
        runtime = self.containers
        del self.apps[app_id]
        image = app.manifest.image
        if image in runtime.images and not any(a.manifest.image == image for a in self.apps.values()):
            runtime.remove_image(image)
        fs = self.fs
        remove_file(fs, app.manifest_path)
        self.durable.files.drop(app.manifest_path)
        if fs.exists(app.instance_path) and not fs.listdir(app.instance_path):
            fs.remove(app.instance_path)
            self.durable.files.drop(app.instance_path)
        self.durable.save()

    def _remove_container(self, app: App, keep_logs: bool) -> None:
        runtime = self.containers
        if app.container_id in runtime.containers:
            runtime.kill(app.container_id)
            runtime.delete(app.container_id, keep_logs=keep_logs)
        self.runtime.detach(app)
