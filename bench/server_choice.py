"""``python -m bench.server_choice`` (``python -m bench --only servers``): which ASGI server, per core.

The bare FastAPI app of :mod:`bench.bare` (``GET /api/health``) served by one process of each:

  uvicorn-h11          uvicorn, pure-Python h11 parser, asyncio's own event loop
  uvicorn-httptools    uvicorn, httptools parser, asyncio's own event loop
  uvicorn-uvloop       uvicorn, httptools parser, uvloop (what ``twin run`` serves with)
  granian              Granian's ASGI interface, one worker (only if ``granian`` is installed)

Trials alternate over the servers; each is loaded on ``--connections`` keep-alive connections by the
load generator here. The server's CPU time (its process and any children, e.g. Granian's worker) is
read as each measured window opens and closes, so req/s per server core-second is what one busy core
of that server answers, whatever the load generator on the same machine manages. The ratios are to
``uvicorn-httptools`` measured in the same run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

from bench import loadgen, servers
from bench.http_load import load_args, load_parser
from bench.report import Summary, core_ratio, ratio, table

PATH = "/api/health"
REFERENCE = "uvicorn-httptools"


def variants() -> dict[str, list[str]]:
    """The command of each server (a port is appended), the ones that can run here."""
    bare = [sys.executable, "-m", "bench.bare"]
    out = {
        "uvicorn-h11": [*bare, "--loop", "asyncio", "--http", "h11", "--port"],
        "uvicorn-httptools": [*bare, "--loop", "asyncio", "--http", "httptools", "--port"],
        "uvicorn-uvloop": [*bare, "--loop", "uvloop", "--http", "httptools", "--port"],
    }
    granian = shutil.which("granian", path=str(Path(sys.executable).parent))
    if granian and importlib.util.find_spec("granian") is not None:
        out["granian"] = [
            granian, "--interface", "asgi", "--workers", "1", "--no-ws",
            "--log-level", "warning", "--host", servers.HOST, "bench.bare:app", "--port",
        ]  # fmt: skip
    return out


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its descendants so far (Granian serves from a worker process), from
    ``/proc``; a process that ended meanwhile counts nothing."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    total = 0.0
    for member in tree:
        try:
            total += servers.cpu_seconds(member)
        except (OSError, ValueError, IndexError):
            continue
    return total


def main(argv: list[str] | None = None) -> int:
    args = load_args(load_parser("python -m bench.server_choice", __doc__, "server"), argv)
    started: dict[str, servers.Server] = {}
    results: dict[str, list[loadgen.Result]] = {}
    try:
        for name, command in variants().items():
            port = servers.free_port()
            started[name] = servers.launch(name, [*command, str(port)], port)
        for server in started.values():
            servers.wait_healthy(server)
        for n in range(1, args.trials + 1):
            for name, server in started.items():
                pid = server.proc.pid
                run = loadgen.run(
                    servers.HOST, server.port, PATH, args.connections, args.duration, args.warmup,
                    cpu=lambda pid=pid: tree_cpu(pid),
                )  # fmt: skip
                result = asyncio.run(run)
                results.setdefault(name, []).append(result)
                print(
                    f"  trial {n}/{args.trials} {name:<18} {result.rps:8.1f} req/s "
                    f"{result.per_core_second:8.0f} req/core-s",
                    file=sys.stderr,
                )
        rss = {name: servers.rss_mb(server.proc.pid) for name, server in started.items()}
    except (servers.ServerError, OSError) as err:
        print(f"bench.server_choice: {err}", file=sys.stderr)
        return 1
    finally:
        for server in started.values():
            servers.stop(server)
    summaries = [Summary(name, trials, rss.get(name)) for name, trials in results.items()]
    ref = next(s for s in summaries if s.name == REFERENCE)
    header = (
        f"servers: bare FastAPI GET {PATH}, one process each, {args.trials} x {args.duration:g} s trials "
        f"alternating, {args.connections} connections; ratios to {REFERENCE}"
        + ("" if "granian" in results else " (granian not installed: not measured)")
    )
    ratios = {s.name: ratio(s, ref) for s in summaries}
    per_core = {s.name: core_ratio(s, ref) for s in summaries}
    print(table(summaries, header, ratios, None, per_core))
    if args.json:
        numbers = {
            s.name: {**s.as_dict(), "ratio": _num(ratios[s.name]), "per_core_ratio": _num(per_core[s.name])}
            for s in summaries
        }
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


if __name__ == "__main__":
    sys.exit(main())
