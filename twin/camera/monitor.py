"""What ``monitor/*`` and ``processes`` report, computed from what runs on the camera: the platform
services, running containers, loaded models, watched video streams. Noise is a pure function of
(seed, camera, 5-s window), so two reads in one window agree and the same seed gives the same figures.

Processes: the platform's services with fixed pids, plus one per running container. Killing
``camera-daemon`` takes the camera service down (apps fall back to simulation mode), killing
``event-bus`` stops the bus, killing a container's process stops that container.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, NotFound
from twin.camera.storage import DATA
from twin.rng import hash_normal, stream_key

if TYPE_CHECKING:
    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.clock import DeviceClock
    from twin.camera.containers import ContainerRuntime
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.peripherals import Peripherals
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
STREAM_TX_BPS = 4_000_000 // 8
SIGNALS = {"SIGTERM": "SIGTERM", "SIGKILL": "SIGKILL", "9": "SIGKILL", "SIGINT": "SIGINT", "2": "SIGINT"}
SIGNALS |= {"SIGHUP": "SIGHUP", "1": "SIGHUP", "15": "SIGTERM"}


@dataclass(frozen=True)
class Service:
    pid: int
    name: str
    cmdline: str
    cpu: float
    """Percent of one core."""
    rss: int
    user: str = "root"


SERVICES = (
    Service(1, "systemd", "/sbin/init", 0.1, 11_800_000),
    Service(412, "containerd", "/usr/bin/containerd", 0.6, 48_000_000),
    Service(431, "sshd", "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups", 0.0, 7_200_000),
    Service(506, "event-bus", "/opt/aipc/bin/event-bus --config /etc/aipc/event-bus.yaml", 0.4, 21_000_000),
    Service(
        517, "ai-runtime", "/opt/aipc/bin/ai-runtime --config /etc/aipc/ai-runtime.yaml", 1.8, 182_000_000
    ),
    Service(
        523, "camera-daemon", "/opt/aipc/bin/camera-daemon -c /etc/aipc/camera-daemon.yaml", 9.5, 96_000_000
    ),
    Service(538, "device-control", "/opt/aipc/bin/device-control", 0.3, 18_000_000),
    Service(
        544, "app-manager", "/opt/aipc/bin/app-manager --config /etc/aipc/app-manager.yaml", 0.5, 34_000_000
    ),
    Service(
        561, "platform-api", "/opt/aipc/bin/platform-api -config /etc/aipc/platform-api.yaml", 1.2, 41_000_000
    ),
    Service(602, "nginx", "nginx: master process /usr/sbin/nginx", 0.1, 9_000_000, "www-data"),
)


class Monitor:
    def __init__(
        self,
        world: Engine,
        camera_id: str,
        clock: DeviceClock,
        power: Power,
        storage: Storage,
        events: DeviceEventBus,
        ai: AiRuntime,
        containers: ContainerRuntime,
        peripherals: Peripherals,
    ) -> None:
        self.world = world
        self.camera_id = camera_id
        self.clock, self.power, self.storage, self.events = clock, power, storage, events
        self.ai, self.containers, self.peripherals = ai, containers, peripherals
        self.killed: set[str] = set()

    # Noise ---------------------------------------------------------------------------------
    def _noise(self, name: str, n: int = 1) -> list[float]:
        key = stream_key(self.world.seed, f"{self.camera_id}/monitor/{name}")
        window = int(self.world.env.now // WINDOW_S)
        return [float(v) for v in hash_normal(key, [window * n + i for i in range(n)])]

    # What runs -----------------------------------------------------------------------------
    def services(self) -> list[Service]:
        down = set(self.killed)
        if not self.ai.camera_service_running:
            down.add("camera-daemon")
        if not self.events.running:
            down.add("event-bus")
        return [s for s in SERVICES if s.name not in down]

    def _containers(self) -> list[tuple[str, int, float, int, str]]:
        """(name, pid, cpu % of one core, rss, image) of every running container."""
        runtime = self.containers
        rows = []
        for c in runtime.containers.values():
            if c.state == "running":
                cpu, mem = runtime.usage(c)
                rows.append((c.id, c.pid, cpu, mem, c.image))
        return rows

    def cpu_total(self) -> float:
        load = sum(s.cpu for s in self.services()) + sum(r[2] for r in self._containers())
        load += 6.0 * sum(1 for s in self.ai.subscriptions.values())
        total = load / CORES + 0.6 * self._noise("cpu")[0]
        return round(min(100.0, max(0.5, total)), 2)

    def memory_used(self) -> int:
        used = BASE_MEMORY_USED + sum(r[3] for r in self._containers())
        used += sum(s.rss for s in self.services()) - sum(s.rss for s in SERVICES)
        used += int(8 * 1024**2 * self._noise("mem")[0])
        return max(0, min(MEMORY_TOTAL, used))

    # Figures -------------------------------------------------------------------------------
    def cpu(self) -> dict[str, object]:
        total = self.cpu_total()
        noise = self._noise("cores", CORES)
        cores = [
            {
                "model": CPU_MODEL,
                "mhz": CPU_MHZ,
                "usage_percent": round(min(100.0, max(0.0, total + 2 * n)), 2),
            }
            for n in noise
        ]
        return {"total_percent": total, "core_count": CORES, "cores": cores}

    def memory(self) -> dict[str, object]:
        used = self.memory_used()
        available = MEMORY_TOTAL - used
        return {
            "virtual": {
                "total": MEMORY_TOTAL,
                "used": used,
                "available": available,
                "free": max(0, available - BUFFERS - CACHED),
                "usage_percent": round(100.0 * used / MEMORY_TOTAL, 2),
                "buffers": BUFFERS,
                "cached": CACHED,
            },
            "swap": {"total": 0, "used": 0, "free": 0, "usage_percent": 0.0},
        }

    def network(self) -> dict[str, object]:
        up = self.power.uptime()
        rx = int(up * NET_RX_BPS)
        tx = int(up * NET_TX_BPS)
        return {
            "interfaces": [
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
        }

    def _totals(self) -> dict[str, int]:
        eth = self.network()["interfaces"][0]  # type: ignore[index]
        return {"bytes_sent": eth["bytes_sent"], "bytes_recv": eth["bytes_recv"]}

    def npu(self) -> float:
        return round(self.ai.stats().device_utilization * 100.0, 2)

    def summary(self) -> dict[str, object]:
        mem = self.memory()["virtual"]  # type: ignore[index]
        data = next(p for p in self.storage.usage() if p.name == DATA)
        return {
            "cpu": {"usage_percent": self.cpu_total(), "cores": CORES, "arch": "arm64"},
            "memory": {
                "total": mem["total"],
                "used": mem["used"],
                "available": mem["available"],
                "usage_percent": mem["usage_percent"],
                "swap_total": 0,
                "swap_used": 0,
            },
            "disk": {
                "total": data.total,
                "used": data.used,
                "free": data.free,
                "usage_percent": data.usage_percent,
                "mountpoint": data.mountpoint,
            },
            "host": {
                "hostname": self.camera_id,
                "os": "linux",
                "platform": "debian",
                "platform_version": "12.8",
                "kernel_version": KERNEL,
                "kernel_arch": "aarch64",
                "uptime_seconds": int(self.power.uptime()),
            },
            "network": self._totals(),
            "npu": self.npu(),
        }

    def snapshot(self) -> dict[str, object]:
        ai = self.ai.stats()
        n_cpu, n_board = self._noise("temps", 2)
        cpu = self.cpu_total()
        return {
            "timestamp": int(self.clock.now() * 1000),
            "cpu": cpu,
            "memory": round(100.0 * self.memory_used() / MEMORY_TOTAL, 2),
            "npu": self.npu(),
            "temperatures": {
                "cpu": round(44.0 + 0.25 * cpu + 0.4 * n_cpu, 1),
                "npu": ai.device_temperature,
                "board": round(39.0 + 0.3 * n_board, 1),
            },
            "network": self._totals(),
        }

    # Attitude (the IMU) --------------------------------------------------------------------
    def attitude(self) -> tuple[float, float]:
        """(pitch, roll) in degrees: how the camera is mounted, plus the PTZ tilt, plus a little
        vibration. Pitch is positive nose-down, roll positive right-side-down."""
        key = stream_key(self.world.seed, f"{self.camera_id}/mount")
        mount_pitch, mount_roll = (float(v) for v in hash_normal(key, [0, 1]))
        tick = int(self.world.env.now * 50)
        vib_p, vib_r = (float(v) for v in hash_normal(key, [2 + 2 * tick, 3 + 2 * tick]))
        tilt = self.peripherals.tilt_deg()
        pitch = 12.0 + 3.0 * mount_pitch + tilt + 0.05 * vib_p
        roll = 1.5 * mount_roll + 0.05 * vib_r
        return round(max(-90.0, min(90.0, pitch)), 3), round(max(-90.0, min(90.0, roll)), 3)

    # Processes -----------------------------------------------------------------------------
    def _rows(self) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for s in self.services():
            rows.append(_row(s.pid, s.name, s.cpu, s.rss, s.user, s.cmdline))
        for name, pid, cpu, rss, image in self._containers():
            rows.append(_row(pid, "app", cpu, rss, "1000", f"/app/entrypoint ({name}, {image})"))
        return rows

    def processes(self, sort: str, limit: int, search: str) -> dict[str, object]:
        if sort not in ("cpu", "mem", "pid"):
            raise InvalidInput("sort must be cpu, mem or pid", resource="parameter")
        if not 1 <= limit <= 500:
            raise InvalidInput("limit must be between 1 and 500", resource="parameter")
        rows = [
            r for r in self._rows() if not search or search.lower() in f"{r['name']} {r['cmdline']}".lower()
        ]
        key = {"cpu": "cpu_percent", "mem": "mem_rss", "pid": "pid"}[sort]
        rows.sort(key=lambda r: r[key], reverse=sort != "pid")  # type: ignore[arg-type, return-value]
        return {"total": len(rows), "processes": rows[:limit]}

    def process(self, pid: int) -> dict[str, object]:
        row = next((r for r in self._rows() if r["pid"] == pid), None)
        if row is None:
            raise NotFound(f"process {pid} not found", resource="process")
        booted = self.clock.now() - self.power.uptime()
        return {
            **row,
            "status": ["sleep"],
            "ppid": 1 if pid != 1 else 0,
            "cwd": "/",
            "exe": str(row["cmdline"]).split(" ")[0],
            "create_time": int((booted + pid / 100.0) * 1000),
            "num_threads": 4 if pid > 1 else 1,
            "mem_vms": int(row["mem_rss"]) * 3,  # type: ignore[call-overload]
        }

    def kill(self, pid: int, signal: str) -> dict[str, object]:
        name = SIGNALS.get(signal or "SIGTERM")
        if name is None:
            raise InvalidInput(f"unsupported signal {signal!r}", resource="parameter")
        self.process(pid)
        service = next((s for s in SERVICES if s.pid == pid), None)
        if service is None:
            runtime = self.containers
            container = next(c for c in runtime.containers.values() if c.pid == pid)
            runtime.kill(container.id, reason=name)
        elif name != "SIGHUP":
            self._kill_service(service.name)
        return {"pid": pid, "signal": name, "status": "sent"}

    def _kill_service(self, name: str) -> None:
        if name == "camera-daemon":
            self.ai.stop_camera_service()
        elif name == "event-bus":
            self.events.stop("killed")
        else:
            self.killed.add(name)


def _row(pid: int, name: str, cpu: float, rss: int, user: str, cmdline: str) -> dict[str, object]:
    return {
        "pid": pid,
        "name": name,
        "status": "sleep",
        "cpu_percent": round(cpu, 2),
        "mem_percent": round(100.0 * rss / MEMORY_TOTAL, 2),
        "mem_rss": rss,
        "username": user,
        "cmdline": cmdline,
    }
