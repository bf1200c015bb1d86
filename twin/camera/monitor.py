"""What ``monitor/*`` and ``processes`` report: the machine's figures (``figures``: the simulated
camera's own, :mod:`twin.camera.figures`, or the local host's), NPU and temperatures from the
simulated camera, and the process table computed from what runs on it: the platform services,
running containers, loaded models, watched video streams.

Processes: the platform's services with fixed pids, plus one per running container. Killing
``camera-daemon`` takes the camera service down (apps fall back to simulation mode), killing
``event-bus`` stops the bus, killing a container's process stops that container.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.gateway_monitor import MachineFigures
from twin.camera.figures import MEMORY_TOTAL, CameraFigures, noise
from twin.rng import hash_normal, stream_key

if TYPE_CHECKING:
    from hardware.ports.clock import Clock
    from twin.camera.ai_runtime import AiRuntime
    from twin.camera.clock import DeviceClock
    from twin.camera.containers import ContainerRuntime
    from twin.camera.event_bus import DeviceEventBus
    from twin.camera.peripherals import Peripherals
    from twin.camera.power import Power
    from twin.camera.storage import Storage
    from twin.engine import Engine

HEARTBEAT_S = 15.0
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
    """The monitor port."""

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
        self.simulated = CameraFigures(world, camera_id, power, storage, self)
        self.figures: MachineFigures = self.simulated
        """Where the machine's figures come from; the local host's when the gateway runs on real
        hardware (set by :func:`twin.wings.host_hardware`)."""

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

    def cpu_load(self) -> float:
        load = sum(s.cpu for s in self.services()) + sum(r[2] for r in self._containers())
        load += 6.0 * sum(1 for s in self.ai.subscriptions.values())
        return load

    def memory_load(self) -> int:
        used = sum(r[3] for r in self._containers())
        return used + sum(s.rss for s in self.services()) - sum(s.rss for s in SERVICES)

    # Figures -------------------------------------------------------------------------------
    def cpu(self) -> dict[str, object]:
        total, per_core = self.figures.cpu_usage()
        cores = []
        for i, (model, mhz) in enumerate(self.figures.cpu_models()):
            entry: dict[str, object] = {"model": model, "mhz": mhz}
            if i < len(per_core):
                entry["usage_percent"] = per_core[i]
            cores.append(entry)
        return {"total_percent": total, "core_count": len(per_core), "cores": cores}

    def _memory(self) -> tuple[dict[str, object], dict[str, object]]:
        m = self.figures.memory()
        virtual: dict[str, object] = {
            "total": m.total,
            "used": m.used,
            "available": m.available,
            "free": m.free,
            "usage_percent": round(100.0 * m.used / m.total, 2) if m.total else 0.0,
            "buffers": m.buffers,
            "cached": m.cached,
        }
        swap: dict[str, object] = {
            "total": m.swap_total,
            "used": m.swap_used,
            "free": m.swap_free,
            "usage_percent": round(100.0 * m.swap_used / m.swap_total, 2) if m.swap_total else 0.0,
        }
        return virtual, swap

    def memory(self) -> dict[str, object]:
        virtual, swap = self._memory()
        return {"virtual": virtual, "swap": swap}

    def network(self) -> dict[str, object]:
        return {"interfaces": self.figures.interfaces()}

    def _totals(self) -> dict[str, int]:
        rows = self.figures.interfaces()
        return {
            "bytes_sent": sum(int(r["bytes_sent"]) for r in rows),  # type: ignore[call-overload]
            "bytes_recv": sum(int(r["bytes_recv"]) for r in rows),  # type: ignore[call-overload]
        }

    def npu(self) -> float:
        return round(self.ai.stats().device_utilization * 100.0, 2)

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
            "cpu": {"usage_percent": total, "cores": len(cores), "arch": self.figures.arch()},
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
            "network": self._totals(),
            "npu": self.npu(),
        }

    def snapshot(self) -> dict[str, object]:
        """The machine's CPU, memory and traffic; the NPU and the temperatures are the simulated
        camera's sensors."""
        ai = self.ai.stats()
        n_cpu, n_board = noise(self.world, self.camera_id, "temps", 2)
        load = self.simulated.cpu_total()
        temperatures = {
            "cpu": round(44.0 + 0.25 * load + 0.4 * n_cpu, 1),
            "npu": ai.device_temperature,
            "board": round(39.0 + 0.3 * n_board, 1),
        }
        timestamp, npu = int(self.clock.now() * 1000), self.npu()
        total, _ = self.figures.cpu_usage()
        virtual, _ = self._memory()
        return {
            "timestamp": timestamp,
            "cpu": total,
            "memory": virtual["usage_percent"],
            "npu": npu,
            "temperatures": temperatures,
            "network": self._totals(),
        }

    # Attitude (the IMU) --------------------------------------------------------------------
    def orientation(self) -> tuple[float, float]:
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

    async def attitude(self, rate: float, clock: Clock) -> AsyncIterator[tuple[str, dict[str, object]]]:
        """The IMU's SSE events paced on ``clock``: ``status`` first, ``orientation`` at ``rate``
        a second, ``heartbeat`` every 15 s."""
        yield "status", {"sensor": "online"}
        period = 1.0 / rate
        next_beat = self.world.env.now + HEARTBEAT_S
        while True:
            await clock.sleep(period, background=True)
            pitch, roll = self.orientation()
            yield "orientation", {"pitch": pitch, "roll": roll}
            if self.world.env.now >= next_beat:
                next_beat += HEARTBEAT_S
                yield "heartbeat", {"timestamp": int(self.clock.now() * 1000)}

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
