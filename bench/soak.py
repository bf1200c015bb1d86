"""``python -m bench.soak``: a memory soak of the real ``twin run`` process under mixed load with faults.

The twin runs in its own subprocess (:mod:`bench.servers`) on the default scenario, with a temporary
state directory and the realtime clock, every server on a loopback port. This process logs in to
both APIs (``POST /api/setup/initialize``, then ``/api/auth/login``; the gateway's ``/api/login``)
and drives about ``--rate`` requests a second over both of them, open loop, for ``--minutes``:

  automation  device list, detail and current values, telemetry pages and ``/api/telemetry``,
              pushed metrics, dashboards, messages and rules created and deleted (a few live at a
              time), rule and message reads, fresh logins
  gateway     system info/stats/health/time, media status/config/image/OSD, apps, image and timezone
              writes, fresh logins
  streams     a WebSocket (``/api/events/ws``) and an SSE (``/api/events/stream``) subscriber that
              each stay 5-15 s, leave and come back

Every ``--fault-every`` seconds the next fault of :data:`FAULTS` is switched on over the control
plane (latency, a rate-limit storm, 5xx bursts, resets, truncated bodies, dropped streams, sessions
ended) and, where it lasts, off again. An error is *expected* when a fault that was on at the time
explains it (a 429 during a storm, a 503 of a burst, a reset...; each counted fault explains at most
as many errors as it injects); every other error is *unexpected*.

It reports the twin's RSS (``VmRSS`` of ``/proc/<pid>/status``) at the start of the load, after
``--baseline-minutes`` (5; half the run when the run is shorter) and at the end, p50/p99 latency,
the request count and the errors split into expected and unexpected. Exit status 1 when the end
RSS is more than 10 % above the baseline RSS or when there was an unexpected error.

``--tracemalloc DIR`` runs the twin under a debug wrapper in this module (nothing in the twin):
tracing starts with the load, snapshots are taken at the baseline and at the end, and the report
names the lines of the project's code whose live allocations grew most in between (an allocation
made inside a library is charged to the innermost project line that called it). Tracing slows the
twin several-fold: use a lower ``--rate`` with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import re
import signal
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import servers
from bench.loadgen import percentile
from bench.soak_load import (
    ADMIN,
    CAMERA,
    Call,
    Load,
    Session,
    Tally,
    automation_login,
    fault_driver,
    gateway_login,
    sse_subscriber,
    ws_subscriber,
)

SCENARIO = servers.ROOT / "scenarios" / "default.yaml"
GROWTH_LIMIT = 0.10
MAX_IN_FLIGHT = 256
RSS_EVERY_S = 10.0
SNAPSHOT_SIGNAL = signal.SIGUSR2
TRACED_BOOT = """\
import os, signal, sys, tracemalloc
out, n = sys.argv[1], [0]
def snap(*_):
    if not tracemalloc.is_tracing():
        tracemalloc.start(int(os.environ.get("SOAK_TRACE_FRAMES", "12")))
        return
    n[0] += 1
    path = os.path.join(out, f"{n[0]}.snap")
    tracemalloc.take_snapshot().dump(path + ".part")
    os.replace(path + ".part", path)
signal.signal(signal.SIGUSR2, snap)
from twin.cli import main
sys.exit(main(sys.argv[2:]))
"""
"""The debug wrapper ``--tracemalloc`` starts the twin with: the first SIGUSR2 starts tracing
(when the load starts, so start-up costs nothing), each later one dumps a snapshot to DIR/N.snap."""


class Tracer:
    """``--tracemalloc``: signals the traced twin (the first time to start tracing, then for a
    snapshot) and waits for each snapshot file. Does nothing without a directory."""

    def __init__(self, twin: servers.Server, directory: Path | None) -> None:
        self.twin, self.directory, self.taken = twin, directory, -1

    async def __call__(self) -> None:
        if self.directory is None:
            return
        self.twin.proc.send_signal(SNAPSHOT_SIGNAL)
        self.taken += 1
        path = self.directory / f"{self.taken}.snap"
        for _ in range(600):
            if self.taken == 0 or path.exists() or self.twin.proc.poll() is not None:
                return
            await asyncio.sleep(0.5)


# The run -----------------------------------------------------------------------------------------
@dataclass
class Rss:
    start: float | None = None
    baseline: float | None = None
    end: float | None = None
    samples: list[tuple[float, float]] = field(default_factory=list)  # (minutes into the load, MiB)


async def drive(load: Load, rate: float, deadline: float) -> None:
    """Open loop: one request every 1/rate s, each in its own task, until the deadline. At most
    MAX_IN_FLIGHT at once: a server that falls further behind is sent less (``tally.shed`` counts
    the requests not sent), not a backlog after the end."""
    in_flight: set[asyncio.Task] = set()
    gate = asyncio.Semaphore(MAX_IN_FLIGHT)
    step = 1.0 / rate
    at = time.monotonic()

    async def one(session: Session, call: Call) -> None:
        try:
            await load.send(session, call)
        finally:
            gate.release()

    try:
        while (now := time.monotonic()) < deadline:
            await asyncio.sleep(max(0.0, at - now))
            await gate.acquire()
            task = asyncio.create_task(one(*load.pick()))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            at += step
            if (late := time.monotonic() - at) > 1.0:
                load.tally.shed += int(late / step)
                at += int(late / step) * step
    finally:
        if asyncio.current_task().cancelling():
            for task in in_flight:
                task.cancel()
        await asyncio.gather(*in_flight, return_exceptions=True)


async def watch_rss(
    twin: servers.Server,
    rss: Rss,
    tally: Tally,
    started: float,
    baseline_at: float,
    deadline: float,
    snap: Tracer,
) -> None:
    """Sample RSS every RSS_EVERY_S; mark the baseline; print a line a minute."""
    minute = 0
    while True:
        now = time.monotonic()
        value = servers.rss_mb(twin.proc.pid)
        if twin.proc.poll() is not None or value is None:
            raise servers.ServerError(f"twin exited with {twin.proc.returncode}:\n{twin.log_tail()}")
        rss.samples.append(((now - started) / 60, value))
        if rss.baseline is None and now >= baseline_at:
            rss.baseline = value
            await snap()
        if now - started >= 60 * (minute + 1):
            minute += 1
            print(
                f"  minute {minute:3d}: RSS {value:7.1f} MiB, {tally.requests} requests, "
                f"{sum(tally.expected.values())} expected / "
                f"{sum(tally.unexpected.values())} unexpected errors, "
                f"{tally.stream_sessions} stream sessions",
                file=sys.stderr,
            )
        if now >= deadline:
            return
        await asyncio.sleep(min(RSS_EVERY_S, max(0.0, deadline - now)))


async def run_load(
    twin: servers.Server, gateway_url: str, args: argparse.Namespace, snap: Tracer
) -> tuple[Tally, Rss]:
    tally = Tally()
    automation = Session("automation", twin.url, automation_login)
    gateway = Session("gateway", gateway_url, gateway_login)
    control = httpx.AsyncClient(base_url=f"http://{servers.HOST}:{twin.control_port}", timeout=60)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    try:
        await automation.login()
        await gateway.login()
        load = Load(automation, gateway, tally, args.seed)
        rss = Rss(start=servers.rss_mb(twin.proc.pid))
        await snap()  # with --tracemalloc: tracing starts here
        started = time.monotonic()
        deadline = started + args.minutes * 60
        baseline_at = started + args.baseline_minutes * 60
        rng = random.Random(args.seed + 1)
        try:
            async with asyncio.TaskGroup() as group:  # one failing (the twin gone) ends the others
                group.create_task(drive(load, args.rate, deadline))
                group.create_task(fault_driver(control, tally, args.fault_every, deadline))
                group.create_task(ws_subscriber(twin.port, automation, tally, rng, deadline))
                group.create_task(sse_subscriber(automation, tally, rng, deadline))
                group.create_task(watch_rss(twin, rss, tally, started, baseline_at, deadline, snap))
        except ExceptionGroup as group:
            raise group.exceptions[0] from None
        await asyncio.sleep(1.0)  # let the last requests' effects settle before the final reading
        rss.end = servers.rss_mb(twin.proc.pid)
        await snap()
        return tally, rss
    finally:
        for client in (automation.http, gateway.http, control):
            await client.aclose()


def twin_argv(state_dir: Path, port: int, control_port: int, trace_dir: Path | None) -> list[str]:
    command = [sys.executable, "-c", TRACED_BOOT, str(trace_dir)] if trace_dir else None
    return servers.twin_run(SCENARIO, port, control_port, "--state-dir", str(state_dir), command=command)


def gateway_of(twin: servers.Server, timeout: float = 30.0) -> str:
    """The camera's HTTP gateway address, read off the twin's start banner."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(rf"{CAMERA} gateway\s+(http://\S+)", twin.log_tail(100_000))
        if found:
            return found.group(1)
        time.sleep(0.1)
    raise servers.ServerError(f"no {CAMERA} gateway in the twin's banner:\n{twin.log_tail()}")


# Tracemalloc -------------------------------------------------------------------------------------
def _site(traceback: tracemalloc.Traceback) -> str:
    """Where an allocation is charged: the innermost frame of the project's own code (not the
    libraries it calls), else the innermost frame."""
    root = str(servers.ROOT) + "/"
    for frame in reversed(traceback):
        if frame.filename.startswith(root) and "/.venv/" not in frame.filename:
            return f"{frame.filename.removeprefix(root)}:{frame.lineno}"
    frame = traceback[-1]
    return f"{frame.filename.rsplit('site-packages/', 1)[-1]}:{frame.lineno}"


def top_growth(trace_dir: Path, limit: int = 25) -> str:
    """The project lines whose live allocations grew most from the first snapshot to the last."""
    snaps = sorted(trace_dir.glob("*.snap"), key=lambda p: int(p.stem))
    if len(snaps) < 2:
        return "tracemalloc: fewer than two snapshots"
    growth: dict[str, list[int]] = {}
    for sign, path in ((-1, snaps[0]), (1, snaps[-1])):
        for trace in tracemalloc.Snapshot.load(str(path)).traces:
            site = growth.setdefault(_site(trace.traceback), [0, 0])
            site[0] += sign * trace.size
            site[1] += sign
    total = sum(size for size, _ in growth.values())
    lines = [f"tracemalloc: {snaps[0].name} -> {snaps[-1].name}: {total / 1024:+.1f} KiB live; top {limit}:"]
    for site, (size, count) in sorted(growth.items(), key=lambda kv: -kv[1][0])[:limit]:
        lines.append(f"  {size / 1024:+9.1f} KiB {count:+7d} blocks  {site}")
    return "\n".join(lines)


# Report ------------------------------------------------------------------------------------------
def report(tally: Tally, rss: Rss, args: argparse.Namespace) -> tuple[str, bool]:
    latencies = sorted(tally.latencies)
    p50, p99 = (percentile(latencies, q) * 1000 for q in (50, 99))
    growth = (rss.end / rss.baseline - 1) if rss.end and rss.baseline else math.nan
    lines = [
        f"soak: {args.minutes:g} min at {args.rate:g} requests/s over both APIs, "
        f"a fault every {args.fault_every:g} s",
        f"  RSS       start {rss.start:.1f} MiB, at {args.baseline_minutes:g} min {rss.baseline:.1f} MiB, "
        f"end {rss.end:.1f} MiB ({growth:+.1%} since {args.baseline_minutes:g} min; "
        f"limit +{GROWTH_LIMIT:.0%})",
        f"  requests  {tally.requests} ({tally.requests / (args.minutes * 60):.1f}/s), "
        f"p50 {p50:.1f} ms, p99 {p99:.1f} ms; {tally.shed} not sent ({MAX_IN_FLIGHT} in flight)",
        f"  streams   {tally.stream_sessions} WS/SSE sessions, {tally.stream_events} events",
        f"  errors    {sum(tally.expected.values())} expected from injected faults, "
        f"{sum(tally.unexpected.values())} unexpected",
    ]
    lines += [f"    expected   {n:6d}  {what}" for what, n in sorted(tally.expected.items())]
    lines += [f"    UNEXPECTED {n:6d}  {what}" for what, n in sorted(tally.unexpected.items())]
    lines += [f"    e.g. {s}" for s in tally.samples]
    ok = not tally.unexpected and not math.isnan(growth) and growth <= GROWTH_LIMIT
    lines.append(f"soak: {'PASS' if ok else 'FAIL'}")
    if args.json:
        doc = {
            "minutes": args.minutes, "rate": args.rate, "baseline_minutes": args.baseline_minutes,
            "rss_mib": {"start": rss.start, "baseline": rss.baseline, "end": rss.end, "growth": growth},
            "rss_samples": rss.samples, "requests": tally.requests, "shed": tally.shed,
            "p50_ms": p50, "p99_ms": p99,
            "expected_errors": dict(tally.expected), "unexpected_errors": dict(tally.unexpected),
            "stream_sessions": tally.stream_sessions, "passed": ok,
        }  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return "\n".join(lines), ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--minutes", type=float, default=30.0, help="length of the load (default 30)")
    p.add_argument("--baseline-minutes", type=float, default=5.0, help="RSS baseline time (default 5)")
    p.add_argument("--rate", type=float, default=40.0, help="requests per second (default 40)")
    p.add_argument("--fault-every", type=float, default=60.0, help="seconds between faults (default 60)")
    p.add_argument("--seed", type=int, default=7, help="seed of the request mix")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON")
    p.add_argument("--tracemalloc", type=Path, metavar="DIR", help="trace the twin's allocations (slow)")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.rate <= 0 or args.fault_every <= 0 or args.baseline_minutes <= 0:
        p.error("--minutes, --baseline-minutes, --rate and --fault-every must be > 0")
    args.baseline_minutes = min(args.baseline_minutes, args.minutes / 2)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.tracemalloc:
        args.tracemalloc.mkdir(parents=True, exist_ok=True)
        for old in args.tracemalloc.glob("*.snap"):
            old.unlink()
    twin = None
    with tempfile.TemporaryDirectory(prefix="soak-state-") as state:
        try:
            port, control_port = servers.free_port(), servers.free_port()
            twin = servers.launch(
                "twin", twin_argv(Path(state), port, control_port, args.tracemalloc), port, control_port
            )
            servers.wait_healthy(twin, timeout=60)
            servers.initialize_admin(twin, **ADMIN)
            gateway = gateway_of(twin)
            print(f"  twin pid {twin.proc.pid}: {twin.url}, gateway {gateway}", file=sys.stderr)

            tally, rss = asyncio.run(run_load(twin, gateway, args, Tracer(twin, args.tracemalloc)))
        except (servers.ServerError, OSError, httpx.HTTPError) as err:
            print(f"soak: {err!r}", file=sys.stderr)
            return 1
        except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or SIGTERM (see run_load)
            print("soak: interrupted", file=sys.stderr)
            return 130
        finally:
            servers.stop(twin)
    text, ok = report(tally, rss, args)
    print(text)
    if args.tracemalloc:
        print(top_growth(args.tracemalloc))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
