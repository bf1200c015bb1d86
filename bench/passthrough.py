"""``python -m bench.passthrough``: what serving a real member through the twin costs, against calling
the real member directly, measured in the same run.

Two ``twin run`` processes on loopback, realtime clock at speed 1, one camera and two sensors each:

  device  the stand-in for the real camera and automation server (the bench logs in to both)
  front   ``--real-camera cam-01=<device's gateway>`` and ``--real-automation <device's API>``:
          its cam-01 gateway and automation API are passthroughs to the device's

Every round runs each load twice, ``direct`` (to the device) and ``through`` (the same request to the
front), the two one after the other in alternating order so that drift on the machine hits both:

  gateway     GET /api/v1/system/info with the gateway's token
  health      GET /api/health
  devices     GET /api/devices, authenticated (a page of the device's devices)

each once on ``--connections`` keep-alive connections (throughput: req/s) and once on one connection
(sequential requests: latency p50). Then the H.264 stream: the device's main encoder at 1280x720,
25 fps; one WebSocket on ``/api/v1/h264/main`` to the device and one through the front, open at
once for ``--seconds``. Each binary frame's arrival is recorded on both; the same frame is matched
by its content hash, and its added latency is its arrival through the front minus its arrival
direct. Frames per second are counted at each client over the window.

Targets, each the median over ``--runs`` rounds of that round's figure:

  through req/s / direct req/s >= 0.90 (at most 10 % throughput lost), per load
  through p50 - direct p50 <= 1 ms (one connection), per load
  H.264: through fps >= 0.95 x direct fps, added latency p50 <= 5 ms

and the front twin's RSS after all loads (the device's for comparison).

  .venv/bin/python -m bench.passthrough --runs 1 --seconds 2     # a quick look
  .venv/bin/python -m bench.passthrough --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from websockets.asyncio.client import connect

from bench import loadgen, servers
from bench.report import Summary, Target, table
from bench.soak import gateway_of

THROUGHPUT_TARGET = 0.90
ADDED_P50_TARGET_MS = 1.0
FPS_TARGET = 0.95
FRAME_P50_TARGET_MS = 5.0
ADMIN = {"username": "admin", "password": "bench12345"}
GATEWAY_LOGIN = {"username": "admin", "password": "password"}
ENCODER = {
    "stream_name": "main",
    "width": 1280,
    "height": 720,
    "fps": 25,
    "bitrate_bps": 2_000_000,
    "gop": 50,
}
SCENARIO = """\
name: passthrough-bench
description: Passthrough bench, one camera and two sensors on a realtime clock at speed 1.
seed: 4242
clock:
  mode: realtime
  speed: 1
  epoch: now
fleet:
  sensors:
    - type: env_sensor
      count: 2
      period: 5
      metrics:
        temperature: {kind: diurnal, mean: 21, amplitude: 4, noise: 0.2, spread: 0.1, unit: "°C"}
  cameras:
    count: 1
"""


@dataclass(frozen=True)
class Endpoint:
    """One request measured direct and through: ``member`` is ``gateway`` or ``automation``."""

    name: str
    member: str
    path: str
    auth: bool


ENDPOINTS = (
    Endpoint("gateway", "gateway", "/api/v1/system/info", True),
    Endpoint("health", "automation", "/api/health", False),
    Endpoint("devices", "automation", "/api/devices", True),
)


@dataclass
class Pair:
    """The device and the front twin, where each member answers on each, and the logins."""

    device: servers.Server
    front: servers.Server
    urls: dict[tuple[str, str], str] = field(default_factory=dict)  # (member, "direct"/"through")
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # member -> auth header
    ws_token: str = ""


@dataclass
class Frames:
    """One round of the H.264 stream, direct and through at once."""

    seconds: float
    direct_fps: float
    through_fps: float
    matched: int
    unmatched: int  # frames seen direct in the window and never through
    added_p50_ms: float
    added_p99_ms: float

    @property
    def fps_ratio(self) -> float:
        return self.through_fps / self.direct_fps if self.direct_fps > 0 else math.nan


# Servers ------------------------------------------------------------------------------------------
def start_pair(workdir: Path) -> Pair:
    """The device twin, then the front twin pointed at it; both healthy and logged in to."""
    scenario = workdir / "passthrough.yaml"
    scenario.write_text(SCENARIO)
    limit = ("--rate-limit", str(servers.RATE_LIMIT))
    port, control = servers.free_port(), servers.free_port()
    device = servers.launch("device", servers.twin_run(scenario, port, control, *limit), port, control)
    front = None
    try:
        took = servers.wait_healthy(device, timeout=60)
        device_gateway = gateway_of(device)
        print(f"  device ready on {device.url} in {took:.1f} s, gateway {device_gateway}", file=sys.stderr)
        port, control = servers.free_port(), servers.free_port()
        real = ("--real-camera", f"cam-01={device_gateway}", "--real-automation", device.url)
        front = servers.launch(
            "front", servers.twin_run(scenario, port, control, *limit, *real), port, control
        )
        took = servers.wait_healthy(front, timeout=60)
        front_gateway = gateway_of(front)
        print(f"  front ready on {front.url} in {took:.1f} s, gateway {front_gateway}", file=sys.stderr)
        pair = Pair(device, front)
        pair.urls = {
            ("gateway", "direct"): device_gateway,
            ("gateway", "through"): front_gateway,
            ("automation", "direct"): device.url,
            ("automation", "through"): front.url,
        }
        log_in(pair)
        return pair
    except BaseException:
        servers.stop(front)
        servers.stop(device)
        raise


def log_in(pair: Pair) -> None:
    """The automation server's first admin and the gateway's login, both on the device; the
    encoder set to the bench's stream."""
    jwt = servers.initialize_admin(pair.device, **ADMIN)
    pair.headers["automation"] = {"Authorization": f"Bearer {jwt}"}
    gateway = pair.urls["gateway", "direct"]
    status, body = servers.http_json("POST", gateway + "/api/login", GATEWAY_LOGIN)
    if status != 200 or not isinstance(body, dict):
        raise servers.ServerError(f"device: POST /api/login answered {status}: {body!r}")
    token = body["data"]["token"]
    pair.headers["gateway"] = {"Authorization": token}
    pair.ws_token = token.removeprefix("Bearer ")
    status, body = servers.http_json(
        "PUT", gateway + "/api/v1/media/encoder/reconfig", ENCODER, pair.headers["gateway"]
    )
    if status != 200:
        raise servers.ServerError(f"device: PUT /api/v1/media/encoder/reconfig answered {status}: {body!r}")
    for endpoint in ENDPOINTS:  # each answers 200 both ways before anything is measured
        for way in ("direct", "through"):
            url = pair.urls[endpoint.member, way] + endpoint.path
            status, body = servers.http_json("GET", url, headers=headers_of(pair, endpoint))
            if status != 200:
                raise servers.ServerError(f"{way}: GET {url} answered {status}: {str(body)[:300]}")


def headers_of(pair: Pair, endpoint: Endpoint) -> dict[str, str]:
    return pair.headers[endpoint.member] if endpoint.auth else {}


# Loads --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Load:
    result: loadgen.Result
    cpu_us: dict[str, float]  # twin -> CPU µs per completed request in the window


async def timed(pair: Pair, endpoint: Endpoint, way: str, connections: int, args: argparse.Namespace) -> Load:
    """One load, and each twin's CPU time per completed request over the measured window."""
    parts = urlsplit(pair.urls[endpoint.member, way])
    pids = {"device": pair.device.proc.pid, "front": pair.front.proc.pid}
    start = time.perf_counter()

    async def cpu_at(t: float) -> dict[str, float]:
        await asyncio.sleep(t - time.perf_counter())
        return {name: servers.cpu_seconds(pid) for name, pid in pids.items()}

    before = asyncio.create_task(cpu_at(start + args.warmup))
    after = asyncio.create_task(cpu_at(start + args.warmup + args.seconds))
    result = await loadgen.run(
        parts.hostname or servers.HOST,
        parts.port or 80,
        endpoint.path,
        connections,
        args.seconds,
        args.warmup,
        headers_of(pair, endpoint),
    )
    used = {name: (await after)[name] - (await before)[name] for name in pids}
    per_request = {
        name: 1e6 * cpu / result.requests if result.requests else math.nan for name, cpu in used.items()
    }
    return Load(result, per_request)


def row(endpoint: Endpoint, way: str, connections: int) -> str:
    return f"{endpoint.name} {way} x{connections}"


async def watch(url: str, arrivals: dict[bytes, float], window: loadgen.Window, counted: list[int]) -> None:
    """Receive binary frames until the window ends; every frame's arrival goes to ``arrivals`` by
    content hash, and frames arriving inside the window are counted."""
    async with connect(url, max_size=None, compression=None) as ws:
        while True:
            message = await ws.recv(decode=False)
            now = time.perf_counter()
            if now > window.end + 0.5:  # late copies of the window's last frames still arrive
                return
            arrivals.setdefault(hashlib.blake2b(message, digest_size=16).digest(), now)
            if now in window:
                counted[0] += 1


async def frames(pair: Pair, args: argparse.Namespace) -> Frames:
    """Both viewers at once; added latency of every frame that arrived direct inside the window."""
    target = f"/api/v1/h264/main?token={pair.ws_token}"
    now = time.perf_counter()
    window = loadgen.Window(now + args.warmup + 1.0, now + args.warmup + 1.0 + args.seconds)
    direct: dict[bytes, float] = {}
    through: dict[bytes, float] = {}
    counts = [[0], [0]]
    urls = [pair.urls["gateway", way].replace("http://", "ws://") + target for way in ("direct", "through")]
    tasks = [
        asyncio.create_task(watch(urls[0], direct, window, counts[0])),
        asyncio.create_task(watch(urls[1], through, window, counts[1])),
    ]
    done, pending = await asyncio.wait(tasks, timeout=window.end - now + 10.0)
    for task in pending:
        task.cancel()
    for task in done:
        task.result()  # a viewer that failed fails the round
    added = sorted(
        (through[key] - at) * 1000 for key, at in direct.items() if at in window and key in through
    )
    in_window = sum(1 for at in direct.values() if at in window)
    return Frames(
        seconds=args.seconds,
        direct_fps=counts[0][0] / args.seconds,
        through_fps=counts[1][0] / args.seconds,
        matched=len(added),
        unmatched=in_window - len(added),
        added_p50_ms=statistics.median(added) if added else math.nan,
        added_p99_ms=loadgen.percentile(added, 99),
    )


def round_of(
    pair: Pair,
    n: int,
    args: argparse.Namespace,
    results: dict[str, list[loadgen.Result]],
    cpu: dict[str, list[dict[str, float]]],
) -> Frames:
    """One round: every load both ways (order alternating with the round), then the stream."""
    ways = ("direct", "through") if n % 2 else ("through", "direct")
    for endpoint in ENDPOINTS:
        for connections in (args.connections, 1):
            for way in ways:
                measured = asyncio.run(timed(pair, endpoint, way, connections, args))
                results[row(endpoint, way, connections)].append(measured.result)
                cpu[row(endpoint, way, connections)].append(measured.cpu_us)
                result = measured.result
                print(
                    f"  round {n}/{args.runs} {row(endpoint, way, connections):<28} "
                    f"{result.rps:8.1f} req/s  p50 {result.p50_ms:6.2f} ms  CPU µs/request: "
                    + ", ".join(f"{name} {us:.0f}" for name, us in measured.cpu_us.items()),
                    file=sys.stderr,
                )
    stream = asyncio.run(frames(pair, args))
    print(
        f"  round {n}/{args.runs} h264 main: direct {stream.direct_fps:.1f} fps, through "
        f"{stream.through_fps:.1f} fps, {stream.matched} frames matched, added p50 "
        f"{stream.added_p50_ms:.2f} ms",
        file=sys.stderr,
    )
    return stream


# Figures ------------------------------------------------------------------------------------------
@dataclass
class Figures:
    summaries: list[Summary]
    throughput: dict[str, list[float]]  # endpoint -> through/direct req/s, per round
    added_ms: dict[str, list[float]]  # endpoint -> through p50 - direct p50 (1 connection), per round
    streams: list[Frames]
    rss_mb: dict[str, float | None]
    cpu_us: dict[str, dict[str, float]]  # load -> twin -> median CPU µs per request over the rounds

    def median_throughput(self, name: str) -> float:
        return statistics.median(self.throughput[name])

    def median_added(self, name: str) -> float:
        return statistics.median(self.added_ms[name])

    @property
    def fps_ratio(self) -> float:
        return statistics.median(s.fps_ratio for s in self.streams)

    @property
    def frame_added_ms(self) -> float:
        return statistics.median(s.added_p50_ms for s in self.streams)

    def targets(self) -> list[Target]:
        goals = []
        for endpoint in ENDPOINTS:
            goals.append(
                Target(
                    f"{endpoint.name} throughput",
                    "through/direct req/s (median of rounds)",
                    self.median_throughput(endpoint.name),
                    ">=",
                    THROUGHPUT_TARGET,
                    f"≥ {THROUGHPUT_TARGET:.2f}",
                )
            )
            goals.append(
                Target(
                    f"{endpoint.name} latency",
                    "through p50 - direct p50 ms, 1 connection (median of rounds)",
                    self.median_added(endpoint.name),
                    "<=",
                    ADDED_P50_TARGET_MS,
                    f"≤ {ADDED_P50_TARGET_MS:g} ms",
                )
            )
        goals.append(
            Target(
                "h264 frame rate",
                "through fps / direct fps (median of rounds)",
                self.fps_ratio,
                ">=",
                FPS_TARGET,
                f"≥ {FPS_TARGET:.2f}",
            )
        )
        goals.append(
            Target(
                "h264 latency",
                "added per-frame latency p50 ms (median of rounds)",
                self.frame_added_ms,
                "<=",
                FRAME_P50_TARGET_MS,
                f"≤ {FRAME_P50_TARGET_MS:g} ms",
            )
        )
        return goals


def measure(args: argparse.Namespace) -> Figures:
    with tempfile.TemporaryDirectory(prefix="bench-passthrough-") as tmp:
        pair = start_pair(Path(tmp))
        try:
            names = [
                row(e, way, c)
                for e in ENDPOINTS
                for c in (args.connections, 1)
                for way in ("direct", "through")
            ]
            results: dict[str, list[loadgen.Result]] = {name: [] for name in names}
            cpu: dict[str, list[dict[str, float]]] = {name: [] for name in names}
            streams = [round_of(pair, n, args, results, cpu) for n in range(1, args.runs + 1)]
            rss = {
                "front": servers.rss_mb(pair.front.proc.pid),
                "device": servers.rss_mb(pair.device.proc.pid),
            }
        finally:
            servers.stop(pair.front)
            servers.stop(pair.device)
    throughput, added = {}, {}
    for e in ENDPOINTS:
        many = zip(
            results[row(e, "through", args.connections)],
            results[row(e, "direct", args.connections)],
            strict=True,
        )
        one = zip(results[row(e, "through", 1)], results[row(e, "direct", 1)], strict=True)
        throughput[e.name] = [t.rps / d.rps if d.rps else math.nan for t, d in many]
        added[e.name] = [t.p50_ms - d.p50_ms for t, d in one]
    summaries = [
        Summary(name, results[name], rss["front"] if "through" in name else rss["device"]) for name in names
    ]
    cpu_us = {
        name: {twin: statistics.median(r[twin] for r in cpu[name]) for twin in cpu[name][0]} for name in names
    }
    return Figures(summaries, throughput, added, streams, rss, cpu_us)


def report(figures: Figures, args: argparse.Namespace) -> str:
    header = (
        f"passthrough: {args.runs} round(s) of {args.seconds:g} s loads (+{args.warmup:g} s warm-up), "
        f"direct to the device twin and through the front twin, alternating; "
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}\n"
        + "\n".join(
            f"       {e.name:<8} GET {e.path}{' (authenticated)' if e.auth else ''} on {e.member}"
            for e in ENDPOINTS
        )
    )
    ratios = {}
    for e in ENDPOINTS:
        ratios[row(e, "through", args.connections)] = figures.median_throughput(e.name)
    lines = [table(figures.summaries, header, ratios), ""]
    for e in ENDPOINTS:
        per_round = " ".join(f"{v:.3f}" for v in figures.throughput[e.name])
        added = " ".join(f"{v:+.2f}" for v in figures.added_ms[e.name])
        lines.append(
            f"{e.name:<8} through/direct req/s per round: {per_round}; added p50 ms per round: {added}"
        )
    for e in ENDPOINTS:
        direct, through = (figures.cpu_us[row(e, way, args.connections)] for way in ("direct", "through"))
        lines.append(
            f"{e.name:<8} CPU µs per request (x{args.connections}, median): direct: device "
            f"{direct['device']:.0f}; through: device {through['device']:.0f} + front {through['front']:.0f}"
        )
    for n, s in enumerate(figures.streams, 1):
        lines.append(
            f"h264 round {n}: direct {s.direct_fps:.2f} fps, through {s.through_fps:.2f} fps "
            f"(ratio {s.fps_ratio:.3f}); {s.matched} frames matched, {s.unmatched} not seen through; "
            f"added latency p50 {s.added_p50_ms:.2f} ms, p99 {s.added_p99_ms:.2f} ms"
        )
    front, device = figures.rss_mb["front"], figures.rss_mb["device"]
    lines.append(
        f"RSS after all loads: front twin {front or math.nan:.1f} MB, device twin {device or math.nan:.1f} MB"
    )
    lines.append("")
    for goal in figures.targets():
        lines.append(f"target {goal.row}: {goal.what} = {goal.value:.3f}, want {goal.text}: {goal.verdict}")
    return "\n".join(lines)


def to_json(figures: Figures, args: argparse.Namespace) -> dict[str, Any]:
    return {
        "runs": args.runs,
        "seconds": args.seconds,
        "warmup_s": args.warmup,
        "connections": args.connections,
        "cpus": os.cpu_count(),
        "loads": {s.name: s.as_dict() for s in figures.summaries},
        "throughput_ratio_per_round": figures.throughput,
        "added_p50_ms_per_round": figures.added_ms,
        "h264": [asdict(s) for s in figures.streams],
        "rss_mb": figures.rss_mb,
        "cpu_us_per_request": figures.cpu_us,
        "targets": {g.row: g.as_dict() for g in figures.targets()},
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.passthrough",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--runs", type=int, default=3, help="rounds of every load (default 3)")
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per load (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds per load (default 0.5)")
    p.add_argument(
        "--connections", type=int, default=16, help="connections of the throughput loads (default 16)"
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if args.runs < 1 or args.seconds <= 0 or args.warmup < 0 or args.connections < 1:
        p.error("--runs and --connections must be >= 1, --seconds > 0, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        figures = measure(args)
    except (servers.ServerError, OSError) as err:
        print(f"bench.passthrough: {err}", file=sys.stderr)
        return 1
    print(report(figures, args))
    if args.json:
        args.json.write_text(json.dumps(to_json(figures, args), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
