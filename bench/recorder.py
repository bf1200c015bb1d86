"""``python -m bench.recorder``: what ``twin record`` adds to an answer, against asking the same
member directly, measured in the same run.

One ``twin run`` on loopback (realtime clock at speed 1, one camera and two sensors: the passthrough
bench's scenario) stands in for the real members; two recorders sit in front of it, each writing its
fixture to a temporary directory:

  twin record --camera <the twin's cam-01 gateway> --listen 127.0.0.1:0 --duration ... --out ...
  twin record --automation <the twin's automation API> --listen 127.0.0.1:0 --duration ... --out ...

Every round runs each load on one keep-alive connection (sequential requests: latency), ``direct``
(to the twin) and ``through`` (the same request to its recorder), the two one after the other in
alternating order so that drift on the machine hits both:

  gateway     GET /api/v1/system/info with the gateway's token
  health      GET /api/health

Figures per load, each the median over ``--runs`` rounds: p50 direct, p50 through, and the round's
difference (through - direct); p99 alongside. Nothing is judged: this is the figure the README quotes.

  .venv/bin/python -m bench.recorder --runs 1 --seconds 2     # a quick look
  .venv/bin/python -m bench.recorder --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench import loadgen, servers
from bench.passthrough import GATEWAY_LOGIN, SCENARIO
from bench.soak import gateway_of

LOADS = (("gateway", "/api/v1/system/info", True), ("health", "/api/health", False))
"""(name, path, whether it needs the gateway's token); ``gateway`` goes to the camera's recorder."""


@dataclass
class Members:
    twin: servers.Server
    recorders: dict[str, servers.Server]
    urls: dict[tuple[str, str], str]  # (load, "direct"/"through") -> base URL
    token: str


@dataclass(frozen=True)
class Figure:
    load: str
    direct_p50_ms: float
    through_p50_ms: float
    added_p50_ms: float
    direct_p99_ms: float
    through_p99_ms: float
    requests: int
    errors: int


def recording_at(recorder: servers.Server, timeout: float = 30.0) -> str:
    """The address ``twin record`` prints once it listens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"twin: recording at (http://\S+)", recorder.log_tail(100_000))
        if found:
            return found.group(1)
        if recorder.proc.poll() is not None:
            break
        time.sleep(0.1)
    raise servers.ServerError(f"{recorder.name} did not start:\n{recorder.log_tail()}")


def start(workdir: Path, duration: float) -> Members:
    scenario = workdir / "recorder.yaml"
    scenario.write_text(SCENARIO)
    port, control = servers.free_port(), servers.free_port()
    argv = servers.twin_run(scenario, port, control, "--rate-limit", str(servers.RATE_LIMIT))
    twin = servers.launch("twin", argv, port, control)
    recorders: dict[str, servers.Server] = {}
    try:
        servers.wait_healthy(twin, timeout=60)
        gateway = gateway_of(twin)
        script = servers.TWIN_SCRIPT
        command = [str(script)] if script.exists() else [sys.executable, "-m", "twin.cli"]
        for name, flag, target in (("gateway", "--camera", gateway), ("health", "--automation", twin.url)):
            record = [
                *command, "record", flag, target, "--listen", f"{servers.HOST}:0",
                "--duration", str(duration), "--out", str(workdir / f"{name}.ndjson"),
            ]  # fmt: skip
            recorders[name] = servers.launch(f"recorder-{name}", record, 0)
        urls = {("gateway", "direct"): gateway, ("health", "direct"): twin.url}
        urls |= {(name, "through"): recording_at(r) for name, r in recorders.items()}
        status, body = servers.http_json("POST", gateway + "/api/login", GATEWAY_LOGIN)
        if status != 200 or not isinstance(body, dict):
            raise servers.ServerError(f"POST /api/login answered {status}: {body!r}")
        members = Members(twin, recorders, urls, body["data"]["token"])
        for name, path, auth in LOADS:  # each answers 200 both ways before anything is measured
            for way in ("direct", "through"):
                url = urls[name, way] + path
                status, body = servers.http_json("GET", url, headers=headers(members, auth))
                if status != 200:
                    raise servers.ServerError(f"{way}: GET {url} answered {status}: {str(body)[:300]}")
        return members
    except BaseException:
        for recorder in recorders.values():
            servers.stop(recorder)
        servers.stop(twin)
        raise


def headers(members: Members, auth: bool) -> dict[str, str]:
    return {"Authorization": members.token} if auth else {}


async def one(members: Members, name: str, path: str, auth: bool, way: str, args: argparse.Namespace):
    parts = urlsplit(members.urls[name, way])
    host, port = parts.hostname or servers.HOST, parts.port or 80
    return await loadgen.run(host, port, path, 1, args.seconds, args.warmup, headers(members, auth))


def measure(args: argparse.Namespace) -> list[Figure]:
    rounds: dict[str, list[tuple[loadgen.Result, loadgen.Result]]] = {name: [] for name, _, _ in LOADS}
    duration = 60 + args.runs * len(LOADS) * 2 * (args.seconds + args.warmup + loadgen.GRACE)
    with tempfile.TemporaryDirectory(prefix="bench-recorder-") as tmp:
        members = start(Path(tmp), duration)
        try:
            for n in range(args.runs):
                for name, path, auth in LOADS:
                    order = ("direct", "through") if n % 2 == 0 else ("through", "direct")
                    got = {way: asyncio.run(one(members, name, path, auth, way, args)) for way in order}
                    rounds[name].append((got["direct"], got["through"]))
                    print(
                        f"  round {n + 1} {name}: p50 direct {got['direct'].p50_ms:.2f} ms, "
                        f"through {got['through'].p50_ms:.2f} ms",
                        file=sys.stderr,
                    )
        finally:
            for recorder in members.recorders.values():
                servers.stop(recorder)
            servers.stop(members.twin)
    median = statistics.median
    return [
        Figure(
            load=name,
            direct_p50_ms=median(d.p50_ms for d, _ in pairs),
            through_p50_ms=median(t.p50_ms for _, t in pairs),
            added_p50_ms=median(t.p50_ms - d.p50_ms for d, t in pairs),
            direct_p99_ms=median(d.p99_ms for d, _ in pairs),
            through_p99_ms=median(t.p99_ms for _, t in pairs),
            requests=sum(d.requests + t.requests for d, t in pairs),
            errors=sum(d.errors + t.errors + d.non_200 + t.non_200 for d, t in pairs),
        )
        for name, pairs in rounds.items()
    ]


def report(figures: list[Figure], args: argparse.Namespace) -> str:
    head = f"{'load':<10}{'p50 direct':>12}{'p50 through':>13}{'added p50':>11}{'p99 direct':>12}"
    head += f"{'p99 through':>13}{'requests':>10}{'errors':>8}"
    lines = [
        f"Recorder: twin record in front of a twin's members, one connection, {args.runs} rounds of "
        f"{args.seconds:g} s (medians over rounds; ms)",
        f"  {platform.python_version()} on {os.cpu_count()} CPUs",
        "",
        head,
        "-" * len(head),
    ]
    for f in figures:
        lines.append(
            f"{f.load:<10}{f.direct_p50_ms:>12.2f}{f.through_p50_ms:>13.2f}{f.added_p50_ms:>11.2f}"
            f"{f.direct_p99_ms:>12.2f}{f.through_p99_ms:>13.2f}{f.requests:>10}{f.errors:>8}"
        )
    return "\n".join(lines)


def to_json(figures: list[Figure], args: argparse.Namespace) -> dict[str, Any]:
    return {"runs": args.runs, "seconds": args.seconds, "figures": [asdict(f) for f in figures]}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.recorder", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per load and way (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds before each (default 0.5)")
    p.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = p.parse_args(argv)
    if args.runs < 1 or args.seconds <= 0 or args.warmup < 0:
        p.error("--runs must be >= 1, --seconds > 0 and --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    figures = measure(args)
    print(report(figures, args))
    if args.json:
        args.json.write_text(json.dumps(to_json(figures, args), indent=2))
    return 1 if any(f.errors for f in figures) else 0


if __name__ == "__main__":
    raise SystemExit(main())
