"""The local Linux host's figures behind the gateway's monitor port, for a camera whose gateway runs
on real hardware: CPU from ``/proc/stat`` (the busy share between two reads), memory and swap from
``/proc/meminfo``, the disk from ``/proc/mounts`` and ``os.statvfs``, uptime from ``/proc/uptime``,
interfaces from ``/proc/net/dev``, hostname and kernel from ``/proc/sys/kernel``, the distribution
from ``/etc/os-release``. Shapes and formulas are the device's (its handler reads the same files
through gopsutil). Only figures are read, from fixed paths: nothing a client names.

Processes, signals, the NPU, temperatures and the gyro stay the simulated camera's (``inner``).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from hardware.ports.errors import Unavailable
from hardware.ports.gateway_apps import GatewayMonitor

MIN_WINDOW_TICKS = 100
"""A CPU reading spans at least this many clock ticks of ``/proc/stat``'s ``cpu`` line (all cores
together: half a second on two cores at USER_HZ 100); a sooner read reuses the baseline before."""
PSEUDO_FSTYPES = frozenset(
    {
        *("sysfs", "proc", "devfs", "devtmpfs", "securityfs", "tmpfs", "cgroup", "cgroup2", "pstore"),
        *("debugfs", "tracefs", "configfs", "fusectl", "mqueue", "hugetlbfs", "overlay"),
    }
)
"""File systems the device's summary never counts as a disk."""
GOARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "armv6l": "arm", "i686": "386"}
"""The handler reports Go's ``runtime.GOARCH``."""

Ticks = dict[str, tuple[int, int]]
"""``/proc/stat`` cpu lines: name -> (busy ticks, all ticks)."""


@dataclass(frozen=True, slots=True)
class DiskUsage:
    mountpoint: str
    total: int
    used: int
    free: int

    @property
    def usage_percent(self) -> float:
        return round(100.0 * self.used / (self.used + self.free), 2) if self.used + self.free else 0.0


class HostFigures:
    """Reads the host's figures under ``root`` (``/proc``; a test gives a directory of its own)."""

    def __init__(
        self,
        root: Path | str = "/proc",
        *,
        os_release: Path | str = "/etc/os-release",
        min_window: int = MIN_WINDOW_TICKS,
    ) -> None:
        self.root = Path(root)
        self.os_release = Path(os_release)
        self.min_window = min_window
        self._base: Ticks | None = None
        self._before: Ticks | None = None

    def _text(self, name: str) -> str:
        try:
            return (self.root / name).read_text()
        except OSError as err:
            raise Unavailable(f"host figures: cannot read {name}: {err.strerror}") from err

    # CPU -----------------------------------------------------------------------------------------
    def _ticks(self) -> Ticks:
        out: Ticks = {}
        for line in self._text("stat").splitlines():
            name, *fields = line.split()
            if not name.startswith("cpu"):
                continue
            values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
            idle = values[3] + (values[4] if len(values) > 4 else 0)
            out[name] = (sum(values) - idle, sum(values))
        if "cpu" not in out:
            raise Unavailable("host figures: /proc/stat has no cpu line")
        return out

    def cpu_usage(self) -> tuple[float, list[float]]:
        """Busy percent of all cores and of each core, between this read and the baseline: the
        previous read at least :attr:`min_window` ticks ago (since boot on the first reads)."""
        now = self._ticks()
        if self._base is not None and now["cpu"][1] - self._base["cpu"][1] >= self.min_window:
            ref = self._base
            self._before, self._base = self._base, now
        else:
            ref = self._before or {}
            if self._base is None:
                self._base = now

        def percent(name: str) -> float:
            busy, total = now[name]
            busy0, total0 = ref.get(name, (0, 0))
            span = total - total0
            return round(min(100.0, max(0.0, 100.0 * (busy - busy0) / span)), 2) if span > 0 else 0.0

        cores = sorted((n for n in now if n != "cpu"), key=lambda n: int(n[3:]))
        return percent("cpu"), [percent(n) for n in cores]

    def cpu_models(self) -> list[tuple[str, float]]:
        """(model name, MHz) of each processor in ``/proc/cpuinfo``."""
        out: list[tuple[str, float]] = []
        for block in self._text("cpuinfo").split("\n\n"):
            pairs = (line.partition(":") for line in block.splitlines())
            fields = {k.strip(): v.strip() for k, sep, v in pairs if sep}
            if "processor" not in fields:
                continue
            model = fields.get("model name") or fields.get("Processor") or fields.get("CPU part", "")
            try:
                mhz = float(fields.get("cpu MHz", "0"))
            except ValueError:
                mhz = 0.0
            out.append((model, mhz))
        return out

    # Memory --------------------------------------------------------------------------------------
    def meminfo(self) -> dict[str, int]:
        """``/proc/meminfo`` in bytes."""
        out = {}
        for line in self._text("meminfo").splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[key] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
        return out

    # Disk, uptime, network, host -----------------------------------------------------------------
    def mountpoints(self) -> list[str]:
        """Where ``mounts`` has a real file system (the device's pseudo and overlay types left out) on
        a device that is still there; ``/`` when there is none (a container's overlay root)."""
        out = []
        for line in self._text("mounts").splitlines():
            fields = line.split()
            if len(fields) < 3 or fields[2] in PSEUDO_FSTYPES or not os.path.exists(fields[0]):
                continue
            mountpoint = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
            if mountpoint not in out:
                out.append(mountpoint)
        return out or ["/"]

    def disk(self) -> DiskUsage | None:
        """The largest real partition, as the device picks the one its summary shows."""
        best = None
        for mountpoint in self.mountpoints():
            try:
                st = os.statvfs(mountpoint)
            except OSError:
                continue
            usage = DiskUsage(
                mountpoint,
                total=st.f_blocks * st.f_frsize,
                used=(st.f_blocks - st.f_bfree) * st.f_frsize,
                free=st.f_bavail * st.f_frsize,
            )
            if best is None or usage.total > best.total:
                best = usage
        return best

    def uptime(self) -> float:
        return float(self._text("uptime").split()[0])

    def interfaces(self) -> list[dict[str, object]]:
        rows = []
        for line in self._text("net/dev").splitlines()[2:]:
            name, sep, rest = line.partition(":")
            v = [int(x) for x in rest.split()]
            if not sep or len(v) < 11:
                continue
            rows.append(
                {
                    "name": name.strip(),
                    "bytes_sent": v[8],
                    "bytes_recv": v[0],
                    "packets_sent": v[9],
                    "packets_recv": v[1],
                    "errin": v[2],
                    "errout": v[10],
                }
            )
        return rows

    def host(self) -> dict[str, object]:
        release = {}
        try:
            for line in self.os_release.read_text().splitlines():
                key, sep, value = line.partition("=")
                if sep:
                    release[key.strip()] = value.strip().strip('"')
        except OSError:
            pass
        return {
            "hostname": self._text("sys/kernel/hostname").strip(),
            "os": "linux",
            "platform": release.get("ID", ""),
            "platform_version": release.get("VERSION_ID", ""),
            "kernel_version": self._text("sys/kernel/osrelease").strip(),
            "kernel_arch": os.uname().machine,
            "uptime_seconds": int(self.uptime()),
        }


class HostMonitor:
    """The gateway's monitor area with the host's CPU, memory, disk, network and host figures; the
    rest (processes, NPU, temperatures, gyro) is ``inner``'s."""

    def __init__(self, inner: GatewayMonitor, figures: HostFigures) -> None:
        self.inner = inner
        self.figures = figures

    def _memory(self) -> tuple[dict[str, object], dict[str, object]]:
        m = self.figures.meminfo()
        total, free, buffers = m.get("MemTotal", 0), m.get("MemFree", 0), m.get("Buffers", 0)
        cached = m.get("Cached", 0) + m.get("SReclaimable", 0)
        used = total - free - buffers - cached
        if used < 0:
            used = total - free
        swap_total, swap_free = m.get("SwapTotal", 0), m.get("SwapFree", 0)
        swap_used = swap_total - swap_free
        virtual = {
            "total": total,
            "used": used,
            "available": m.get("MemAvailable", free + buffers + cached),
            "free": free,
            "usage_percent": round(100.0 * used / total, 2) if total else 0.0,
            "buffers": buffers,
            "cached": cached,
        }
        swap = {
            "total": swap_total,
            "used": swap_used,
            "free": swap_free,
            "usage_percent": round(100.0 * swap_used / swap_total, 2) if swap_total else 0.0,
        }
        return virtual, swap

    def _network_totals(self) -> dict[str, int]:
        rows = self.figures.interfaces()
        return {
            "bytes_sent": sum(int(r["bytes_sent"]) for r in rows),  # type: ignore[call-overload]
            "bytes_recv": sum(int(r["bytes_recv"]) for r in rows),  # type: ignore[call-overload]
        }

    def summary(self) -> dict[str, object]:
        total, cores = self.figures.cpu_usage()
        virtual, swap = self._memory()
        disk = self.figures.disk()
        disk_data: dict[str, object] = {"total": 0, "used": 0, "free": 0, "usage_percent": 0.0}
        if disk is not None:
            disk_data = {
                "total": disk.total,
                "used": disk.used,
                "free": disk.free,
                "usage_percent": disk.usage_percent,
                "mountpoint": disk.mountpoint,
            }
        return {
            "cpu": {"usage_percent": total, "cores": len(cores), "arch": _goarch()},
            "memory": {
                "total": virtual["total"],
                "used": virtual["used"],
                "available": virtual["available"],
                "usage_percent": virtual["usage_percent"],
                "swap_total": swap["total"],
                "swap_used": swap["used"],
            },
            "disk": disk_data,
            "host": self.figures.host(),
            "network": self._network_totals(),
            "npu": self.inner.summary()["npu"],
        }

    def cpu(self) -> dict[str, object]:
        total, per_core = self.figures.cpu_usage()
        models = self.figures.cpu_models()
        cores = []
        for i, (model, mhz) in enumerate(models):
            entry: dict[str, object] = {"model": model, "mhz": mhz}
            if i < len(per_core):
                entry["usage_percent"] = per_core[i]
            cores.append(entry)
        return {"total_percent": total, "core_count": len(per_core), "cores": cores}

    def memory(self) -> dict[str, object]:
        virtual, swap = self._memory()
        return {"virtual": virtual, "swap": swap}

    def network(self) -> dict[str, object]:
        return {"interfaces": self.figures.interfaces()}

    def snapshot(self) -> dict[str, object]:
        total, _ = self.figures.cpu_usage()
        virtual, _ = self._memory()
        return {
            **self.inner.snapshot(),
            "cpu": total,
            "memory": virtual["usage_percent"],
            "network": self._network_totals(),
        }

    def processes(self, sort: str, limit: int, search: str) -> dict[str, object]:
        return self.inner.processes(sort, limit, search)

    def process(self, pid: int) -> dict[str, object]:
        return self.inner.process(pid)

    def kill(self, pid: int, signal: str) -> dict[str, object]:
        return self.inner.kill(pid, signal)

    def attitude(self, rate: float) -> AsyncIterator[tuple[str, dict[str, object]]]:
        return self.inner.attitude(rate)


def _goarch() -> str:
    machine = os.uname().machine
    return GOARCH.get(machine, machine)
