"""The twin's implementation of the gateway's storage, AI, apps, containers, event-bus and monitor
areas, over one camera of the world. Calls that take device time (an app start, a stop) wait on
the world clock: in step mode they finish when time is advanced.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import simpy

from hardware.ports.errors import DomainError, InternalError, InvalidInput
from hardware.ports.gateway_apps import (
    AiStats,
    AppInfo,
    AppStats,
    BusSubscription,
    ContainerInfo,
    ContainerStats,
    ImageInfo,
    InstallResult,
    InstallTask,
    LineFeed,
    LogLine,
    ModelInfo,
    ModelUpload,
    ParsedModel,
    PartitionUsage,
    ShellSession,
    StagedManifest,
    TopicInfo,
)
from twin.camera import app_manifest, model_blobs
from twin.camera.area import CameraArea
from twin.camera.container_shell import ContainerShell
from twin.camera.containers import DEADLINE_EXCEEDED
from twin.camera.gateway_admin import TwinGatewayAdmin, TwinGatewayWorkbench
from twin.clock import SimClock
from twin.world import World

HEARTBEAT_S = 15.0
START_DEADLINE_S = 10.0
"""The platform's gRPC deadline for an app start."""


class _Area(CameraArea):
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        super().__init__(world, camera_id)
        self._clock = clock

    async def _settle(self, event: simpy.Event, deadline: float | None = None) -> None:
        """Wait for a world event that succeeds with None or an error; ``deadline`` in device
        seconds turns a late answer into the platform's DeadlineExceeded."""
        env = self._world.env
        waited: simpy.Event = event if deadline is None else env.any_of([event, env.timeout(deadline)])
        await self._clock.wait(waited)
        if not event.triggered:
            raise InternalError(DEADLINE_EXCEEDED, resource="deadline")
        if isinstance(event.value, DomainError):
            raise event.value

    def _saved(self) -> None:
        """Write the camera's durable platform document after a change made here."""
        self.camera.apps.durable.save()


class TwinGatewayAi(_Area):
    def capabilities(self) -> dict[str, object]:
        return self.camera.ai.capabilities()

    def models(self) -> tuple[ModelInfo, ...]:
        return self.camera.ai.list()

    def model(self, model_id: str) -> ModelInfo:
        return self.camera.ai.get(model_id)

    def upload(self, upload: ModelUpload) -> ModelInfo:
        info = self.camera.ai.upload(upload)
        self.camera.apps.durable.file_written(info.model_path)
        self._saved()
        return info

    def parse(self, filename: str, data: bytes) -> ParsedModel:
        parsed = model_blobs.parse(self.camera.ai, filename, data)
        self.camera.apps.durable.file_written(parsed.file_path)
        return parsed

    def register_parsed(self, model_id: str, file_hash: str, fields: dict[str, object]) -> ModelInfo:
        info = model_blobs.register(self.camera.ai, model_id, file_hash, fields)
        self._saved()
        return info

    def register(self, model_id: str, model_path: str, fields: dict[str, object]) -> ModelInfo:
        info = self.camera.ai.register(model_id, model_path, fields)
        self._saved()
        return info

    def scan(self) -> dict[str, int]:
        found = self.camera.ai.scan()
        self._saved()
        return found

    def load(self, model_id: str) -> ModelInfo:
        info = self.camera.ai.load(model_id)
        self._saved()
        return info

    def unload(self, model_id: str) -> ModelInfo:
        info = self.camera.ai.unload(model_id)
        self._saved()
        return info

    def delete(self, model_id: str) -> tuple[str, ...]:
        camera = self.camera
        path = camera.ai.get(model_id).model_path
        affected = camera.ai.delete(model_id)
        if not camera.fs.exists(path):
            camera.apps.durable.file_removed(path)
        self._saved()
        return affected

    def model_apps(self, model_id: str) -> tuple[str, ...]:
        return tuple(sorted(self.camera.ai.apps_of(model_id)))

    def stats(self) -> AiStats:
        return self.camera.ai.stats()


class TwinGatewayApps(_Area):
    def list(self) -> tuple[AppInfo, ...]:
        return self.camera.apps.list()

    def get(self, app_id: str) -> AppInfo:
        return self.camera.apps.info(app_id)

    def upload_image(self, filename: str, data: bytes) -> str:
        return self.camera.apps.upload_image(filename, data)

    def upload_manifest(self, filename: str, data: bytes) -> StagedManifest:
        path, _ = self.camera.apps.upload_manifest(filename, data)
        m = app_manifest.parse(data)
        return StagedManifest(path, m.app_id, m.name, m.version, m.description)

    def install_package(self, manifest_path: str, image_path: str, force: bool) -> str:
        return self.camera.apps.install_package(manifest_path, image_path, force)

    def install_progress(self, task_id: str) -> InstallTask:
        return self.camera.apps.install_progress(task_id)

    def install(self, manifest_path: str, image_path: str, force: bool) -> InstallResult:
        return self.camera.apps.install(manifest_path, image_path, force)

    def wizard(self, app_id: str, name: str, image: str, config: dict[str, object]) -> InstallResult:
        return self.camera.apps.wizard(app_id, name, image, config)

    async def start(self, app_id: str) -> None:
        await self._settle(self.camera.apps.begin_start(app_id, START_DEADLINE_S), START_DEADLINE_S)

    async def stop(self, app_id: str, timeout: int) -> None:
        await self._settle(self.camera.apps.begin_stop(app_id), float(timeout) if timeout > 0 else None)

    async def restart(self, app_id: str, timeout: int) -> None:
        apps = self.camera.apps
        if apps.info(app_id).state == "running":
            await self.stop(app_id, timeout)
        apps.count_restart(app_id)
        await self.start(app_id)

    def uninstall(self, app_id: str, keep_logs: bool) -> None:
        self.camera.apps.uninstall(app_id, keep_logs)

    def logs(self, app_id: str, max_lines: int) -> tuple[LogLine, ...]:
        return self.camera.apps.logs(app_id, max_lines)

    def stats(self, app_id: str) -> AppStats:
        return self.camera.apps.stats(app_id)

    def permissions(self, app_id: str) -> dict[str, object]:
        return self.camera.apps.permissions(app_id)

    def store_apps(
        self, category: str, search: str, featured: bool | None, page: int, page_size: int
    ) -> dict[str, object]:
        return self.camera.apps.store.apps(category, search, featured, page, page_size)

    def store_app(self, key: str) -> dict[str, object]:
        return self.camera.apps.store.app(key)

    def store_categories(self) -> list[dict[str, object]]:
        return self.camera.apps.store.categories()

    def store_tags(self) -> list[dict[str, object]]:
        return self.camera.apps.store.tags()

    def store_install(self, key: str, version: str, config: dict[str, object]) -> dict[str, object]:
        return self.camera.apps.store.install(key, version, config)

    def install_records(self) -> list[dict[str, object]]:
        return self.camera.apps.store.list()

    def install_record(self, app_id: str) -> dict[str, object]:
        return self.camera.apps.store.view(app_id)

    def create_install_record(self, fields: dict[str, object]) -> dict[str, object]:
        return self.camera.apps.store.record(fields)

    def update_install_record(self, app_id: str, fields: dict[str, object]) -> dict[str, object]:
        return self.camera.apps.store.update(app_id, fields)

    def delete_install_record(self, app_id: str) -> None:
        self.camera.apps.store.delete(app_id)


class TwinGatewayContainers(_Area):
    def list(self) -> tuple[ContainerInfo, ...]:
        runtime = self.camera.containers
        return tuple(runtime.info(c) for _, c in sorted(runtime.containers.items()))

    def get(self, container_id: str) -> ContainerInfo:
        runtime = self.camera.containers
        return runtime.info(runtime.get(container_id))

    def stats(self, container_id: str) -> ContainerStats:
        return self.camera.containers.stats(container_id)

    def logs(self, container_id: str, tail: int) -> tuple[str, ...]:
        return self.camera.containers.log_text(container_id, tail)

    def follow(self, container_id: str) -> LineFeed:
        return self.camera.containers.follow(container_id)

    async def start(self, container_id: str) -> None:
        runtime = self.camera.containers
        container = runtime.get(container_id)
        apps = self.camera.apps
        try:
            if container.app_id in apps.apps:
                await self._settle(apps.begin_start(container.app_id, START_DEADLINE_S), START_DEADLINE_S)
            else:
                await self._settle(runtime.start(container_id, deadline=START_DEADLINE_S), START_DEADLINE_S)
        finally:
            self._saved()

    async def stop(self, container_id: str) -> None:
        runtime = self.camera.containers
        container = runtime.get(container_id)
        apps = self.camera.apps
        try:
            if container.app_id in apps.apps and container.state == "running":
                await self._settle(apps.begin_stop(container.app_id))
            else:
                await self._settle(runtime.stop(container_id))
        finally:
            self._saved()

    async def restart(self, container_id: str) -> None:
        await self.stop(container_id)
        await self.start(container_id)

    def remove(self, container_id: str) -> None:
        self.camera.containers.remove(container_id)
        self._saved()

    def shell(self, container_id: str) -> ShellSession:
        runtime = self.camera.containers
        container = runtime.get(container_id)
        if container.state != "running":
            raise InvalidInput(f"container {container_id} is not running")
        return ContainerShell(runtime, container)

    def images(self) -> tuple[ImageInfo, ...]:
        return self.camera.containers.image_infos()

    def pull(self, image: str) -> None:
        self.camera.containers.pull(image)

    def delete_image(self, image: str) -> None:
        self.camera.containers.delete_image(image)
        self._saved()


class TwinGatewayEvents(_Area):
    def topics(self) -> tuple[TopicInfo, ...]:
        return self.camera.events.topics()

    def publish(self, topic: str, payload: dict[str, object]) -> str:
        return self.camera.events.publish(topic, payload)

    def stream(self) -> BusSubscription:
        return self.camera.events.stream()


class TwinGatewayStorage(_Area):
    def partitions(self) -> tuple[PartitionUsage, ...]:
        return self.camera.storage.usage()

    def disks(self) -> dict[str, object]:
        parts = self.camera.storage.usage()
        children: list[dict[str, Any]] = [
            {
                "name": "mmcblk0p1",
                "size": 268_435_456,
                "type": "part",
                "mountpoint": "/boot",
                "fstype": "vfat",
                "model": None,
                "vendor": None,
            }
        ]
        for p in parts:
            if p.is_removable:
                continue
            children.append(
                {
                    "name": p.device.removeprefix("/dev/"),
                    "size": p.total,
                    "type": "part",
                    "mountpoint": p.mountpoint,
                    "fstype": p.fstype,
                    "model": None,
                    "vendor": None,
                }
            )
        total = sum(int(c["size"]) for c in children) + 4 * 1024**2
        disk = {
            "name": "mmcblk0",
            "size": total,
            "type": "disk",
            "mountpoint": None,
            "fstype": None,
            "model": None,
            "vendor": None,
            "children": children,
        }
        devices = [disk]
        for p in parts:
            if p.is_removable:
                name = p.device.removeprefix("/dev/")
                child = {"name": name, "size": p.total, "type": "part", "mountpoint": p.mountpoint or None}
                child |= {"fstype": p.fstype, "model": None, "vendor": None}
                devices.append(
                    {"name": name[:-2], "size": p.total + 1024**2, "type": "disk", "mountpoint": None,
                     "fstype": None, "model": "SD64G", "vendor": None, "children": [child]}
                )  # fmt: skip
        return {"blockdevices": devices}

    def mount(self, device: str, target: str) -> None:
        if not device or not target:
            raise InvalidInput("device and target are required")
        self.camera.storage.mount(device, target)

    def unmount(self, target: str) -> None:
        if not target:
            raise InvalidInput("target is required")
        self.camera.storage.unmount(target)

    def format(self, device: str, fstype: str) -> None:
        if not device or not fstype:
            raise InvalidInput("device and fstype are required")
        self.camera.storage.format(device, fstype)
        self._saved()


class TwinGatewayMonitor(_Area):
    def summary(self) -> dict[str, object]:
        return self.camera.monitor.summary()

    def cpu(self) -> dict[str, object]:
        return self.camera.monitor.cpu()

    def memory(self) -> dict[str, object]:
        return self.camera.monitor.memory()

    def network(self) -> dict[str, object]:
        return self.camera.monitor.network()

    def snapshot(self) -> dict[str, object]:
        return self.camera.monitor.snapshot()

    def processes(self, sort: str, limit: int, search: str) -> dict[str, object]:
        return self.camera.monitor.processes(sort, limit, search)

    def process(self, pid: int) -> dict[str, object]:
        return self.camera.monitor.process(pid)

    def kill(self, pid: int, signal: str) -> dict[str, object]:
        return self.camera.monitor.kill(pid, signal)

    async def attitude(self, rate: float) -> AsyncIterator[tuple[str, dict[str, object]]]:
        """The IMU's SSE events on the world clock: ``status`` first, ``orientation`` at ``rate``
        a second, ``heartbeat`` every 15 s."""
        yield "status", {"sensor": "online"}
        period = 1.0 / rate
        next_beat = self._world.env.now + HEARTBEAT_S
        while True:
            await self._clock.sleep(period, background=True)
            pitch, roll = self.camera.monitor.attitude()
            yield "orientation", {"pitch": pitch, "roll": roll}
            if self._world.env.now >= next_beat:
                next_beat += HEARTBEAT_S
                yield "heartbeat", {"timestamp": int(self.camera.clock.now() * 1000)}


class AppAreas:
    """Builds the eight areas for one camera and hangs them on a gateway backend."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self.ai = TwinGatewayAi(world, clock, camera_id)
        self.apps = TwinGatewayApps(world, clock, camera_id)
        self.containers = TwinGatewayContainers(world, clock, camera_id)
        self.events = TwinGatewayEvents(world, clock, camera_id)
        self.storage = TwinGatewayStorage(world, clock, camera_id)
        self.monitor = TwinGatewayMonitor(world, clock, camera_id)
        self.admin = TwinGatewayAdmin(world, camera_id)
        self.workbench = TwinGatewayWorkbench(world, camera_id)

    def attach(self, backend: Any) -> None:
        for name in ("ai", "apps", "containers", "events", "storage", "monitor", "admin", "workbench"):
            setattr(backend, name, getattr(self, name))
