"""``python -m bench``: req/s of a bare FastAPI ``GET /api/health`` next to the twin's, from one run.

Both servers run in their own subprocess on free loopback ports; the load generator runs here.
Trials alternate baseline/twin so that drift on the machine hits both alike. The table shows the
median req/s over the trials, every trial's req/s, p50/p99 latency of the median trial, the
non-200 responses and transport errors over all trials, and each server's RSS after the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

from bench import loadgen, servers
from bench.report import Summary, ratio, table

PATH = "/api/health"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--trials", type=int, default=3, help="trials per server (default 3)")
    p.add_argument("--duration", type=float, default=3.0, help="measured seconds per trial (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds per trial (default 0.5)")
    p.add_argument("--connections", type=int, default=32, help="keep-alive connections (default 32)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if args.trials < 1 or args.duration <= 0 or args.warmup < 0 or args.connections < 1:
        p.error("--trials and --connections must be >= 1, --duration > 0, --warmup >= 0")
    return args


def trial(server: servers.Server, args: argparse.Namespace) -> loadgen.Result:
    """One timed load against ``server``."""
    load = loadgen.run(servers.HOST, server.port, PATH, args.connections, args.duration, args.warmup)
    return asyncio.run(load)


def run_trials(baseline: servers.Server, twin: servers.Server, args: argparse.Namespace) -> list[Summary]:
    """Alternate baseline and twin trials; then read each server's RSS."""
    results: dict[str, list[loadgen.Result]] = {"baseline": [], "twin": []}
    for n in range(1, args.trials + 1):
        for name, server in (("baseline", baseline), ("twin", twin)):
            result = trial(server, args)
            results[name].append(result)
            print(f"  trial {n}/{args.trials} {name:<8} {result.rps:9.1f} req/s", file=sys.stderr)
    return [
        Summary("baseline", results["baseline"], servers.rss_mb(baseline.proc.pid)),
        Summary("twin", results["twin"], servers.rss_mb(twin.proc.pid)),
    ]


def header(args: argparse.Namespace) -> str:
    """What was measured, and on what."""
    return (
        f"bench: GET {PATH}, {args.connections} connections, {args.trials} x {args.duration:g} s trials "
        f"(+{args.warmup:g} s warm-up) per server\n"
        f"       python {platform.python_version()}, {os.cpu_count()} CPUs; load generator in-process"
    )


def to_json(summaries: list[Summary], args: argparse.Namespace) -> dict[str, Any]:
    """The numbers for ``--json``."""
    by_name = {s.name: s for s in summaries}
    value = ratio(by_name["twin"], by_name["baseline"])
    return {
        "path": PATH,
        "connections": args.connections,
        "trials": args.trials,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "servers": {s.name: s.as_dict() for s in summaries},
        "ratio_twin_over_baseline": None if math.isnan(value) else round(value, 4),
    }


def measure(args: argparse.Namespace) -> list[Summary]:
    """Start both servers, run the trials, and always stop both servers."""
    started: list[servers.Server] = []
    try:
        started.append(servers.start_bare())
        started.append(servers.start_twin())
        for server in started:
            took = servers.wait_healthy(server)
            print(
                f"  {server.name} ready on {server.url} in {took:.1f} s (pid {server.proc.pid})",
                file=sys.stderr,
            )
        return run_trials(started[0], started[1], args)
    finally:
        for server in reversed(started):
            servers.stop(server)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; exit status 1 if a server did not come up."""
    args = parse_args(argv)
    try:
        summaries = measure(args)
    except servers.ServerError as err:
        print(f"bench: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    by_name = {s.name: s for s in summaries}
    print(table(summaries, header(args)))
    print(f"\ntwin/baseline ratio of medians: {ratio(by_name['twin'], by_name['baseline']):.3f}")
    if args.json:
        args.json.write_text(json.dumps(to_json(summaries, args), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
