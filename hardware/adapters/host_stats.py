"""The local Linux host's figures behind a camera's monitor, for a camera whose gateway runs on real
hardware: CPU from ``/proc/stat`` (the busy share between two reads), memory and swap from
``/proc/meminfo``, the disk from ``/proc/mounts`` and ``os.statvfs``, uptime from ``/proc/uptime``,
interfaces from ``/proc/net/dev``, hostname and kernel from ``/proc/sys/kernel``, the distribution
from ``/etc/os-release``. Shapes and formulas are the device's (its handler reads the same files
through gopsutil). Only figures are read, from fixed paths: nothing a client names.

Processes, signals, the NPU, temperatures and the gyro stay the simulated camera's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hardware.ports.errors import Unavailable
from hardware.ports.gateway_monitor import DiskUsage, MemoryFigures

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


class HostFigures:
    """The machine figures a camera's monitor reads, from the host under ``root`` (``/proc``; a test
    gives a directory of its own)."""

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

    def arch(self) -> str:
        machine = os.uname().machine
        return GOARCH.get(machine, machine)

    # Memory --------------------------------------------------------------------------------------
    def memory(self) -> MemoryFigures:
        """As gopsutil counts it: cached includes ``SReclaimable``; used is what neither free,
        buffers nor the cache hold."""
        m = self.meminfo()
        total, free, buffers = m.get("MemTotal", 0), m.get("MemFree", 0), m.get("Buffers", 0)
        cached = m.get("Cached", 0) + m.get("SReclaimable", 0)
        used = total - free - buffers - cached
        if used < 0:
            used = total - free
        swap_total, swap_free = m.get("SwapTotal", 0), m.get("SwapFree", 0)
        available = m.get("MemAvailable", free + buffers + cached)
        return MemoryFigures(
            total, used, available, free, buffers, cached, swap_total, swap_total - swap_free, swap_free
        )

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
