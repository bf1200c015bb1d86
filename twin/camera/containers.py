"""The camera's container runtime (containerd as the app manager drives it): images, containers
and their logs, with storage charged to the partition that holds the runtime's root.

Lifecycle of a container: ``created → (start) → running → (stop) → stopped``; a failed start leaves
it ``stopped``. Starting an image for the first time unpacks its snapshot first, at
``UNPACK_RATE`` bytes a second: a large image takes longer than the app manager's 10-s start
deadline, the unpack goes on, and the next start finds it ready.

Natural failures, each with a method that provokes it:

- the runtime root on the small root partition (``/var/lib/containerd``, the device's default):
  unpacking a big image fills it (``move_storage`` to ``data`` is the remedy);
- a declared volume whose host directory does not exist: the mount fails (``POST files/mkdir`` is
  the remedy);
- logs and core dumps on root (``write_core_dump``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING

import simpy

from hardware.ports.errors import Conflict, InternalError, InvalidInput, NotFound
from hardware.ports.gateway_apps import ContainerInfo, ContainerStats, ImageInfo, LogLine, ShellSession
from twin.camera.container_records import Container, Image, LogFollower, Volume, Workload, line_text
from twin.camera.container_shell import ContainerShell
from twin.camera.durable import Durable, NotDurable
from twin.camera.storage import DATA, ROOT, Storage, is_dir
from twin.rng import hash_normal, stream_key

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

DEADLINE_EXCEEDED = "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
UNPACK_RATE = 12_000_000
"""Bytes a second the device's eMMC unpacks an image snapshot at."""
START_S = 1.2
STOP_S = 0.4
STORAGE_ROOTS = {ROOT: "/var/lib/containerd", DATA: "/data/containerd"}


class ContainerRuntime:
    """The containers port: images, containers and their logs; a change made through the port is
    written to the durable platform (``durable``, wired by the camera)."""

    def __init__(
        self, world: Engine, camera_id: str, clock: DeviceClock, storage: Storage, fs: VirtualFS
    ) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.clock, self.storage, self.fs = clock, storage, fs
        self.exit_listeners: list[Callable[[str, str], None]] = []
        """Called with (app id, reason) when a running container ends other than by a stop."""
        self.storage_partition = ROOT
        self.images: dict[str, Image] = {}
        self.containers: dict[str, Container] = {}
        self.unpack_rate = UNPACK_RATE
        self._next_pid = 2400
        self.durable: Durable = NotDurable()

    # Provoking / remedies ------------------------------------------------------------------
    def move_storage(self, partition: str) -> None:
        """Put the runtime's root on ``partition`` (``root`` as shipped, ``data`` as advised).
        Images already imported move with it."""
        storage = self.storage
        storage.partition(partition)
        for image in self.images.values():
            for owner in (image.owner, f"snapshot:{image.ref}"):
                held = storage.held(owner, self.storage_partition)
                if held:
                    storage.charge(partition, owner, held)
                    storage.release(self.storage_partition, owner)
        self.storage_partition = partition

    def slow_storage(self, bytes_per_s: int) -> None:
        """A slow or worn eMMC: images unpack at ``bytes_per_s`` (first starts miss the deadline)."""
        if bytes_per_s <= 0:
            raise InvalidInput("bytes_per_s must be positive", resource="parameter")
        self.unpack_rate = bytes_per_s

    def fill_storage(self, leave: int) -> int:
        """Earlier images' content fills the runtime's partition, leaving ``leave`` bytes free;
        returns the bytes taken (owner ``image-cache``, freed by ``free_storage``)."""
        return self.storage.fill(self.storage_partition, "image-cache", leave=leave)

    def free_storage(self) -> int:
        return self.storage.free("image-cache")

    def host_dir_exists(self, path: str) -> bool:
        """Volume host directories are looked up on the camera's file system; nothing creates them."""
        return is_dir(self.fs, path)

    def write_core_dump(self, nbytes: int, name: str = "core.app") -> int:
        """A crashing process dumps core under ``/var/lib/systemd/coredump`` (root partition)."""
        storage = self.storage
        nbytes = min(nbytes, storage.free_bytes(ROOT))
        storage.charge(ROOT, f"coredump:{name}", nbytes)
        return nbytes

    # Images --------------------------------------------------------------------------------
    def import_image(self, ref: str, archive_size: int, unpacked_size: int) -> Image:
        """Import an archive into the content store (charged where the runtime's root is)."""
        if ref in self.images:
            self.remove_image(ref, force=True)
        self.storage.charge(self.storage_partition, f"image:{ref}", archive_size)
        digest = stream_key(self.world.seed, f"{self.camera_id}/image/{ref}/{archive_size}")
        image = Image(
            ref,
            f"sha256:{digest:016x}{digest ^ 0xA5A5A5A5:016x}",
            archive_size,
            unpacked_size,
            self.clock.now(),
        )
        self.images[ref] = image
        return image

    def image(self, ref: str) -> Image:
        image = self.images.get(ref)
        if image is None:
            raise NotFound(f"image not found: {ref}", resource="image")
        return image

    def image_infos(self) -> tuple[ImageInfo, ...]:
        used = {c.image for c in self.containers.values()}
        return tuple(
            ImageInfo(
                id=i.digest,
                name=i.ref,
                tags=(i.ref,),
                size=i.archive_size,
                created_at=i.created_at,
                in_use=i.ref in used,
            )
            for i in sorted(self.images.values(), key=lambda i: i.ref)
        )

    def delete_image(self, image: str) -> None:
        self.remove_image(image)
        self.durable.save()

    def remove_image(self, ref: str, *, force: bool = False) -> None:
        image = self.image(ref)
        if not force and any(c.image == ref for c in self.containers.values()):
            raise InternalError(f"image {ref} is in use by a container", resource="operation")
        self.storage.free(image.owner)
        self.storage.free(f"snapshot:{ref}")
        del self.images[ref]

    def pull(self, ref: str) -> None:
        raise InternalError(
            "Pulling remote images is disabled; upload an image archive instead", resource="operation"
        )

    # Containers ----------------------------------------------------------------------------
    def create(
        self,
        container_id: str,
        image: str,
        app_id: str,
        *,
        volumes: builtins.list[Volume] | None = None,
        env: dict[str, str] | None = None,
        cpu_limit: float = 0.5,
        memory_limit: int = 256 * 1024 * 1024,
    ) -> Container:
        if container_id in self.containers:
            raise Conflict(f"container {container_id} already exists")
        self.image(image)
        container = Container(
            container_id,
            image,
            app_id,
            self.clock.now(),
            volumes=list(volumes or []),
            env=dict(env or {}),
            cpu_limit=cpu_limit,
            memory_limit=memory_limit,
        )
        self.containers[container_id] = container
        return container

    def container(self, container_id: str) -> Container:
        container = self.containers.get(container_id)
        if container is None:
            raise NotFound(f"container not found: {container_id}", resource="container")
        return container

    def start(
        self, container_id: str, workload: Workload | None = None, deadline: float | None = None
    ) -> simpy.Event:
        """Start a container; the returned event succeeds with None, or with the ``DomainError``
        that stopped it (never fails, so nobody has to be waiting). With a ``deadline`` (the
        caller's gRPC deadline) a start that cannot be done in time is abandoned once the image is
        unpacked: the unpack itself is kept, so the next start is quick."""
        container = self.container(container_id)
        done = self.env.event()
        if container.state == "running":
            done.succeed(None)
            return done
        self.env.process(self._start(container, workload, done, deadline))
        return done

    def _start(
        self, container: Container, workload: Workload | None, done: simpy.Event, deadline: float | None
    ):
        image = self.images.get(container.image)
        began = self.env.now
        try:
            if image is None:
                raise InternalError(f"rpc error: code = NotFound desc = image {container.image!r}: not found")
            if image.broken:
                image.broken = False  # the next start unpacks again
                raise InternalError(
                    "rpc error: code = NotFound desc = failed to prepare extraction snapshot: "
                    f"parent snapshot {image.digest} does not exist: not found"
                )
            if not image.unpacked:
                if image.unpacking is None:
                    image.unpacking = self.env.process(self._unpack(image))
                error = yield image.unpacking
                if error is not None:
                    raise error
            for volume in container.volumes:
                if not self.host_dir_exists(volume.host):
                    raise InternalError(
                        "rpc error: code = Unknown desc = failed to create shim task: "
                        "OCI runtime create failed: runc create failed: unable to start container process: "
                        "error during container init: "
                        f'error mounting "{volume.host}" to rootfs at "{volume.container}": '
                        f"stat {volume.host}: no such file or directory"
                    )
            if deadline is not None and self.env.now + START_S - began > deadline:
                raise InternalError(DEADLINE_EXCEEDED, resource="deadline")
            yield self.env.timeout(START_S)
        except InternalError as err:
            container.state = "stopped"
            done.succeed(err)
            return
        self._next_pid += 7
        container.pid = self._next_pid
        container.state = "running"
        container.started_at = self.clock.now()
        container.stopped_at = None
        if workload is not None:
            container.workload = self.env.process(self._guard(container, workload))
        done.succeed(None)

    def _unpack(self, image: Image):
        """Write the image's snapshot a second's worth at a time; returns None or the error (a
        process's value). Running out of space stops it there and gives the partial snapshot back;
        the next start then finds its parent snapshot missing."""
        storage = self.storage
        owner = f"snapshot:{image.ref}"
        written = 0
        while written < image.unpacked_size:
            chunk = min(self.unpack_rate, image.unpacked_size - written)
            free = storage.free_bytes(self.storage_partition)
            if chunk > free:
                yield self.env.timeout(free / self.unpack_rate)
                storage.free(owner)
                image.unpacking = None
                image.broken = True
                root = STORAGE_ROOTS[self.storage_partition]
                return InternalError(
                    "rpc error: code = Unknown desc = failed to prepare extraction snapshot "
                    f'"extract-{int(self.env.now * 1e6)}-{image.digest[7:19]} {image.digest}": '
                    f"write {root}/io.containerd.snapshotter.v1.overlayfs/snapshots/"
                    f"{len(self.images)}/fs/usr/lib/libapp.so: no space left on device"
                )
            yield self.env.timeout(chunk / self.unpack_rate)
            storage.charge(self.storage_partition, owner, chunk)
            written += chunk
        image.unpacking = None
        image.unpacked = True
        return None

    def _guard(self, container: Container, workload: Workload):
        try:
            yield from workload(container)
        except simpy.Interrupt:
            return

    def unpacked_before(self, image: Image) -> None:
        """The image was unpacked in the world's past (:mod:`twin.past`): its snapshot is on disk and
        took no time now; ``StorageFull`` (and no change) when it does not fit."""
        if not image.unpacked:
            self.storage.charge(self.storage_partition, f"snapshot:{image.ref}", image.unpacked_size)
            image.unpacked = True

    def resume(self, container: Container, pid: int | None, workload: Workload | None) -> None:
        """Running again at once (a restored snapshot; ``pid`` None: the next one, as for an app
        running since the world's past): no unpack, no start time."""
        pid = self._next_pid + 7 if pid is None else pid
        container.state, container.pid = "running", pid
        self._next_pid = max(self._next_pid, pid)
        if workload is not None:
            container.workload = self.env.process(self._guard(container, workload))

    def stop(self, container_id: str) -> simpy.Event:
        container = self.container(container_id)
        done = self.env.event()
        if container.state != "running":
            done.succeed(None)
            return done
        self.env.process(self._stop(container, done))
        return done

    def _stop(self, container: Container, done: simpy.Event):
        yield self.env.timeout(STOP_S)
        self.kill(container.id)
        done.succeed(None)

    def kill(self, container_id: str, reason: str = "stopped") -> None:
        """Stop at once (SIGKILL, or the container's process killed)."""
        container = self.container(container_id)
        if container.workload is not None and container.workload.is_alive:
            container.workload.interrupt(reason)
        container.workload = None
        was_running = container.state == "running"
        if was_running:
            container.state = "stopped"
            container.stopped_at = self.clock.now()
        container.pid = 0
        if was_running and reason != "stopped":
            for listener in self.exit_listeners:
                listener(container.app_id, reason)

    def remove(self, container_id: str) -> None:
        self.delete(container_id)
        self.durable.save()

    def delete(self, container_id: str, *, keep_logs: bool = False) -> None:
        container = self.container(container_id)
        if container.state == "running":
            raise InvalidInput(f"container {container_id} is running: stop it first")
        for follower in list(container.followers):
            follower.end()
        if not keep_logs:
            self.storage.free(f"logs:{container_id}")
        del self.containers[container_id]

    # Logs ----------------------------------------------------------------------------------
    def log(self, container: Container, level: str, message: str) -> None:
        """Append a line to the container's log (kept on the root partition, like journald's)."""
        line = LogLine(int(self.world.now() * 1e9), level, message)
        storage = self.storage
        size = len(message) + 64
        if storage.free_bytes(ROOT) < size:
            return  # a full root partition swallows log lines
        storage.charge(ROOT, f"logs:{container.id}", size)
        container.block_write += size
        container.logs.append(line)
        text = line_text(line)
        for follower in list(container.followers):
            follower.offer(text)

    def logs(self, container_id: str, tail: int) -> tuple[str, ...]:
        container = self.container(container_id)
        lines = list(container.logs)[-tail:] if tail > 0 else list(container.logs)
        return tuple(line_text(ln) for ln in lines)

    def follow(self, container_id: str) -> LogFollower:
        container = self.container(container_id)
        follower = LogFollower(container)
        container.followers.add(follower)
        return follower

    def shell(self, container_id: str) -> ShellSession:
        container = self.container(container_id)
        if container.state != "running":
            raise InvalidInput(f"container {container_id} is not running")
        return ContainerShell(self, container)

    # Figures -------------------------------------------------------------------------------
    def usage(self, container: Container) -> tuple[float, int]:
        """(cpu percent of one core, memory bytes) of a running container: its app's load with
        noise per 5-s window; zero when not running."""
        if container.state != "running":
            return 0.0, 0
        key = stream_key(self.world.seed, f"{self.camera_id}/ctr/{container.id}")
        window = int(self.env.now // 5.0)
        n_cpu, n_mem = (float(v) for v in hash_normal(key, [window * 2, window * 2 + 1]))
        cpu = max(0.5, min(100.0 * container.cpu_limit, 100.0 * container.cpu_limit * (0.35 + 0.05 * n_cpu)))
        mem = int(container.memory_limit * max(0.1, min(0.95, 0.45 + 0.03 * n_mem)))
        return round(cpu, 2), mem

    def list(self) -> tuple[ContainerInfo, ...]:
        return tuple(self._info(c) for _, c in sorted(self.containers.items()))

    def get(self, container_id: str) -> ContainerInfo:
        return self._info(self.container(container_id))

    def _info(self, container: Container) -> ContainerInfo:
        cpu, mem = self.usage(container)
        return ContainerInfo(
            id=container.id,
            name=container.id,
            image=container.image,
            state=container.state,
            created_at=container.created_at,
            pid=container.pid,
            labels={"aipc.app_id": container.app_id} if container.app_id else None,
            cpu_percent=cpu,
            memory_usage=mem,
        )

    def stats(self, container_id: str) -> ContainerStats:
        container = self.container(container_id)
        cpu, mem = self.usage(container)
        up = (
            (self.clock.now() - container.started_at)
            if container.state == "running" and container.started_at
            else 0.0
        )
        return ContainerStats(
            cpu_usage=int(cpu / 100.0 * up * 1e9),
            cpu_percent=cpu,
            memory_usage=mem,
            memory_limit=container.memory_limit,
            network_rx=int(up * 1800),
            network_tx=int(up * 2400),
            block_read=container.block_read,
            block_write=container.block_write,
            pids=4 if container.state == "running" else 0,
        )
