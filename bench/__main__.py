"""``python -m bench``: the twin's benchmarks, one part after another (all of them by default, about
20 minutes on 2 cores; each part says how long it took), or only the parts named with ``--only``
(``--only http,camera``).

Every part is also a module of its own (``python -m bench.<module> --help`` for all its options);
this command runs each with the options below where they apply, and ``--json PATH`` writes the HTTP
part's numbers to PATH and every other part's to PATH with the part's name as suffix
(``out.json`` -> ``out.camera.json``). The exit status is the highest of the parts' statuses.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Part:
    """One benchmark: ``python -m bench.<module>`` run with the argv ``argv(args, name)`` builds."""

    name: str  # what --only takes
    module: str  # under bench/; its main(argv) returns an exit status
    argv: Callable[[argparse.Namespace, str], list[str]]  # (the options, the part's name) -> its argv
    summary: str  # one line for --help


def json_to(args: argparse.Namespace, part: str) -> list[str]:
    """``--json PATH`` for ``part`` (``--json`` with the part's suffix), or nothing."""
    if args.json is None:
        return []
    return ["--json", str(args.json if part == "http" else args.json.with_suffix(f".{part}.json"))]


def http_argv(args: argparse.Namespace, part: str) -> list[str]:
    trials = ["--trials", str(args.trials)] if args.trials else []
    return [*trials, "--duration", str(args.duration), "--warmup", str(args.warmup),
            "--connections", str(args.connections), *json_to(args, part)]  # fmt: skip


def day_argv(args: argparse.Namespace, part: str) -> list[str]:
    return ["--hours", "24", "--trials", str(args.trials or 3), *json_to(args, part)]


# In the order a full run takes them. To add a part, add an entry (see Part).
# fmt: off
PARTS: tuple[Part, ...] = (
    Part("http", "http_load", http_argv,
         "req/s: bare FastAPI, twin health, device GET (JWT), 5 000-point page"),
    Part("camera", "camera", json_to,
         "live video: the scene's render cost; one camera's CPU and render-to-client latency; the sweep"),
    Part("rtsp", "rtsp_paused", json_to,
         "a stock RTSP client (default probing) of a paused world: first frame; a paused viewer's CPU"),
    Part("fanout", "fanout", json_to,
         "event fan-out to WebSocket and SSE clients: drops; the largest drop-free fleet"),
    Part("servers", "server_choice", json_to,
         "ASGI servers per core-second on the bare app: uvicorn h11/httptools/uvloop, Granian"),
    Part("stalls", "stalls", json_to,
         "event-loop blocks and p99/p50 of a 5 000-point page, 1 000 sensors at speed 1"),
    Part("day", "scenario_run", day_argv,
         "a fleet's day: 24 h x 1 000 sensors at 1 Hz with rules on the step clock: wall time"),
    Part("chat", "chat", json_to,
         "chat token pacing at speed 1: one socket's lateness, 50 sockets' gaps"),
    Part("passthrough", "passthrough", json_to,
         "real members served through the twin against direct: req/s, latency, video"),
    Part("recorder", "recorder", json_to,
         "twin record in front of a member against direct: p50 on one connection"),
    Part("publisher", "publisher", json_to,
         "the fleet published to an outside MQTT broker: produced, received, lost"),
    Part("brokers", "brokers", json_to,
         "amqtt vs NATS vs mosquitto at 2 000-10 000 msg/s offered: received/produced, CPU, RSS"),
    Part("hostile", "hostile", json_to,
         "a hostile local client: cross-site control, endless headers, idle sockets, stalled SSE"),
    Part("shards", "shards", json_to,
         "a world on Ray shards: 1 vs 2 shards (cameras, samples/s), barrier, 100 k sensors, idle cameras"),
)
# fmt: on
BY_NAME = {part.name: part for part in PARTS}


def parts_help() -> str:
    width = max(len(p.name) for p in PARTS)
    return "parts (in the order they run):\n" + "\n".join(f"  {p.name:<{width}}  {p.summary}" for p in PARTS)


def chosen(text: str) -> list[Part]:
    """The parts ``--only`` names (comma-separated), in the order a full run takes them."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(unknown) or '(none named)'}; choose from {', '.join(BY_NAME)}"
        )
    return [p for p in PARTS if p.name in names]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        epilog=parts_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--only", type=chosen, metavar="PART,...", help="run only these parts (default: all)")
    p.add_argument("--list", action="store_true", help="list the parts and exit")
    p.add_argument("--trials", type=int, help="trials of the http and day parts (default 3)")
    p.add_argument("--duration", type=float, default=3.0, help="http: measured seconds per trial (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="http: warm-up seconds per trial (default 0.5)")
    p.add_argument("--connections", type=int, default=32, help="http: keep-alive connections (default 32)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write each part's numbers as JSON (see above)")
    args = p.parse_args(argv)
    if (args.trials is not None and args.trials < 1) or args.duration <= 0 or args.warmup < 0:
        p.error("--trials must be >= 1, --duration > 0, --warmup >= 0")
    if args.connections < 1:
        p.error("--connections must be >= 1")
    return args


def run_part(part: Part, args: argparse.Namespace) -> int:
    """Import the part's module only now (a part that cannot load fails alone) and run its ``main``."""
    argv = part.argv(args, part.name)
    print(f"== bench part {part.name}: python -m bench.{part.module} {' '.join(argv)}".rstrip())
    sys.stdout.flush()
    started = time.monotonic()
    try:
        module = importlib.import_module(f"bench.{part.module}")
        status = module.main(argv)
    except KeyboardInterrupt:
        raise
    except SystemExit as exit_:  # an argparse error of the part
        status = exit_.code if isinstance(exit_.code, int) else 1
    print(f"== bench part {part.name}: {time.monotonic() - started:.0f} s")
    return int(status or 0)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print(parts_help())
        return 0
    worst = 0
    try:
        for n, part in enumerate(args.only or PARTS):
            if n:
                print()
            status = run_part(part, args)
            if status:
                print(f"bench part {part.name}: exit status {status}", file=sys.stderr)
            worst = max(worst, status)
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    return worst


if __name__ == "__main__":
    sys.exit(main())
