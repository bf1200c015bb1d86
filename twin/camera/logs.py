"""A camera's logs: one journal per service, written by the device's services in world time and
mirrored into ``*.log`` files of its virtual file system (``/var/log/syslog``, ``/var/log/aipc``).

One SimPy process per camera writes the background chatter (a line every few seconds from the
camera's own random stream); other models write through :meth:`DeviceLogs.write` (the OTA machine,
power events). Journals and files are bounded: the oldest lines go first.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import simpy

from hardware.ports.errors import DomainError, InvalidInput, NotFound, Unavailable
from hardware.ports.gateway_files import FileData, LogFile

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.camera.power import Power
    from twin.camera.vfs import VirtualFS
    from twin.engine import Engine

SERVICES = (
    "ai-runtime",
    "camera-daemon",
    "platform-api",
    "event-bus",
    "app-manager",
    "device-control",
    "sshd",
    "docker",
    "networkd",
)
SERVICE_NAMES = {
    "ai-runtime": "AI Runtime",
    "camera-daemon": "Camera Daemon",
    "platform-api": "Platform API",
    "event-bus": "Event Bus",
    "app-manager": "App Manager",
    "device-control": "Device Control",
    "sshd": "SSH Server",
    "docker": "Docker",
    "networkd": "Network",
}
LOG_DIRS = ("/var/log", "/var/log/aipc")
SYSLOG = "/var/log/syslog"
JOURNAL_LINES = 2000
FILE_KEEP_BYTES = 256 * 1024
DEFAULT_LINES, MAX_LINES = 500, 10000
DEBUG_DEFAULT_LINES, DEBUG_MAX_LINES = 10000, 50000
SERVICE_TARGET = re.compile(r"^[A-Za-z0-9.-]+$")
CHATTER_MEAN_S = 8.0

_CHATTER = {
    "ai-runtime": ("inference stats: model=yolov8n qps={n} latency_us={m}", "npu utilisation {p}%"),
    "camera-daemon": ("stream main: {n} frames encoded, bitrate {m} kbps", "AE converged, exposure {m} us"),
    "platform-api": ("GET /api/v1/system/health 200 {n}us", "websocket clients: {p}"),
    "event-bus": ("published {n} events, {p} subscribers", "queue depth {p}"),
    "app-manager": ("reconciled {p} apps", "health probe ok for {p} containers"),
    "device-control": ("soc temperature {p} C", "light sensor {m}"),
    "sshd": ("Connection closed by 192.168.1.{p} port {m} [preauth]", "Server listening on 0.0.0.0 port 22."),
    "docker": ("containerd: gc removed {p} blobs", "image store: {n} layers"),
    "networkd": ("eth0: DHCPv4 lease renewed", "eth0: link up, 1000Mbps full-duplex"),
}


class DeviceLogs:
    """The logs port of one camera: its service journals and ``*.log`` files."""

    def __init__(
        self, world: Engine, camera_id: str, clock: DeviceClock, power: Power, fs: VirtualFS
    ) -> None:
        self.world = world
        self.camera_id = camera_id
        self.clock, self.power, self.fs = clock, power, fs
        self.journals: dict[str, deque[str]] = {s: deque(maxlen=JOURNAL_LINES) for s in SERVICES}
        self._followers: list[Follower] = []
        self.dropped = 0
        """Lines that could not be written to a log file."""
        self._rng = self.world.streams.get(f"{camera_id}/logs")
        for service in SERVICES:
            self.write(service, "Started " + SERVICE_NAMES[service] + ".")
        self.world.env.process(self._chatter())

    # Writing -------------------------------------------------------------------------------
    def _stamp(self) -> str:
        """Syslog's stamp, in the device's local time."""
        return self.clock.local().strftime("%b %d %H:%M:%S")

    def write(self, service: str, message: str) -> None:
        """One journal line for ``service``, also appended to its log file and to syslog."""
        line = f"{self._stamp()} {self.camera_id} {service}[{100 + SERVICES.index(service)}]: {message}"
        self.journals[service].append(line)
        data = (line + "\n").encode()
        targets = [f"/var/log/aipc/{service}.log", SYSLOG]
        if service == "sshd":
            targets.append("/var/log/auth.log")
        for path in targets:
            try:
                self.fs.append(path, data, keep=FILE_KEEP_BYTES)
            except DomainError:  # a full root or a removed log directory: the file misses the line
                self.dropped += 1
        for follower in list(self._followers):
            follower.offer(service, line)

    def _chatter(self):
        while True:
            yield self.world.env.timeout(float(self._rng.exponential(CHATTER_MEAN_S)))
            if not self.power.powered:
                continue
            service = SERVICES[int(self._rng.integers(len(SERVICES)))]
            template = _CHATTER[service][int(self._rng.integers(2))]
            n, m, p = (int(x) for x in self._rng.integers((1, 1, 1), (5000, 9000, 100)))
            self.write(service, template.format(n=n, m=m, p=p))

    def power_down(self) -> None:
        """The device went down: every open stream ends."""
        for follower in list(self._followers):
            follower.end()
        self._followers.clear()

    # Reading -------------------------------------------------------------------------------
    def _file(self, target: str) -> str:
        if not target.startswith("/") or ".." in target.split("/"):
            raise InvalidInput("Invalid log file path")
        canonical = self.fs.canonical(target)
        if not any(canonical.rsplit("/", 1)[0] == d for d in LOG_DIRS):
            raise InvalidInput("Log file must be under an allowed log directory")
        if not self.fs.exists(canonical):
            raise NotFound(f"log file not found: {target}", resource="file")
        return canonical

    def _service(self, target: str) -> str:
        if not SERVICE_TARGET.match(target):
            raise InvalidInput("Invalid service name")
        if target not in self.journals:
            raise NotFound(f"unknown service: {target}")
        return target

    def resolve(self, kind: str, target: str) -> tuple[str, str]:
        if not target:
            raise InvalidInput("target is required")
        if kind == "service":
            return kind, self._service(target)
        if kind == "file":
            return kind, self._file(target)
        raise InvalidInput("type must be service or file")

    def lines(self, kind: str, target: str) -> list[str]:
        kind, target = self.resolve(kind, target)
        if kind == "service":
            return list(self.journals[target])
        return self.fs.read(target).decode(errors="replace").splitlines()

    def content(self, kind: str, target: str, lines: int) -> tuple[int, str]:
        """(the line count asked for, defaulted and capped; the text of the last that many lines)."""
        if lines <= 0:
            lines = DEFAULT_LINES
        lines = min(lines, MAX_LINES)
        return lines, "\n".join(self.lines(kind, target)[-lines:])

    def log_files(self) -> list[tuple[str, int, float, str]]:
        """(path, size, mtime, service) for every ``*.log`` under the log directories."""
        out = []
        for directory in LOG_DIRS:
            for name, node in self.fs.listdir(directory):
                if name.endswith(".log") and node.kind == "-":
                    service = name.removesuffix(".log") if directory.endswith("aipc") else ""
                    out.append((f"{directory}/{name}", self.fs.size_of(node), node.mtime, service))
        return out

    def services(self) -> list[tuple[str, str]]:
        return [(s, SERVICE_NAMES[s]) for s in SERVICES]

    def files(self) -> list[LogFile]:
        return [
            LogFile(path, path.rsplit("/", 1)[-1], size, mtime, service)
            for path, size, mtime, service in self.log_files()
        ]

    def download(self, kind: str, target: str) -> FileData:
        body = "\n".join(self.lines(kind, target)) + "\n"
        name = f"{target}.log" if kind == "service" else target.rsplit("/", 1)[-1]
        return FileData(target, name, body.encode())

    def debug_services(self) -> list[tuple[str, str]]:
        return [(s, SERVICE_NAMES[s]) for s in SERVICES]

    def debug_files(self) -> list[LogFile]:
        return self.files()

    def debug_export(self, services: list[str], files: list[str], lines: int) -> list[FileData]:
        lines = lines or DEBUG_DEFAULT_LINES
        if not 1 <= lines <= DEBUG_MAX_LINES:
            raise InvalidInput(f"lines must be between 1 and {DEBUG_MAX_LINES}")
        if not services and not files:
            services = list(SERVICES)
        out = []
        for service in services:
            if service not in SERVICES:
                raise InvalidInput(f"unknown service: {service}")
            _, text = self.content("service", service, lines)
            out.append(FileData(service, f"journal/{service}.log", (text + "\n").encode()))
        for path in files:
            text = "\n".join(self.lines("file", path)[-lines:])
            out.append(FileData(path, "files/" + path.rsplit("/", 1)[-1], (text + "\n").encode()))
        return out

    def follow(self, kind: str, target: str, wait: Callable[[simpy.Event], Awaitable[object]]) -> Follower:
        kind, target = self.resolve(kind, target)
        follower = Follower(self, kind, target, wait)
        self._followers.append(follower)
        return follower

    def _drop(self, follower: Follower) -> None:
        if follower in self._followers:
            self._followers.remove(follower)


class Follower:
    """New lines of one journal or file; at most ``BUFFER`` wait, older ones are dropped."""

    BUFFER = 1000

    def __init__(
        self, logs: DeviceLogs, kind: str, target: str, wait: Callable[[simpy.Event], Awaitable[object]]
    ) -> None:
        self._logs = logs
        self.kind, self.target = kind, target
        self._wait = wait
        self._pending: deque[str] = deque(maxlen=self.BUFFER)
        self._signal = logs.world.env.event()
        self._ended = False

    def offer(self, service: str, line: str) -> None:
        wanted = (
            service == self.target
            if self.kind == "service"
            else self.target in (SYSLOG, f"/var/log/aipc/{service}.log")
            or (service == "sshd" and self.target == "/var/log/auth.log")
        )
        if wanted:
            self._pending.append(line)
            self._wake()

    def _wake(self) -> None:
        if not self._signal.triggered:
            self._signal.succeed()

    def end(self) -> None:
        self._ended = True
        self._wake()

    async def next_lines(self) -> list[str]:
        while not self._pending:
            if self._ended:
                raise Unavailable("the device went down")
            if self._signal.triggered:
                self._signal = self._logs.world.env.event()
            await self._wait(self._signal)
        out = list(self._pending)
        self._pending.clear()
        return out

    def close(self) -> None:
        self._ended = True
        self._logs._drop(self)
