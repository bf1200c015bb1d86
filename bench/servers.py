"""Start, probe and stop the servers under test, each in its own subprocess."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
TWIN_SCRIPT = Path(sys.executable).parent / "twin"
STOP_TIMEOUT = 10.0


class ServerError(RuntimeError):
    """A server did not come up."""


@dataclass
class Server:
    """A running server subprocess and where to reach it."""

    name: str
    proc: subprocess.Popen
    port: int
    log: IO[bytes]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def log_tail(self, limit: int = 2000) -> str:
        """The end of the server's combined stdout/stderr."""
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-limit:]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def launch(name: str, argv: list[str], port: int) -> Server:
    """Start ``argv`` with its output going to a temporary file (so no pipe can fill up)."""
    log = tempfile.TemporaryFile(prefix=f"bench-{name}-")  # noqa: SIM115 - closed by stop()
    try:
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    except OSError:
        log.close()
        raise
    return Server(name, proc, port, log)


def start_bare() -> Server:
    """The baseline: :mod:`bench.bare` on a free port."""
    port = free_port()
    return launch("bare", [sys.executable, "-m", "bench.bare", "--port", str(port)], port)


def start_twin() -> Server:
    """``twin run`` on free ports, default scenario, state in memory, bound to loopback."""
    port, control_port = free_port(), free_port()
    twin = [str(TWIN_SCRIPT)] if TWIN_SCRIPT.exists() else [sys.executable, "-m", "twin.cli"]
    argv = [
        *twin, "run",
        "--host", HOST, "--port", str(port), "--control-port", str(control_port),
        "--mqtt-port", "0",
        "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
    ]  # fmt: skip
    return launch("twin", argv, port)


def healthy(url: str) -> bool:
    """Whether ``GET url`` answers 200 with a JSON object right now."""
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            return response.status == 200 and isinstance(json.load(response), dict)
    except (OSError, ValueError, urllib.error.URLError):
        return False


def wait_healthy(server: Server, path: str = "/api/health", timeout: float = 30.0) -> float:
    """Poll until ``path`` answers; returns the seconds it took. Raises :class:`ServerError` otherwise."""
    started = time.perf_counter()
    deadline = started + timeout
    while time.perf_counter() < deadline:
        if server.proc.poll() is not None:
            raise ServerError(f"{server.name} exited with {server.proc.returncode}:\n{server.log_tail()}")
        if healthy(server.url + path):
            return time.perf_counter() - started
        time.sleep(0.1)
    raise ServerError(f"{server.name} not healthy after {timeout:g} s:\n{server.log_tail()}")


def rss_mb(pid: int) -> float | None:
    """Resident set size of ``pid`` in MiB, from ``VmRSS`` in ``/proc/<pid>/status``."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def stop(server: Server | None) -> None:
    """SIGINT, wait, then SIGKILL if it is still there; always closes the log."""
    if server is None:
        return
    proc = server.proc
    try:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)
    finally:
        with contextlib.suppress(OSError):
            server.log.close()
