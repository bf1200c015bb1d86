"""``python -m bench.fanout`` (``python -m bench`` runs it after the HTTP loads): realtime event fan-out.

The twin runs in its own subprocess on a step clock with N sensors sampling every second (two
metrics each, so one sample of one sensor is two ``DeviceMetric`` envelopes). This process opens
10 WebSocket clients (``/api/events/ws``, Auth frame, answering pings) and 10 SSE clients
(``/api/events/stream?token=``), then drives the clock at 1 Hz over the control plane: one
``POST /clock/advance {"seconds": 1}`` per wall second, so every second of wall time is one second
of sim time and one sample of every sensor. The MQTT bridge publishes every sample to the embedded
broker meanwhile, as it always does.

Per run it reports the envelopes delivered per second over all clients, the drops (the server's
``event_bus_events_dropped_total`` delta: every subscriber's bounded queue, the MQTT bridge's
included) and the envelopes missing at the clients (expected N x 2 x seconds per client, counted
after a grace period of 3 s for the last tick to drain: a server that falls behind the 1 Hz clock
would drop once its queues fill, so lagging counts as failing). Then it searches for the largest
sensor count with zero drops and nothing missing: doubling from N, then bisecting between the last
pass and the first failure, with shorter runs.

Clients count envelopes by their type tag in the raw frames (no JSON parsing), so the client side
stays cheap; it still shares the machine with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx
from websockets.asyncio.client import connect

from bench import servers

METRICS = 2
WS_NEEDLE = '"type":"DeviceMetric"'
SSE_NEEDLE = b"event: DeviceMetric\n"
ADMIN = {"username": "admin", "password": "bench12345"}
MAX_SENSORS = 100_000
SCENARIO = """\
name: fanout
description: Event fan-out bench, {sensors} sensors sampled every second, no cameras.
seed: 4242
clock:
  mode: step
  epoch: 1767225600
fleet:
  sensors:
    - type: env_sensor
      count: {sensors}
      period: 1
      metrics:
        temperature: {{kind: diurnal, mean: 21, amplitude: 4, noise: 0.2, spread: 0.1, unit: "°C"}}
        humidity: {{kind: sine, mean: 45, amplitude: 8, period: 7200, min: 0, max: 100, unit: "%"}}
  cameras:
    count: 0
"""


@dataclass
class Run:
    sensors: int
    seconds: int
    clients: int
    expected_per_client: int
    received: int
    missing: int
    bus_drops: int
    wall_s: float
    delivered_per_s: float
    drain_s: float
    """Wall time from the last clock advance until every client had everything (or the grace ran out)."""
    late_advances: int
    """Clock advances that could not start on their wall second (the server or this process was busy)."""

    @property
    def clean(self) -> bool:
        return self.bus_drops == 0 and self.missing == 0


# Clients -----------------------------------------------------------------------------------------
async def ws_client(url: str, token: str, counts: list[int], i: int, ready: asyncio.Event) -> None:
    async with connect(url, max_size=None, ping_interval=None) as ws:
        await ws.send(json.dumps({"type": "Auth", "token": token}))
        if "Authenticated" not in str(await ws.recv()):
            raise servers.ServerError("events WS: authentication refused")
        ready.set()
        async for frame in ws:
            text = frame if isinstance(frame, str) else frame.decode()
            if text.startswith('{"type":"ping"'):
                await ws.send('{"type":"pong"}')
                continue
            counts[i] += text.count(WS_NEEDLE)


async def sse_client(port: int, token: str, counts: list[int], i: int, ready: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection(servers.HOST, port)
    try:
        writer.write(
            f"GET /api/events/stream?token={token} HTTP/1.1\r\nHost: {servers.HOST}:{port}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise servers.ServerError(f"events SSE: {head.splitlines()[0].decode()}")
        ready.set()
        keep = len(SSE_NEEDLE) - 1
        tail = b""
        while chunk := await reader.read(1 << 16):
            data = tail + chunk
            counts[i] += data.count(SSE_NEEDLE)
            tail = data[-keep:]
    finally:
        writer.close()


async def bus_drops(http: httpx.AsyncClient, url: str) -> int:
    text = (await http.get(url + "/api/metrics")).text
    found = re.search(r"^event_bus_events_dropped_total(?:\{[^}]*\})? (\d+)", text, re.M)
    return int(found.group(1)) if found else 0


async def drive(server: servers.Server, token: str, sensors: int, seconds: int, args) -> Run:
    """Connect the clients, advance the clock once a second for ``seconds``, wait for the tail."""
    control = f"http://{servers.HOST}:{server.control_port}"
    ws_url = f"ws://{servers.HOST}:{server.port}/api/events/ws"
    n = args.ws + args.sse
    counts = [0] * n
    readies = [asyncio.Event() for _ in range(n)]
    async with httpx.AsyncClient(timeout=120) as http:
        await http.post(
            control + "/clock/advance", json={"seconds": 0}
        )  # the t=0 sample, before anyone listens
        tasks = [asyncio.create_task(ws_client(ws_url, token, counts, i, readies[i])) for i in range(args.ws)]
        tasks += [
            asyncio.create_task(sse_client(server.port, token, counts, i, readies[i]))
            for i in range(args.ws, n)
        ]
        try:
            await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 30)
            drops_before = await bus_drops(http, server.url)
            loop = asyncio.get_running_loop()
            start = loop.time()
            late = 0
            for k in range(seconds):
                delay = start + k - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif k:
                    late += 1
                resp = await http.post(control + "/clock/advance", json={"seconds": 1})
                if resp.status_code != 200:
                    raise servers.ServerError(f"POST /clock/advance answered {resp.status_code}")
            last_advance = loop.time()
            expected = sensors * METRICS * seconds
            deadline = last_advance + args.grace
            done_at = None
            while loop.time() < deadline:
                failed = [t for t in tasks if t.done()]
                if failed:
                    failed[0].result()
                    raise servers.ServerError("an events client ended early")
                if min(counts) >= expected:
                    done_at = loop.time()
                    break
                await asyncio.sleep(0.02)
            end = done_at if done_at is not None else loop.time()
            drops = await bus_drops(http, server.url) - drops_before
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    received = sum(min(c, expected) for c in counts)
    wall = end - start
    return Run(
        sensors=sensors,
        seconds=seconds,
        clients=n,
        expected_per_client=expected,
        received=received,
        missing=expected * n - received,
        bus_drops=drops,
        wall_s=round(wall, 3),
        delivered_per_s=round(received / wall, 1) if wall > 0 else 0.0,
        drain_s=round(end - last_advance, 3),
        late_advances=late,
    )


def one_run(sensors: int, seconds: int, args) -> Run:
    """Start a twin with ``sensors`` one-second sensors, drive it, stop it."""
    with tempfile.TemporaryDirectory(prefix="bench-fanout-") as tmp:
        scenario = Path(tmp) / "fanout.yaml"
        scenario.write_text(SCENARIO.format(sensors=sensors))
        server = servers.start_twin(scenario)
        try:
            servers.wait_healthy(server, timeout=120)
            token = servers.initialize_admin(server, **ADMIN)
            run = asyncio.run(drive(server, token, sensors, seconds, args))
        finally:
            servers.stop(server)
    verdict = "clean" if run.clean else "DROPS/MISSING"
    print(
        f"  {sensors:>6} sensors x {seconds:>3} s: {run.delivered_per_s:>10.1f} envelopes/s delivered, "
        f"bus drops {run.bus_drops}, missing {run.missing}, drain {run.drain_s:.2f} s, "
        f"late advances {run.late_advances}  [{verdict}]",
        file=sys.stderr,
    )
    return run


def search(args) -> tuple[int | None, list[Run]]:
    """Largest sensor count with zero drops and nothing missing: double from ``--sensors``, then bisect."""
    runs: list[Run] = []
    good, bad = None, None
    n = args.sensors
    while n <= MAX_SENSORS:
        run = one_run(n, args.search_seconds, args)
        runs.append(run)
        if not run.clean:
            bad = n
            break
        good = n
        n *= 2
    if good is None or bad is None:
        return good, runs
    for _ in range(args.bisect):
        mid = (good + bad) // 2
        if mid in (good, bad):
            break
        run = one_run(mid, args.search_seconds, args)
        runs.append(run)
        if run.clean:
            good = mid
        else:
            bad = mid
    return good, runs


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.fanout",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--sensors", type=int, default=500, help="sensors of the main runs (default 500)")
    p.add_argument("--seconds", type=int, default=60, help="sim seconds per main run (default 60)")
    p.add_argument("--runs", type=int, default=3, help="main runs; the median is reported (default 3)")
    p.add_argument("--ws", type=int, default=10, help="WebSocket clients (default 10)")
    p.add_argument("--sse", type=int, default=10, help="SSE clients (default 10)")
    p.add_argument("--grace", type=float, default=3.0, help="wall s for the last tick to drain (default 3)")
    p.add_argument("--search-seconds", type=int, default=10, help="sim seconds per search run (default 10)")
    p.add_argument("--bisect", type=int, default=3, help="bisection steps of the search (default 3)")
    p.add_argument("--no-search", action="store_true", help="only the main runs")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if min(args.sensors, args.seconds, args.runs, args.search_seconds) < 1 or args.ws + args.sse < 1:
        p.error("--sensors, --seconds, --runs and --search-seconds must be >= 1, and there must be a client")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(
        f"fan-out: {args.sensors} sensors at 1 Hz x {METRICS} metrics, {args.ws} WS + {args.sse} SSE "
        f"clients, {args.runs} x {args.seconds} s of sim time (clock driven at 1 Hz)",
        file=sys.stderr,
    )
    try:
        main_runs = [one_run(args.sensors, args.seconds, args) for _ in range(args.runs)]
        largest, search_runs = (None, []) if args.no_search else search(args)
    except (servers.ServerError, OSError) as err:
        print(f"bench fanout: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench fanout: interrupted", file=sys.stderr)
        return 130
    rate = statistics.median(r.delivered_per_s for r in main_runs)
    drops = statistics.median(r.bus_drops for r in main_runs)
    missing = statistics.median(r.missing for r in main_runs)
    clean = all(r.clean for r in main_runs)
    print(
        f"\nevent fan-out: {args.sensors} sensors at 1 Hz ({METRICS} metrics), {args.ws} WS + {args.sse} SSE"
    )
    print(f"  runs ({args.seconds} s of sim time each), envelopes/s delivered over all clients:")
    for r in main_runs:
        print(
            f"    {r.delivered_per_s:>10.1f}/s  bus drops {r.bus_drops}  missing {r.missing}  "
            f"drain {r.drain_s:.2f} s  late advances {r.late_advances}"
        )
    print(f"  median: {rate:.1f} envelopes/s, drops {drops:g}, missing {missing:g}")
    print(f"  target zero drops: {'PASS' if clean else 'MISS'}")
    if not args.no_search:
        shown = largest if largest is not None else f"none (fails at {args.sensors})"
        print(f"  largest sensor count with zero drops ({args.search_seconds} s runs): {shown}")
        if largest is not None and largest >= MAX_SENSORS:
            print(f"  (the search stops at {MAX_SENSORS}, the scenario's limit)")
    if args.json:
        doc = {
            "sensors": args.sensors,
            "metrics_per_sensor": METRICS,
            "ws_clients": args.ws,
            "sse_clients": args.sse,
            "seconds": args.seconds,
            "median_delivered_per_s": rate,
            "median_bus_drops": drops,
            "median_missing": missing,
            "zero_drops": clean,
            "runs": [asdict(r) for r in main_runs],
            "largest_zero_drop_sensors": largest,
            "search_runs": [asdict(r) for r in search_runs],
            "measured_at_wall": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
