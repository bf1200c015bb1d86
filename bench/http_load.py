"""``python -m bench.http_load`` (``python -m bench --only http``): req/s of a bare FastAPI
``GET /api/health`` next to the twin's, from one run, plus three twin API loads with targets, in a
1 000-device world (``bench/scenario.yaml``).

Both servers run in their own subprocess on free loopback ports; the load generator runs here.
The twin runs the bench scenario on a step clock with the rate limiter out of the way; the bench
advances its clock 6 000 s over the control plane (so the one-second sensor ``fast-0001`` has more
than 5 000 samples), creates the first admin and logs in to the camera's gateway, and sends those
tokens with the twin API loads:

  baseline   GET /api/health, bare FastAPI                         (--connections)
  twin       GET /api/health                                       (--connections)
  device     GET /api/devices/env_sensor-0001, authenticated       (--connections)
             target: median req/s >= 1.0 x the baseline's median req/s
  sysinfo    the gateway's GET /api/v1/system/info, authenticated  (--connections)
             target: req/s per server core-second >= 1.5 x the baseline's
  telemetry  GET /api/devices/fast-0001/telemetry?metric=temperature&limit=5000, authenticated,
             1 connection (sequential requests); target: p50 <= 15 ms

Trials alternate over the loads so that drift on the machine hits all alike. Each server's CPU
time is read from ``/proc/<pid>/stat`` as the measured window of a trial opens and closes, so a
load's req/s per server core-second is what one busy core of that server answers, whatever the
load generator (on the same machine) manages. The table shows the median req/s over the trials,
every trial's req/s, p50/p99 latency of the median trial, the non-200 responses and transport
errors over all trials, each server's RSS after all loads, the server's busy cores and req/s per
core-second (medians over the trials), the ratios of both to the baseline's, and the targets with
PASS/MISS.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import math
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import loadgen, servers
from bench.report import Summary, Target, core_ratio, ratio, table
from bench.soak import gateway_of

PATH = "/api/health"
DEVICE_PATH = "/api/devices/env_sensor-0001"
TELEMETRY_ROWS = 5000
TELEMETRY_PATH = f"/api/devices/fast-0001/telemetry?metric=temperature&limit={TELEMETRY_ROWS}"
ADVANCE_SECONDS = 6000  # sim seconds of history: > TELEMETRY_ROWS samples of the one-second sensor
ADMIN = {"username": "admin", "password": "bench12345"}
GATEWAY_PATH = "/api/v1/system/info"
GATEWAY_LOGIN = {"username": "admin", "password": "password"}
DEVICE_RATIO_TARGET = 1.0
GATEWAY_CORE_RATIO_TARGET = 1.5
TELEMETRY_P50_TARGET_MS = 15.0


@dataclass(frozen=True)
class Load:
    """One row of the table: what to request from which server, on how many connections."""

    name: str
    server: str  # "baseline", "twin" or "gateway" (the twin's camera gateway)
    path: str
    connections: int
    headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        auth = ", bearer token" if "Authorization" in self.headers else ""
        plural = "" if self.connections == 1 else "s"
        return (
            f"{self.name:<10} {self.server:<8} GET {self.path} ({self.connections} connection{plural}{auth})"
        )


def load_parser(prog: str, description: str | None, per: str) -> argparse.ArgumentParser:
    """The options of an HTTP load bench (trials per ``per``, their length, connections, JSON)."""
    p = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--trials", type=int, default=3, help=f"trials per {per} (default 3)")
    p.add_argument("--duration", type=float, default=3.0, help="measured seconds per trial (default 3)")
    p.add_argument("--warmup", type=float, default=0.5, help="unmeasured seconds per trial (default 0.5)")
    p.add_argument("--connections", type=int, default=32, help="keep-alive connections (default 32)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    return p


def load_args(p: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``argv`` read by ``p`` (a :func:`load_parser`), its figures checked."""
    args = p.parse_args(argv)
    if args.trials < 1 or args.duration <= 0 or args.warmup < 0 or args.connections < 1:
        p.error("--trials and --connections must be >= 1, --duration > 0, --warmup >= 0")
    return args


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    return load_args(load_parser("python -m bench.http_load", __doc__, "load"), argv)


def loads(args: argparse.Namespace, token: str, gateway_token: str) -> list[Load]:
    """The loads, in the order every round of trials runs them."""
    auth = {"Authorization": f"Bearer {token}"}
    return [
        Load("baseline", "baseline", PATH, args.connections),
        Load("twin", "twin", PATH, args.connections),
        Load("device", "twin", DEVICE_PATH, args.connections, auth),
        Load("sysinfo", "gateway", GATEWAY_PATH, args.connections, {"Authorization": gateway_token}),
        Load("telemetry", "twin", TELEMETRY_PATH, 1, auth),
    ]


def trial(server: servers.Server, load: Load, args: argparse.Namespace) -> loadgen.Result:
    """One timed load against ``server``, with the server process's CPU time over the window."""
    pid = server.proc.pid
    run = loadgen.run(
        servers.HOST, server.port, load.path, load.connections, args.duration, args.warmup, load.headers,
        cpu=lambda: servers.cpu_seconds(pid),
    )  # fmt: skip
    return asyncio.run(run)


def gateway_login(gateway: servers.Server) -> str:
    """Log in to the camera's gateway; its ``Authorization`` header value."""
    status, body = servers.http_json("POST", gateway.url + "/api/login", GATEWAY_LOGIN)
    try:
        token = body["data"]["token"]
    except (KeyError, TypeError):
        token = None
    if status != 200 or not isinstance(token, str):
        raise servers.ServerError(f"gateway: POST /api/login answered {status}: {str(body)[:500]}")
    status, body = servers.http_json("GET", gateway.url + GATEWAY_PATH, headers={"Authorization": token})
    if status != 200:
        raise servers.ServerError(f"gateway: GET {GATEWAY_PATH} answered {status}: {str(body)[:500]}")
    return token


def prepare_twin(twin: servers.Server) -> tuple[str, int | None]:
    """Give the twin its history and first admin, and check both twin API loads answer as expected.

    Returns the bearer token and the number of devices the API lists. Raises :class:`ServerError`
    with what went wrong otherwise.
    """
    sim_time = servers.advance_clock(twin, ADVANCE_SECONDS)
    token = servers.initialize_admin(twin, **ADMIN)
    auth = {"Authorization": f"Bearer {token}"}

    status, body = servers.http_json("GET", twin.url + "/api/devices?limit=1", headers=auth)
    devices = None
    if status == 200 and isinstance(body, dict):
        devices = (body.get("data") or {}).get("pagination", {}).get("total")

    status, body = servers.http_json("GET", twin.url + DEVICE_PATH, headers=auth)
    if status != 200 or not isinstance(body, dict) or body.get("success") is not True:
        raise servers.ServerError(f"twin: GET {DEVICE_PATH} answered {status}, not 200: {str(body)[:500]}")

    status, body = servers.http_json("GET", twin.url + TELEMETRY_PATH, headers=auth)
    if status != 200 or not isinstance(body, dict):
        raise servers.ServerError(f"twin: GET {TELEMETRY_PATH} answered {status}, not 200: {str(body)[:500]}")
    try:
        rows = len(body["data"]["data"]["temperature"])
    except (KeyError, TypeError) as err:
        raise servers.ServerError(
            f"twin: GET {TELEMETRY_PATH}: no data.data.temperature list ({err!r}): {str(body)[:500]}"
        ) from None
    if rows != TELEMETRY_ROWS:
        raise servers.ServerError(
            f"twin: GET {TELEMETRY_PATH} returned {rows} temperature rows, not {TELEMETRY_ROWS} "
            f"(clock advanced to sim time {sim_time:g} s)"
        )
    print(
        f"  twin prepared: clock at sim time {sim_time:g} s, {devices} devices listed, "
        f"device detail 200, telemetry page {rows} rows",
        file=sys.stderr,
    )
    return token, devices


SETTLE_CORES = 0.05
SETTLE_LIMIT_S = 30.0


def settle(server: servers.Server) -> None:
    """Wait (at most :data:`SETTLE_LIMIT_S`) until ``server`` is idle: the clock advance leaves the
    MQTT bridge a backlog of samples to publish (about 10 s of a core's fifth), which would
    otherwise run during the first trials and be counted as theirs."""
    started = time.monotonic()
    busy = math.nan
    while time.monotonic() - started < SETTLE_LIMIT_S:
        before = servers.cpu_seconds(server.proc.pid)
        time.sleep(1.0)
        busy = servers.cpu_seconds(server.proc.pid) - before
        if busy < SETTLE_CORES:
            break
    print(
        f"  twin settled after {time.monotonic() - started:.0f} s (last second: {busy:.2f} core busy)",
        file=sys.stderr,
    )


def run_trials(
    started: dict[str, servers.Server], plan: list[Load], args: argparse.Namespace
) -> list[Summary]:
    """Run every load once per round, ``args.trials`` rounds; then read each server's RSS."""
    results: dict[str, list[loadgen.Result]] = {load.name: [] for load in plan}
    for n in range(1, args.trials + 1):
        for load in plan:
            result = trial(started[load.server], load, args)
            results[load.name].append(result)
            print(
                f"  trial {n}/{args.trials} {load.name:<9} {result.rps:9.1f} req/s  "
                f"p50 {result.p50_ms:7.2f} ms  server {result.server_cores:4.2f} cores "
                f"{result.per_core_second:7.0f} req/core-s",
                file=sys.stderr,
            )
    rss = {name: servers.rss_mb(server.proc.pid) for name, server in started.items()}
    # The RSS goes on the row named after its server; the other twin rows are the same process.
    return [Summary(load.name, results[load.name], rss.get(load.name)) for load in plan]


def targets(summaries: list[Summary]) -> list[Target]:
    """The issue's targets, from the summaries."""
    by_name = {s.name: s for s in summaries}
    telemetry = by_name["telemetry"].median_trial
    return [
        Target(
            "device",
            "median req/s over baseline health median req/s",
            ratio(by_name["device"], by_name["baseline"]),
            ">=",
            DEVICE_RATIO_TARGET,
            f"≥ {DEVICE_RATIO_TARGET:.2f}",
        ),
        Target(
            "sysinfo",
            "req/s per server core-second over the baseline's",
            core_ratio(by_name["sysinfo"], by_name["baseline"]),
            ">=",
            GATEWAY_CORE_RATIO_TARGET,
            f"≥ {GATEWAY_CORE_RATIO_TARGET:.1f} per core",
        ),
        Target(
            "telemetry",
            "p50 ms (median trial)",
            telemetry.p50_ms if telemetry else math.nan,
            "<=",
            TELEMETRY_P50_TARGET_MS,
            f"p50 ≤ {TELEMETRY_P50_TARGET_MS:g} ms",
        ),
    ]


def header(args: argparse.Namespace, plan: list[Load], devices: int | None) -> str:
    """What was measured, and on what."""
    described = "\n".join(f"       {load.describe()}" for load in plan)
    return (
        f"bench: {args.trials} x {args.duration:g} s trials (+{args.warmup:g} s warm-up) per load, "
        f"alternating; twin world: {servers.SCENARIO.relative_to(servers.ROOT)} ({devices} devices)\n"
        f"{described}\n"
        f"       python {platform.python_version()}, {os.cpu_count()} CPUs; load generator in-process; "
        f"twin RSS after all twin loads"
    )


def to_json(
    summaries: list[Summary],
    plan: list[Load],
    goals: list[Target],
    devices: int | None,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The numbers for ``--json``."""
    by_name = {s.name: s for s in summaries}
    value = ratio(by_name["twin"], by_name["baseline"])
    goal_by_row = {g.row: g for g in goals}
    base = by_name["baseline"]
    return {
        "path": PATH,
        "connections": args.connections,
        "trials": args.trials,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "scenario": str(servers.SCENARIO.relative_to(servers.ROOT)),
        "devices": devices,
        "servers": {s.name: s.as_dict() for s in summaries if s.name in ("baseline", "twin")},
        "ratio_twin_over_baseline": None if math.isnan(value) else round(value, 4),
        "twin_loads": {
            load.name: {
                "path": load.path,
                "connections": load.connections,
                "authenticated": "Authorization" in load.headers,
                **by_name[load.name].as_dict(),
                "ratio_over_baseline": _num(ratio(by_name[load.name], base)),
                "per_core_ratio_over_baseline": _num(core_ratio(by_name[load.name], base)),
                "target": goal_by_row[load.name].as_dict() if load.name in goal_by_row else None,
            }
            for load in plan
            if load.name not in ("baseline", "twin")
        },
    }


def _num(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def measure(args: argparse.Namespace) -> tuple[list[Summary], list[Load], int | None]:
    """Start both servers, prepare the twin, run the trials, and always stop both servers."""
    started: dict[str, servers.Server] = {}
    try:
        started["baseline"] = servers.start_bare()
        started["twin"] = servers.start_twin()
        for server in started.values():
            took = servers.wait_healthy(server)
            print(
                f"  {server.name} ready on {server.url} in {took:.1f} s (pid {server.proc.pid})",
                file=sys.stderr,
            )
        token, devices = prepare_twin(started["twin"])
        twin = started["twin"]
        gateway = dataclasses.replace(twin, name="gateway", port=int(gateway_of(twin).rsplit(":", 1)[1]))
        plan = loads(args, token, gateway_login(gateway))
        settle(twin)
        return run_trials({**started, "gateway": gateway}, plan, args), plan, devices
    finally:
        for server in reversed(started.values()):
            servers.stop(server)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; exit status 1 if a server did not come up or answer its setup.

    A missed target is reported (MISS), not an error.
    """
    args = parse_args(argv)
    try:
        summaries, plan, devices = measure(args)
    except (servers.ServerError, OSError) as err:
        print(f"bench: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    by_name = {s.name: s for s in summaries}
    goals = targets(summaries)
    base = by_name["baseline"]
    ratios = {s.name: ratio(s, base) for s in summaries if s.name not in ("baseline", "telemetry")}
    per_core = {s.name: core_ratio(s, base) for s in summaries if s.name not in ("baseline", "telemetry")}
    print(table(summaries, header(args, plan, devices), ratios, goals, per_core))
    print(f"\ntwin/baseline ratio of medians: {ratio(by_name['twin'], by_name['baseline']):.3f}")
    for goal in goals:
        print(f"target {goal.row}: {goal.what} = {goal.value:.3f}, want {goal.text}: {goal.verdict}")
    if args.json:
        args.json.write_text(json.dumps(to_json(summaries, plan, goals, devices, args), indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
