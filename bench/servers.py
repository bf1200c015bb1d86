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
from typing import IO, Any

from hardware.adapters.broker_server import cpu_seconds, rss_mb  # noqa: F401 - the benches' /proc readers

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
TWIN_SCRIPT = Path(sys.executable).parent / "twin"
SCENARIO = Path(__file__).resolve().parent / "scenario.yaml"
RATE_LIMIT = 100_000_000  # requests per minute per client: the bench must never meet the limiter
STOP_TIMEOUT = 10.0
SETUP_TIMEOUT = 60.0


class ServerError(RuntimeError):
    """A server did not come up, or did not answer its setup as the bench needs."""


@dataclass
class Server:
    """A running server subprocess and where to reach it."""

    name: str
    proc: subprocess.Popen
    port: int
    log: IO[bytes]
    control_port: int | None = None

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


def launch(name: str, argv: list[str], port: int, control_port: int | None = None) -> Server:
    """Start ``argv`` with its output going to a temporary file (so no pipe can fill up)."""
    log = tempfile.TemporaryFile(prefix=f"bench-{name}-")  # noqa: SIM115 - closed by stop()
    try:
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    except OSError:
        log.close()
        raise
    return Server(name, proc, port, log, control_port)


def start_bare() -> Server:
    """The baseline: :mod:`bench.bare` on a free port."""
    port = free_port()
    return launch("bare", [sys.executable, "-m", "bench.bare", "--port", str(port)], port)


def twin_run(
    scenario: Path, port: int, control_port: int, *flags: str, command: list[str] | None = None
) -> list[str]:
    """The argv of ``twin run`` on loopback: ``scenario``, the automation API on ``port``, the control
    plane on ``control_port``, the MQTT broker and each camera's gateway on a port of its own choosing;
    then ``flags``. ``command`` starts the twin (default: its console script, else ``-m twin.cli``)."""
    if command is None:
        command = [str(TWIN_SCRIPT)] if TWIN_SCRIPT.exists() else [sys.executable, "-m", "twin.cli"]
    return [
        *command, "run", "--scenario", str(scenario),
        "--host", HOST, "--port", str(port), "--control-port", str(control_port), "--mqtt-port", "0",
        "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
        *flags,
    ]  # fmt: skip


def start_twin(scenario: Path = SCENARIO) -> Server:
    """``twin run`` on free ports with the bench's 1 000-device ``scenario``, step clock, no effective
    rate limit, state in memory, bound to loopback."""
    port, control_port = free_port(), free_port()
    argv = twin_run(scenario, port, control_port, "--step", "--rate-limit", str(RATE_LIMIT))
    return launch("twin", argv, port, control_port)


def http_json(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """One request with an optional JSON body; returns the status and the decoded JSON body (None if the
    body is not JSON). HTTP error statuses are returned, not raised; transport errors raise OSError."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=SETUP_TIMEOUT) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def advance_clock(server: Server, seconds: float) -> float:
    """Move the twin's step clock on by ``seconds`` over the control plane; returns the new sim time."""
    url = f"http://{HOST}:{server.control_port}/clock/advance"
    status, body = http_json("POST", url, {"seconds": seconds})
    if status != 200 or not isinstance(body, dict) or "sim_time" not in body:
        raise ServerError(f"{server.name}: POST {url} answered {status}: {body!r}")
    return float(body["sim_time"])


def initialize_admin(server: Server, username: str, password: str) -> str:
    """Create the twin's first admin (``POST /api/setup/initialize``); returns its bearer token."""
    url = f"{server.url}/api/setup/initialize"
    status, body = http_json("POST", url, {"username": username, "password": password})
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("token"), str):
        raise ServerError(f"{server.name}: POST {url} answered {status}: {body!r}")
    return body["token"]


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
