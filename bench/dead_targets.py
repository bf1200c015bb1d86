"""``python -m bench.dead_targets``: what dead data-push targets cost an idle twin, in CPU.

Each run starts the real twin process twice, one after the other (``twin run`` on the default
scenario, realtime clock at speed 1, a temporary state directory, every server on a free loopback
port), creates the first administrator and logs in:

  baseline   no push targets
  dead       ``--targets`` (2) webhook targets whose URL is a loopback port nothing listens on,
             taking every sample (event driven, no filter), created through ``POST /api/data-push``

then waits ``--warmup`` seconds and reads the process's CPU time (user + system, from
``/proc/<pid>/stat``, its child processes included) at the start and end of a ``--seconds`` window.
It prints % of one core for both, their ratio, what one dead target costs (the difference over the
number of targets), the latency of ``GET /api/health`` after the window, and the twin's delivery
figures from ``/api/metrics``. With ``--runs N`` it prints the median of each figure as well.

  .venv/bin/python -m bench.dead_targets                # one run of 60 s windows
  .venv/bin/python -m bench.dead_targets --runs 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench import servers

SCENARIO = servers.ROOT / "scenarios" / "default.yaml"
ADMIN = {"username": "admin", "password": "bench-pass-1"}
HEALTH_SAMPLES = 10
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass
class Window:
    label: str
    cpu_pct: float
    health_ms: list[float]
    delivery: list[str] = field(default_factory=list)

    @property
    def health_max_ms(self) -> float:
        return max(self.health_ms)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` and its live descendants, in seconds."""
    parent_of: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parent_of[int(entry)] = int(fields[1])
        ticks[int(entry)] = int(fields[11]) + int(fields[12])  # utime, stime
    family = {pid}
    grew = True
    while grew:
        grew = False
        for child, parent in parent_of.items():
            if parent in family and child not in family:
                family.add(child)
                grew = True
    return sum(ticks.get(p, 0) for p in family) / TICKS


def start(state_dir: Path) -> servers.Server:
    port, control = servers.free_port(), servers.free_port()
    flags = ("--speed", "1", "--state-dir", str(state_dir), "--rtsp-port", "0")
    server = servers.launch("twin", servers.twin_run(SCENARIO, port, control, *flags), port, control)
    servers.wait_healthy(server, timeout=60)
    return server


def log_in(server: servers.Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {servers.initialize_admin(server, **ADMIN)}"}


def add_dead_targets(server: servers.Server, auth: dict[str, str], count: int) -> None:
    for i in range(count):
        body = {
            "name": f"dead-{i + 1}",
            "target_type": "webhook",
            "config": {"url": f"http://{servers.HOST}:{servers.free_port()}/ingest"},
            "schedule": {"type": "event_driven", "event_types": []},
        }
        status, answer = servers.http_json("POST", f"{server.url}/api/data-push", body, auth)
        if status != 200:
            raise servers.ServerError(f"POST /api/data-push answered {status}: {answer!r}")


def health_ms(server: servers.Server) -> list[float]:
    out = []
    for _ in range(HEALTH_SAMPLES):
        started = time.perf_counter()
        with urllib.request.urlopen(f"{server.url}/api/health", timeout=30) as response:
            response.read()
        out.append((time.perf_counter() - started) * 1000)
    return out


def delivery_lines(server: servers.Server) -> list[str]:
    """The twin's own delivery figures (``*_delivery_*`` samples of ``/api/metrics``)."""
    with urllib.request.urlopen(f"{server.url}/api/metrics", timeout=30) as response:
        text = response.read().decode()
    return [line for line in text.splitlines() if "_delivery_" in line and not line.startswith("#")]


def measure(label: str, targets: int, seconds: float, warmup: float) -> Window:
    with tempfile.TemporaryDirectory(prefix="bench-dead-targets-") as tmp:
        server = start(Path(tmp))
        try:
            auth = log_in(server)
            if targets:
                add_dead_targets(server, auth, targets)
            time.sleep(warmup)
            pid = server.proc.pid
            cpu0, wall0 = cpu_seconds(pid), time.monotonic()
            time.sleep(seconds)
            cpu1, wall1 = cpu_seconds(pid), time.monotonic()
            if server.proc.poll() is not None:
                raise servers.ServerError(f"twin exited during the window:\n{server.log_tail()}")
            window = Window(label, 100 * (cpu1 - cpu0) / (wall1 - wall0), health_ms(server))
            window.delivery = delivery_lines(server)
            return window
        finally:
            servers.stop(server)


def run_once(args: argparse.Namespace, n: int) -> tuple[Window, Window]:
    base = measure("baseline", 0, args.seconds, args.warmup)
    dead = measure(f"{args.targets} dead", args.targets, args.seconds, args.warmup)
    ratio = dead.cpu_pct / base.cpu_pct if base.cpu_pct else float("inf")
    per_target = (dead.cpu_pct - base.cpu_pct) / args.targets
    print(
        f"run {n}: baseline {base.cpu_pct:.2f} % of a core, {args.targets} dead targets "
        f"{dead.cpu_pct:.2f} %, ratio {ratio:.2f}, one dead target {per_target:+.2f} %; "
        f"/api/health max {base.health_max_ms:.1f} ms / {dead.health_max_ms:.1f} ms",
        flush=True,
    )
    for line in dead.delivery:
        print(f"    {line}")
    return base, dead


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.dead_targets", description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60.0, help="length of each CPU window (default 60)")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds before each window (default 5)")
    p.add_argument("--targets", type=int, default=2, help="dead push targets (default 2)")
    p.add_argument("--runs", type=int, default=1, help="baseline/dead pairs (default 1)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"twin run {SCENARIO.name}, realtime speed 1, {args.seconds:g} s windows after "
        f"{args.warmup:g} s warm-up, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    pairs = [run_once(args, n + 1) for n in range(args.runs)]
    if args.runs > 1:
        base = statistics.median(b.cpu_pct for b, _ in pairs)
        dead = statistics.median(d.cpu_pct for _, d in pairs)
        per_target = statistics.median((d.cpu_pct - b.cpu_pct) / args.targets for b, d in pairs)
        ratio = statistics.median(d.cpu_pct / b.cpu_pct for b, d in pairs if b.cpu_pct)
        print(
            f"median of {args.runs}: baseline {base:.2f} %, {args.targets} dead targets {dead:.2f} %, "
            f"ratio {ratio:.2f}, one dead target {per_target:+.2f} % of a core"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
