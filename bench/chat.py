"""``python -m bench.chat`` (``python -m bench --only chat``): chat token pacing on ``/api/chat``.

The twin runs in its own subprocess (``twin run``) on a realtime clock at speed 1 with ``--sensors``
simulated sensors and no cameras; the simulated model streams at its default pace, 20 tokens per
world second, so a token is due every 50 ms of wall time. This process logs in and opens chat
sockets (``?token=``); each socket asks "list the devices" again and again (the answer names every
device: a long reply) and records the wall time of every ``Content`` frame. Tokens of one round are
due one beat apart; the first token of a round (after the model's first-token delay and the tools)
starts a new series.

  pacing    1 socket: each token's lateness against its round's schedule (anchored on the round's
            earliest token), p50/p99/max. Target: at most one event-loop slice added per token. The
            world clock moves in slices of 10 ms of wall time (``SLICE_WALL_S``: it sleeps 10 ms,
            then runs the world up to the wall's time), so a token waits up to one slice for the
            tick that releases it. A 10 ms ``asyncio.sleep`` overshoots on a busy machine, so this
            process measures the slice as realized meanwhile (a task sleeping 10 ms in a loop) and
            the target is: p99 lateness <= p99 realized slice (the nominal 10 ms is shown too).
  fan-out   ``--sockets`` (50) sockets at once: the wall-time gap between consecutive tokens of a
            round, p50/p99/max, and the tokens delivered per second. Target: p99 gap < 100 ms.

The client counts frames by their type tag in the raw text (``"type":"Content"``) and parses only the
rest, so its own cost stays small; it still shares the machine with the twin.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from websockets.asyncio.client import connect

from bench import servers

BEAT_S = 0.05
SLICE_MS = 10.0
GAP_TARGET_MS = 100.0
ADMIN = {"username": "admin", "password": "bench12345"}
CONTENT = '"type":"Content"'
PROMPT = json.dumps({"message": "list the devices"})
SCENARIO = """\
name: chat-bench
description: Chat pacing bench, {sensors} sensors, realtime clock at speed 1, no cameras.
seed: 4242
clock:
  mode: realtime
  speed: 1
  epoch: 1767225600
fleet:
  sensors:
    - type: env_sensor
      count: {sensors}
      period: 10
      metrics:
        temperature: {{kind: diurnal, mean: 21, amplitude: 4, noise: 0.2, spread: 0.1, unit: "°C"}}
  cameras:
    count: 0
"""


@dataclass
class Figures:
    sockets: int
    seconds: float
    turns: int
    tokens: int
    tokens_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    """``pacing``: lateness against the schedule; ``fanout``: gap between consecutive tokens."""
    slice_p99_ms: float
    """A 10 ms sleep's realized period in this process during the measurement, p99."""


def start(sensors: int, workdir: Path) -> servers.Server:
    scenario = workdir / "chat.yaml"
    scenario.write_text(SCENARIO.format(sensors=sensors))
    port, control_port = servers.free_port(), servers.free_port()
    argv = servers.twin_run(scenario, port, control_port, "--rate-limit", str(servers.RATE_LIMIT))
    return servers.launch("twin", argv, port, control_port)


async def chatter(url: str, seconds: float, rounds: list[list[float]], ready: asyncio.Event) -> int:
    """Ask again and again for ``seconds``; every round's token arrival times go to ``rounds``."""
    turns = 0
    async with connect(url, max_queue=None) as ws:
        await ready.wait()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            await ws.send(PROMPT)
            current: list[float] = []
            while True:
                raw = await ws.recv()
                now = time.perf_counter()
                if CONTENT in raw:
                    current.append(now)
                    continue
                if current:
                    rounds.append(current)
                    current = []
                kind = json.loads(raw).get("type")
                if kind in ("end", "response", "Error"):
                    break
            turns += 1
    return turns


async def slices(periods: list[float]) -> None:
    """Sleep one slice after another, recording each realized period (ms), until cancelled."""
    before = time.perf_counter()
    while True:
        await asyncio.sleep(SLICE_MS / 1000)
        now = time.perf_counter()
        periods.append((now - before) * 1000)
        before = now


async def measure(
    server: servers.Server, token: str, sockets: int, seconds: float
) -> tuple[int, list[list[float]], list[float]]:
    url = f"ws://{servers.HOST}:{server.port}/api/chat?token={token}"
    rounds: list[list[float]] = []
    periods: list[float] = []
    ready = asyncio.Event()
    tasks = [asyncio.create_task(chatter(url, seconds, rounds, ready)) for _ in range(sockets)]
    await asyncio.sleep(0.5)  # every socket connected and welcomed before the clock starts counting
    ready.set()
    slicer = asyncio.create_task(slices(periods))
    turns = await asyncio.gather(*tasks)
    slicer.cancel()
    return sum(turns), rounds, periods


def lateness_ms(rounds: list[list[float]]) -> list[float]:
    """Each token's delay past its due time: the round's schedule is one beat apart, anchored so that
    its earliest token is on time."""
    out = []
    for times in rounds:
        anchor = min(t - k * BEAT_S for k, t in enumerate(times))
        out += [(t - anchor - k * BEAT_S) * 1000 for k, t in enumerate(times)]
    return out


def gaps_ms(rounds: list[list[float]]) -> list[float]:
    return [(b - a) * 1000 for times in rounds for a, b in itertools.pairwise(times)]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, math.ceil(q * len(ranked)) - 1)]


def figures(
    sockets: int,
    seconds: float,
    turns: int,
    rounds: list[list[float]],
    values: list[float],
    periods: list[float],
) -> Figures:
    tokens = sum(len(r) for r in rounds)
    return Figures(
        sockets=sockets,
        seconds=seconds,
        turns=turns,
        tokens=tokens,
        tokens_per_s=round(tokens / seconds, 1),
        p50_ms=round(statistics.median(values), 2) if values else math.nan,
        p99_ms=round(percentile(values, 0.99), 2),
        max_ms=round(max(values, default=math.nan), 2),
        slice_p99_ms=round(percentile(periods, 0.99), 2),
    )


def run(args: argparse.Namespace) -> tuple[Figures, Figures]:
    with tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
        server = start(args.sensors, Path(tmp))
        try:
            took = servers.wait_healthy(server)
            print(f"  twin ready on {server.url} in {took:.1f} s (pid {server.proc.pid})", file=sys.stderr)
            token = servers.initialize_admin(server, **ADMIN)
            turns, rounds, periods = asyncio.run(measure(server, token, 1, args.seconds))
            pacing = figures(1, args.seconds, turns, rounds, lateness_ms(rounds), periods)
            print(f"  pacing: {pacing.tokens} tokens in {turns} turns", file=sys.stderr)
            turns, rounds, periods = asyncio.run(measure(server, token, args.sockets, args.seconds))
            fanout = figures(args.sockets, args.seconds, turns, rounds, gaps_ms(rounds), periods)
            print(f"  fan-out: {fanout.tokens} tokens in {turns} turns", file=sys.stderr)
            return pacing, fanout
        finally:
            servers.stop(server)


def report(pacing: Figures, fanout: Figures) -> str:
    late_ok = pacing.p99_ms <= pacing.slice_p99_ms
    gap_ok = fanout.p99_ms < GAP_TARGET_MS
    return "\n".join(
        [
            f"chat: /api/chat, simulated model at 20 tokens per world second, realtime clock at speed 1 "
            f"({BEAT_S * 1000:.0f} ms per token)",
            f"  pacing   1 socket, {pacing.seconds:g} s: {pacing.tokens} tokens, {pacing.turns} turns; "
            f"lateness per token p50 {pacing.p50_ms} ms, p99 {pacing.p99_ms} ms, max {pacing.max_ms} ms; "
            f"want p99 <= one slice ({SLICE_MS:g} ms nominal, p99 {pacing.slice_p99_ms} ms as realized "
            f"here meanwhile): {'PASS' if late_ok else 'MISS'}",
            f"  fan-out  {fanout.sockets} sockets, {fanout.seconds:g} s: {fanout.tokens} tokens "
            f"({fanout.tokens_per_s} tokens/s), {fanout.turns} turns; gap between tokens "
            f"p50 {fanout.p50_ms} ms, p99 {fanout.p99_ms} ms, max {fanout.max_ms} ms; "
            f"want p99 < {GAP_TARGET_MS:g} ms: "
            f"{'PASS' if gap_ok else 'MISS'}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chat", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument(
        "--sockets", type=int, default=50, help="concurrent chat sockets in the fan-out (default 50)"
    )
    p.add_argument("--seconds", type=float, default=20.0, help="wall seconds per measurement (default 20)")
    p.add_argument(
        "--sensors", type=int, default=10, help="devices in the world: the reply lists them (default 10)"
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if args.sockets < 1 or args.seconds <= 0 or args.sensors < 1:
        p.error("--sockets and --sensors must be >= 1, --seconds > 0")
    try:
        pacing, fanout = run(args)
    except (servers.ServerError, OSError) as err:
        print(f"bench.chat: {err}", file=sys.stderr)
        return 1
    print(report(pacing, fanout))
    if args.json:
        data = {
            "pacing": asdict(pacing),
            "fanout": asdict(fanout),
            "slice_ms": SLICE_MS,
            "gap_target_ms": GAP_TARGET_MS,
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
