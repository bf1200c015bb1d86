"""What the edge gateway API needs for storage and monitoring: the partitions, the figures of the
machine a camera runs on (the simulated camera's, or the local host's) and the monitor area.

Sizes are bytes, times are unix seconds on the device clock unless a field says otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from hardware.ports.clock import Clock


@dataclass(frozen=True, slots=True)
class PartitionUsage:
    """One mounted (or unmounted removable) partition as ``df`` would show it."""

    name: str
    """Symbolic name inside the twin: ``root``, ``data`` or a removable disk's name."""
    device: str
    mountpoint: str
    fstype: str
    total: int
    used: int
    is_system: bool = False
    is_removable: bool = False
    is_protected: bool = False
    label: str = ""

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)

    @property
    def usage_percent(self) -> float:
        return round(100.0 * self.used / self.total, 2) if self.total else 0.0


@dataclass(frozen=True, slots=True)
class DiskUsage:
    """The partition a monitor summary shows."""

    mountpoint: str
    total: int
    used: int
    free: int

    @property
    def usage_percent(self) -> float:
        return round(100.0 * self.used / (self.used + self.free), 2) if self.used + self.free else 0.0


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    total: int
    used: int
    available: int
    free: int
    buffers: int
    cached: int
    swap_total: int = 0
    swap_used: int = 0
    swap_free: int = 0


@runtime_checkable
class MachineFigures(Protocol):
    """What a camera's monitor reads of the machine it reports on: the simulated camera's own
    figures, or the local Linux host's from ``/proc`` when its gateway runs on real hardware."""

    def cpu_usage(self) -> tuple[float, list[float]]:
        """Busy percent of all cores together and of each core."""

    def cpu_models(self) -> list[tuple[str, float]]:
        """(model name, MHz) of each core."""

    def arch(self) -> str:
        """The architecture as Go's ``runtime.GOARCH`` names it."""

    def memory(self) -> MemoryFigures: ...

    def disk(self) -> DiskUsage | None:
        """The partition the summary shows; None when there is none to show."""

    def interfaces(self) -> list[dict[str, object]]:
        """Each network interface: ``name``, ``bytes_sent``, ``bytes_recv``, ``packets_sent``,
        ``packets_recv``, ``errin``, ``errout``."""

    def host(self) -> dict[str, object]:
        """``hostname``, ``os``, ``platform``, ``platform_version``, ``kernel_version``,
        ``kernel_arch``, ``uptime_seconds``."""


@runtime_checkable
class GatewayStorage(Protocol):
    def usage(self) -> tuple[PartitionUsage, ...]:
        """Every partition, mounted or not."""

    def disks(self) -> dict[str, object]:
        """``lsblk -b -J`` output."""

    def mount(self, device: str, target: str) -> None: ...

    def unmount(self, target: str) -> None: ...

    def format(self, device: str, fstype: str) -> None: ...


@runtime_checkable
class GatewayMonitor(Protocol):
    """Figures computed from what runs in the world, as plain dicts of the device's fields."""

    def summary(self) -> dict[str, object]: ...

    def cpu(self) -> dict[str, object]: ...

    def memory(self) -> dict[str, object]: ...

    def network(self) -> dict[str, object]: ...

    def snapshot(self) -> dict[str, object]: ...

    def processes(self, sort: str, limit: int, search: str) -> dict[str, object]: ...

    def process(self, pid: int) -> dict[str, object]: ...

    def kill(self, pid: int, signal: str) -> dict[str, object]: ...

    def attitude(self, rate: float, clock: Clock) -> AsyncIterator[tuple[str, dict[str, object]]]:
        """The gyro's SSE events (``status``, ``orientation``, ``heartbeat``) paced at ``rate`` Hz
        on ``clock``."""
