"""The simulated camera's own machine figures, which its monitor reports unless its gateway runs on
real hardware: CPU and memory from the load of what runs on it, the data partition as its disk,
traffic growing with uptime. Noise is a pure function of (seed, camera, 5-s window), so two reads in
one window agree and the same seed gives the same figures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from hardware.ports.gateway_monitor import DiskUsage, MemoryFigures
from twin.camera.storage import DATA
from twin.rng import hash_normal, stream_key

if TYPE_CHECKING:
    from twin.camera.power import Power
    from twin.camera.storage import Storage
    from twin.engine import Engine

CORES = 4
CPU_MODEL = "Cortex-A76"
CPU_MHZ = 2256.0
KERNEL = "6.1.84-aipc"
MEMORY_TOTAL = 4 * 1024**3
BASE_MEMORY_USED = 912 * 1024**2
BUFFERS, CACHED = 48 * 1024**2, 610 * 1024**2
WINDOW_S = 5.0
NET_RX_BPS, NET_TX_BPS = 2_400, 3_100


class Load(Protocol):
    """What runs on the camera, as its monitor's process table sums it."""

    def cpu_load(self) -> float:
        """Percent of one core, summed over every process."""

    def memory_load(self) -> int:
        """Resident bytes beyond the platform's services as shipped."""


def noise(world: Engine, camera_id: str, name: str, n: int = 1) -> list[float]:
    """``n`` standard normal draws for ``name`` in the current 5-s window."""
    key = stream_key(world.seed, f"{camera_id}/monitor/{name}")
    window = int(world.env.now // WINDOW_S)
    return [float(v) for v in hash_normal(key, [window * n + i for i in range(n)])]


class CameraFigures:
    def __init__(self, world: Engine, camera_id: str, power: Power, storage: Storage, load: Load) -> None:
        self.world = world
        self.camera_id = camera_id
        self.power, self.storage, self.load = power, storage, load

    def cpu_total(self) -> float:
        total = self.load.cpu_load() / CORES + 0.6 * noise(self.world, self.camera_id, "cpu")[0]
        return round(min(100.0, max(0.5, total)), 2)

    def memory_used(self) -> int:
        used = BASE_MEMORY_USED + self.load.memory_load()
        used += int(8 * 1024**2 * noise(self.world, self.camera_id, "mem")[0])
        return max(0, min(MEMORY_TOTAL, used))

    def cpu_usage(self) -> tuple[float, list[float]]:
        total = self.cpu_total()
        cores = noise(self.world, self.camera_id, "cores", CORES)
        return total, [round(min(100.0, max(0.0, total + 2 * n)), 2) for n in cores]

    def cpu_models(self) -> list[tuple[str, float]]:
        return [(CPU_MODEL, CPU_MHZ)] * CORES

    def arch(self) -> str:
        return "arm64"

    def memory(self) -> MemoryFigures:
        used = self.memory_used()
        available = MEMORY_TOTAL - used
        free = max(0, available - BUFFERS - CACHED)
        return MemoryFigures(MEMORY_TOTAL, used, available, free, BUFFERS, CACHED)

    def disk(self) -> DiskUsage | None:
        data = next(p for p in self.storage.usage() if p.name == DATA)
        return DiskUsage(data.mountpoint, data.total, data.used, data.free)

    def interfaces(self) -> list[dict[str, object]]:
        up = self.power.uptime()
        rx = int(up * NET_RX_BPS)
        tx = int(up * NET_TX_BPS)
        return [
            {
                "name": "eth0",
                "bytes_sent": tx,
                "bytes_recv": rx,
                "packets_sent": tx // 900,
                "packets_recv": rx // 600,
                "errin": 0,
                "errout": 0,
            }
        ]

    def host(self) -> dict[str, object]:
        return {
            "hostname": self.camera_id,
            "os": "linux",
            "platform": "debian",
            "platform_version": "12.8",
            "kernel_version": KERNEL,
            "kernel_arch": "aarch64",
            "uptime_seconds": int(self.power.uptime()),
        }
