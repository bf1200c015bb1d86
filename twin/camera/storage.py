"""A camera's block storage: the small root partition and the large data partition, each a
``simpy.Container`` of bytes, with every byte above the OS baseline charged to a named owner.

Owners are free-form strings chosen by whoever writes: ``"vfs:/data/aipc/x.bin"``,
``"image:yolo:1.0"``, ``"container:abc123"``, ``"logs:stale"``, ``"coredump"``. ``free(owner)``
gives back everything an owner holds, on every partition; ``release`` gives back part of it.

A write that does not fit raises ``StorageFull`` (the gateway answers 8003 / HTTP 507) and
changes nothing. ``fill`` provokes the "root partition filled by stale logs or core dumps" case.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.errors import Conflict, Forbidden, InvalidInput, NotFound, StorageFull
from hardware.ports.gateway_monitor import PartitionUsage
from twin.camera.durable import Durable, NotDurable

if TYPE_CHECKING:
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

GB = 1_000_000_000
MB = 1_000_000

ROOT, DATA, SDCARD = "root", "data", "sdcard"


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    name: str
    device: str
    mountpoint: str
    fstype: str
    total: int
    baseline: int
    """Bytes the OS image itself occupies: never charged to an owner, never freed."""
    label: str = ""
    removable: bool = False


# Layout of a legacy device: p1 boot, p2 rootfs, p3 data. Root ≈3.3 GB, data ≈53 GB.
PARTITIONS: tuple[PartitionSpec, ...] = (
    PartitionSpec(ROOT, "/dev/mmcblk0p2", "/", "ext4", 3_300 * MB, 2_410 * MB, "rootfs"),
    PartitionSpec(DATA, "/dev/mmcblk0p3", "/data", "ext4", 53_000 * MB, 1_180 * MB, "data"),
    PartitionSpec(SDCARD, "/dev/mmcblk1p1", "", "exfat", 63_864 * MB, 2 * MB, "SDCARD", removable=True),
)
"""The SD card in the slot starts unmounted (``mountpoint ""``)."""
MOUNT_ROOTS = ("/mnt/", "/media/")
FSTYPES = ("ext4", "vfat")
"""What ``FormatDisk`` makes (``mkfs.ext4``, ``mkfs.vfat``; the API's ``fat32`` is ``vfat``)."""


class Partition:
    def __init__(self, env: simpy.Environment, spec: PartitionSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self.bytes = simpy.Container(env, capacity=spec.total, init=spec.baseline)
        self.charges: dict[str, int] = defaultdict(int)
        self.mountpoint = spec.mountpoint
        self.fstype = spec.fstype

    @property
    def used(self) -> int:
        return int(self.bytes.level)

    @property
    def free(self) -> int:
        return self.spec.total - self.used

    def charge(self, owner: str, nbytes: int) -> None:
        if nbytes > self.free:
            raise StorageFull(
                f"no space left on device: {self.mountpoint} needs {nbytes} bytes, {self.free} free",
                resource="partition",
                partition=self.name,
                needed=nbytes,
                free=self.free,
            )
        if nbytes:
            self.bytes.put(nbytes)  # fits, so the put succeeds at once
            self.charges[owner] += nbytes

    def release(self, owner: str, nbytes: int | None = None) -> int:
        held = self.charges.get(owner, 0)
        amount = held if nbytes is None else min(held, max(0, nbytes))
        if amount:
            self.bytes.get(amount)  # never more than the level, so the get succeeds at once
            if amount == held:
                del self.charges[owner]
            else:
                self.charges[owner] = held - amount
        return amount

    def usage(self) -> PartitionUsage:
        spec = self.spec
        return PartitionUsage(
            name=spec.name,
            device=spec.device,
            mountpoint=self.mountpoint,
            fstype=self.fstype,
            total=spec.total,
            used=self.used,
            is_system=spec.mountpoint == "/",
            is_removable=spec.removable,
            is_protected=not spec.removable,
            label=spec.label,
        )


class Storage:
    """The partitions of one camera, and the storage port: a format is written to the durable
    platform (``durable``, wired by the camera)."""

    def __init__(self, world: Engine, camera_id: str) -> None:
        self.world = world
        self.camera_id = camera_id
        self.partitions: dict[str, Partition] = {spec.name: Partition(world.env, spec) for spec in PARTITIONS}
        self.durable: Durable = NotDurable()

    def partition(self, name: str) -> Partition:
        try:
            return self.partitions[name]
        except KeyError:
            raise InvalidInput(f"unknown partition {name!r}", resource="parameter") from None

    def partition_for(self, path: str) -> str:
        """The partition an absolute path lives on: the longest matching mountpoint."""
        best, best_len = ROOT, 0
        for p in self.partitions.values():
            if not p.mountpoint:
                continue
            mount = p.mountpoint.rstrip("/")
            if (path == mount or path.startswith(mount + "/")) and len(mount) >= best_len:
                best, best_len = p.name, len(mount)
        return best

    # Charging ------------------------------------------------------------------------------
    def charge(self, partition: str, owner: str, nbytes: int) -> None:
        """Take ``nbytes`` on ``partition`` for ``owner``; ``StorageFull`` and no change if it
        does not fit."""
        if nbytes < 0:
            raise InvalidInput("negative size", resource="parameter")
        self.partition(partition).charge(owner, int(nbytes))

    def charge_path(self, path: str, owner: str, nbytes: int) -> str:
        """Charge the partition ``path`` lives on; returns that partition's name."""
        name = self.partition_for(path)
        self.charge(name, owner, nbytes)
        return name

    def release(self, partition: str, owner: str, nbytes: int | None = None) -> int:
        """Give back up to ``nbytes`` (all when None) held by ``owner`` on one partition."""
        return self.partition(partition).release(owner, nbytes)

    def free(self, owner: str) -> int:
        """Give back everything ``owner`` holds on every partition; returns the bytes freed."""
        return sum(p.release(owner) for p in self.partitions.values())

    def free_prefix(self, prefix: str) -> int:
        """Free every owner whose name starts with ``prefix`` (``"logs:"``, ``"app:cam-demo"``)."""
        total = 0
        for p in self.partitions.values():
            for owner in [o for o in p.charges if o.startswith(prefix)]:
                total += p.release(owner)
        return total

    def held(self, owner: str, partition: str | None = None) -> int:
        parts = [self.partition(partition)] if partition else self.partitions.values()
        return sum(p.charges.get(owner, 0) for p in parts)

    def owners(self, partition: str) -> dict[str, int]:
        return dict(self.partition(partition).charges)

    # Reading -------------------------------------------------------------------------------
    def usage(self) -> tuple[PartitionUsage, ...]:
        return tuple(p.usage() for p in self.partitions.values())

    def used(self, partition: str) -> int:
        return self.partition(partition).used

    def free_bytes(self, partition: str) -> int:
        return self.partition(partition).free

    # Removable media -----------------------------------------------------------------------
    def by_device(self, device: str) -> Partition:
        name = device.removeprefix("/dev/")
        for p in self.partitions.values():
            if p.spec.device.removeprefix("/dev/") == name:
                return p
        raise NotFound(f"device not found: {device}")

    def disks(self) -> dict[str, object]:
        """``lsblk -b -J``: the eMMC with its boot partition and the system partitions, and each
        removable card as a disk of its own."""
        parts = self.usage()
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
        p = self.by_device(device)
        if not p.spec.removable:
            raise Forbidden(f"access denied: {device} is a system partition", resource="path")
        if p.mountpoint:
            raise Conflict(f"{device} is already mounted at {p.mountpoint}")
        if not target.startswith(MOUNT_ROOTS) or ".." in target.split("/"):
            raise InvalidInput("target must be a directory under /mnt or /media", resource="parameter")
        if any(q.mountpoint == target for q in self.partitions.values()):
            raise Conflict(f"{target} is already a mount point")
        p.mountpoint = target.rstrip("/")

    def unmount(self, target: str) -> None:
        if not target:
            raise InvalidInput("target is required")
        p = next(
            (q for q in self.partitions.values() if q.mountpoint and q.mountpoint == target.rstrip("/")), None
        )
        if p is None:
            if target in ("/boot", "/boot/firmware"):
                raise Forbidden(f"access denied: {target} is a protected mount point", resource="path")
            raise NotFound(f"not mounted: {target}")
        if not p.spec.removable:
            raise Forbidden(f"access denied: {target} is a protected mount point", resource="path")
        p.mountpoint = ""

    def format(self, device: str, fstype: str) -> None:
        if not device or not fstype:
            raise InvalidInput("device and fstype are required")
        if fstype not in FSTYPES:
            raise InvalidInput("Unsupported filesystem type")
        if device.removeprefix("/dev/").startswith("mmcblk0"):
            raise Forbidden(f"access denied: {device} holds a system partition", resource="path")
        p = self.by_device(device)
        p.mountpoint = ""  # FormatDisk unmounts it first
        for owner in list(p.charges):
            p.release(owner)
        p.fstype = fstype
        self.durable.save()

    # Provoking -----------------------------------------------------------------------------
    def fill(self, partition: str = ROOT, owner: str = "logs:stale", leave: int = 0) -> int:
        """Stale logs or core dumps take all but ``leave`` bytes of ``partition``; returns the
        bytes taken. Undo with ``free(owner)`` (or ``free_prefix("logs:")``)."""
        p = self.partition(partition)
        amount = max(0, p.free - leave)
        p.charge(owner, amount)
        return amount

    # Snapshot ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {name: dict(p.charges) for name, p in self.partitions.items()}

    def set_state(self, state: dict[str, Any]) -> None:
        for name, charges in state.items():
            if name in self.partitions:
                p = self.partitions[name]
                for owner in list(p.charges):
                    p.release(owner)
                for owner, nbytes in charges.items():
                    p.charge(owner, int(nbytes))


# Files on the camera's file system ----------------------------------------------------------------
def write_file(fs: VirtualFS, path: str, data: bytes) -> None:
    """Write ``path`` on the camera's file system, which charges the partition it lives on."""
    fs.mkdir(path.rsplit("/", 1)[0] or "/")
    fs.write(path, data)


def remove_file(fs: VirtualFS, path: str) -> None:
    if fs.exists(path):
        fs.remove(path)


def is_dir(fs: VirtualFS, path: str) -> bool:
    if not fs.exists(path):
        return False
    return getattr(fs.stat(path), "kind", "") == "d"
