"""``python -m bench.shards``: what splitting one world over shards (Ray actors, :mod:`twin.cluster`)
buys on this machine, and what each unit costs. Each part runs ``--runs`` times; figures are medians
of the runs, and a ratio is taken within one run (1 and 2 shards measured back to back).

  cameras  watched cameras sustained at 25 fps with 1 shard and with 2 shards, the same fleet of
           ``--max-cameras``: each camera streams main 1280x720 + sub 640x360 at 25 fps to one
           WebSocket viewer per stream in this process (as ``bench.camera``); viewers are added one
           camera at a time (alternating shards) until a camera does not keep up (a stream under 95 %
           of its frame rate, or frames older than 100 ms at arrival, p50: their sim time against
           the shards' shared clock anchor). Target: 2 shards >= 1.7 x 1 shard.
  publish  sensor samples published per second into a real broker (NATS with its MQTT listener;
           QoS 1, counted at the broker by a NATS subscriber) with 1 and with 2 shards, the same
           ``--publish-sensors`` at period 1 s, the clock's speed raised step by step
           (``--publish-speeds``) until two steps in a row deliver under 90 % of the offer; the
           capacity is the best received rate. Target: 2 shards >= 1.7 x 1 shard.
  barrier  wall ms per ``Coordinator.run_to`` (step mode, one sim second per advance) for 2, 4 and
           8 shards; target: median <= 15 ms for 4.
  fleet    ``--fleet-sensors`` (100 000) at their period (10 s) published by ``--fleet-shards``
           shards into NATS for ``--fleet-seconds`` (60): received / produced after a drain
           (target >= 0.999), RSS per shard, the broker's RSS and CPU.
  idle     ``--idle-cameras`` (200) idle cameras on 4 shards: RSS per camera (all shards' RSS less
           the same shards holding one camera each, over the extra cameras) and ready time (the
           wall time of ``Coordinator.start``, Ray already up).

Then the sizing: cores and memory for 100 000 sensors and 1 000 streaming cameras from these costs.
CPU per shard is its process's CPU time over the window's wall time (``/proc/<pid>/stat``); RSS is
``VmRSS``. Ray is started once, on this machine only (``address="local"``), for every part.

  .venv/bin/python -m bench.shards --quick            # every part, small, one run (~2 min)
  .venv/bin/python -m bench.shards --parts barrier,idle
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import servers
from bench.camera import ENCODERS, FPS, KEEP_UP, LATENCY_TARGET_MS
from bench.publisher import fleet_scenario

PARTS = ("barrier", "idle", "cameras", "publish", "fleet")
NO_BROKER = "mqtt://127.0.0.1:1"
"""The automation server's MQTT bridge points here (nothing listens): no embedded broker per shard."""
PTS_WRAP_S = 2**32 * 11111e-9
"""A frame's PTS is its sim time in units of 11 111 ns, as u32 (``twin.camera.video.stream``)."""
DRAIN_TIMEOUT_S = 120.0


def median(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def rss_mb(pid: int) -> float:
    value = servers.rss_mb(pid)
    return math.nan if value is None else value


# The shards ----------------------------------------------------------------------------------------
def ray_up() -> float:
    """Start Ray on this machine alone (never a cluster another program started); its start's seconds."""
    import ray

    if ray.is_initialized():
        return 0.0
    t0 = time.perf_counter()
    ray.init(
        address="local",
        include_dashboard=False,
        num_cpus=os.cpu_count() or 1,
        object_store_memory=100 * 2**20,
        log_to_driver=False,
        configure_logging=False,
        namespace=f"bench-shards-{os.getpid()}",
    )
    return time.perf_counter() - t0


def settings(**kwargs: Any) -> Any:
    from twin.settings import LOOPBACK, Settings

    base: dict[str, Any] = {"scenario": None, "mqtt_url": NO_BROKER, "log_level": "warning", **LOOPBACK}
    return Settings(**(base | kwargs))


@dataclass
class Cluster:
    coordinator: Any
    ready_s: float

    @property
    def pids(self) -> dict[str, int]:
        return {name: int(info["pid"]) for name, info in self.coordinator.info.items()}

    def cpu(self) -> dict[str, float]:
        return {name: servers.cpu_seconds(pid) for name, pid in self.pids.items()}

    def rss(self) -> dict[str, float]:
        return {name: rss_mb(pid) for name, pid in self.pids.items()}

    def pin(self) -> dict[str, int]:
        """Each shard's threads on one CPU of their own (shard k on CPU k mod CPUs); threads it
        starts later inherit it. Returns the CPU of each shard."""
        cpus = sorted(os.sched_getaffinity(0))
        placed = {}
        for k, (name, pid) in enumerate(self.pids.items()):
            cpu = cpus[k % len(cpus)]
            for task in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(task), {cpu})
            placed[name] = cpu
        return placed

    def align(self, *, paused: bool = False) -> None:
        """Every shard on one realtime anchor at the furthest shard's sim time."""
        from twin.cluster.coordinator import ANCHOR_LEAD_S

        now = max(t.sim_time for t in self.coordinator.times())
        self.coordinator.follow(sim_at=now + (0.0 if paused else ANCHOR_LEAD_S), speed=1.0, paused=paused)


@contextlib.contextmanager
def sharded(config_settings: Any, shards: int, *, publishing: bool = False) -> Iterator[Cluster]:
    """The world of ``config_settings`` split over ``shards`` shards, started (timed) and stopped."""
    from twin.cluster.coordinator import Coordinator
    from twin.cluster.plan import AUTOMATION_SHARD, split
    from twin.serve import world_config

    config, _, _ = world_config(config_settings)
    specs = split(config, shards, publishing=publishing)
    owners = {"automation": AUTOMATION_SHARD} | {c: s.name for s in specs for c in s.slice.cameras}
    coordinator = Coordinator(config_settings, specs, owners)
    t0 = time.perf_counter()
    coordinator.start()
    try:
        yield Cluster(coordinator, time.perf_counter() - t0)
    finally:
        coordinator.shutdown()


def window_cores(cpu0: dict[str, float], cpu1: dict[str, float], wall: float) -> dict[str, float]:
    return {name: (cpu1[name] - cpu0[name]) / wall for name in cpu1}


# Barrier -------------------------------------------------------------------------------------------
def barrier(shards: int, rounds: int) -> dict[str, Any]:
    """``rounds`` advances of one sim second on ``shards`` shards (one idle camera each), step mode."""
    with sharded(settings(step=True, cameras=shards, sensors=10), shards) as cluster:
        c = cluster.coordinator
        warm = min(10, rounds)
        for t in range(1, warm + 1):
            c.run_to(float(t))
        c.barrier_s.clear()
        for t in range(warm + 1, warm + rounds + 1):
            times = c.run_to(float(t))
            if len({x.sim_time for x in times}) != 1:
                raise RuntimeError(f"shards disagree after run_to({t}): {times}")
        ms = sorted(1000 * s for s in c.barrier_s)
        return {
            "shards": shards,
            "rounds": rounds,
            "median_ms": statistics.median(ms),
            "p90_ms": ms[int(0.9 * (len(ms) - 1))],
            "ready_s": cluster.ready_s,
        }


# Idle cameras --------------------------------------------------------------------------------------
def idle(shards: int, cameras: int, settle: float) -> dict[str, Any]:
    """RSS per idle camera: ``cameras`` on ``shards`` shards against one camera per shard."""
    out: dict[str, Any] = {"shards": shards, "cameras": cameras}
    for label, count in (("base", shards), ("full", cameras)):
        with sharded(settings(cameras=count, sensors=1), shards) as cluster:
            time.sleep(settle)
            rss = cluster.rss()
            out[label] = {
                "cameras": count,
                "ready_s": cluster.ready_s,
                "rss_mb": rss,
                "rss_total_mb": sum(rss.values()),
            }
    out["per_camera_mb"] = (out["full"]["rss_total_mb"] - out["base"]["rss_total_mb"]) / (cameras - shards)
    out["ready_s"] = out["full"]["ready_s"]
    rest = [v for k, v in out["base"]["rss_mb"].items() if k != "shard-0"]
    out["shard_base_mb"] = median(rest) if rest else out["base"]["rss_mb"]["shard-0"]
    return out


# Watched cameras -----------------------------------------------------------------------------------
@dataclass
class Watch:
    """One viewer of one stream: frames and lateness counted while the window is open."""

    camera: str
    stream: str
    url: str
    frames: int = 0
    late_ms: list[float] = field(default_factory=list)


@dataclass
class Window:
    open: bool = False
    anchor: Any = None

    def late_ms(self, pts: int, arrived: float) -> float:
        """How long before ``arrived`` (Unix time) the world reached the frame's sim time."""
        now = self.anchor.sim_time(arrived)
        t = pts * 11111e-9
        t += round((now - t) / PTS_WRAP_S) * PTS_WRAP_S
        return (now - t) * 1000.0


async def _view(watch: Watch, window: Window) -> None:
    from websockets.asyncio.client import connect

    async with connect(watch.url, max_size=None) as ws:
        while True:
            message = await ws.recv(decode=False)
            if window.open and len(message) >= 18:
                watch.frames += 1
                watch.late_ms.append(window.late_ms(struct.unpack(">I", message[6:10])[0], time.time()))


async def _prepare(base: str) -> str:
    """Log in to a camera's gateway and set both encoders; its token."""
    import httpx

    async with httpx.AsyncClient(base_url=base, timeout=60.0) as http:
        login = await http.post("/api/login", json={"username": "admin", "password": "password"})
        login.raise_for_status()
        token = str(login.json()["data"]["token"]).removeprefix("Bearer ")
        for name, enc in ENCODERS.items():
            resp = await http.put(
                "/api/v1/media/encoder/reconfig",
                json={"stream_name": name, **enc},
                headers={"Authorization": f"Bearer {token}"},
            )
            resp.raise_for_status()
    return token


async def _sweep(cluster: Cluster, seconds: float, warmup: float, stop_early: bool) -> list[dict[str, Any]]:
    """Watch one camera more per step (alternating shards) until one does not keep up."""
    c = cluster.coordinator
    by_shard = {
        name: [cam for cam in c.owners if c.owners[cam] == name and cam != "automation"] for name in c.info
    }
    order = [cam for group in _interleave(list(by_shard.values())) for cam in group]
    bases = {}
    for name, info in c.info.items():
        for cam in by_shard[name]:
            bases[cam] = info["urls"][f"{cam}/http"]
    tokens = dict(zip(bases, await asyncio.gather(*(_prepare(b) for b in bases.values())), strict=True))
    window = Window()
    cluster.align()
    window.anchor = c.anchor
    rss0 = cluster.rss()
    steps: list[dict[str, Any]] = []
    tasks: list[asyncio.Task[None]] = []
    watches: list[Watch] = []
    try:
        for k, cam in enumerate(order, 1):
            ws_base = bases[cam].replace("http://", "ws://")
            for name in ENCODERS:
                watch = Watch(cam, name, f"{ws_base}/api/v1/h264/{name}?token={tokens[cam]}")
                watches.append(watch)
                tasks.append(asyncio.create_task(_view(watch, window)))
            await asyncio.sleep(warmup)
            for w in watches:
                w.frames, w.late_ms = 0, []
            cpu0, wall0, own0 = cluster.cpu(), time.perf_counter(), time.process_time()
            window.open = True
            await asyncio.sleep(seconds)
            window.open = False
            cpu1, wall1, own1 = cluster.cpu(), time.perf_counter(), time.process_time()
            failed = [t for t in tasks if t.done()]
            if failed:
                raise RuntimeError(f"a viewer ended: {failed[0].exception()!r}")
            wall = wall1 - wall0
            fps = [w.frames / wall for w in watches]
            late = median([v for w in watches for v in w.late_ms])
            cores = window_cores(cpu0, cpu1, wall)
            kept = min(fps) >= KEEP_UP * FPS and late <= LATENCY_TARGET_MS
            steps.append({
                "cameras": k,
                "min_fps": min(fps),
                "mean_fps": statistics.fmean(fps),
                "late_p50_ms": late,
                "sustained": kept,
                "shard_cores": cores,
                "bench_cores": (own1 - own0) / wall,
                "rss_mb": cluster.rss(),
                "rss_before_mb": rss0,
            })  # fmt: skip
            print(
                f"    {k} camera(s): min {min(fps):.1f} fps, late p50 {late:.0f} ms, shard cores "
                + " ".join(f"{v:.2f}" for v in cores.values())
                + ("" if kept else "  (not sustained)"),
                file=sys.stderr,
                flush=True,
            )
            if not kept and stop_early:
                break
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return steps


def _interleave(groups: list[list[str]]) -> list[list[str]]:
    """``[[a0, a1], [b0, b1]]`` -> ``[[a0], [b0], [a1], [b1]]``: one camera per step, shards in turn."""
    out = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [[g[i]] for g in groups if i < len(g)]
    return out


def sustained(steps: list[dict[str, Any]]) -> int:
    """Cameras watched at the last step before the first one that did not keep up."""
    count = 0
    for step in steps:
        if not step["sustained"]:
            break
        count = step["cameras"]
    return count


def cameras(cameras_total: int, seconds: float, warmup: float, pin: bool = False) -> dict[str, Any]:
    """One run: the sweep with 1 shard, then with 2, the same fleet."""
    out: dict[str, Any] = {"fleet": cameras_total, "pinned": pin}
    for shards in (1, 2):
        with sharded(settings(cameras=cameras_total, sensors=1), shards) as cluster:
            if pin:
                cluster.pin()
            print(
                f"  cameras: {shards} shard(s) ready in {cluster.ready_s:.1f} s", file=sys.stderr, flush=True
            )
            steps = asyncio.run(_sweep(cluster, seconds, warmup, stop_early=True))
        out[str(shards)] = {
            "sustained": sustained(steps),
            "capped": bool(steps) and steps[-1]["sustained"],
            "steps": steps,
        }
    one, two = out["1"]["sustained"], out["2"]["sustained"]
    out["ratio"] = two / one if one else math.nan
    return out


# Publishing ----------------------------------------------------------------------------------------
def _scenario(workdir: Path, sensors: int, period: float) -> Path:
    path = workdir / f"shards-{sensors}-{period:g}.yaml"
    about = f"sharded publisher bench, {sensors} sensors every {period:g} s on a realtime clock."
    path.write_text(fleet_scenario("shards-bench", about, sensors, period))
    return path


def _publishers(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in cluster.coordinator.broadcast("publisher").items() if v is not None}


def _totals(statuses: dict[str, dict[str, Any]]) -> dict[str, int]:
    keys = ("produced", "acknowledged", "buffered", "in_flight", "dropped", "undelivered")
    return {k: sum(int(s[k]) for s in statuses.values()) for k in keys}


def _edge(cluster: Cluster, counter: Any, broker: Any) -> dict[str, Any]:
    """At one edge of a window: the publishers' totals, the counter's count, CPU seconds of the
    shards, the broker and the counter's thread, and the wall time."""
    return {
        "totals": _totals(_publishers(cluster)),
        "received": counter.received,
        "cpu": cluster.cpu(),
        "broker": broker.cpu_seconds(),
        "counter": counter.cpu_seconds(),
        "wall": time.perf_counter(),
    }


def _rates(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    wall = b["wall"] - a["wall"]
    return {
        "seconds": wall,
        "produced_per_s": (b["totals"]["produced"] - a["totals"]["produced"]) / wall,
        "acknowledged_per_s": (b["totals"]["acknowledged"] - a["totals"]["acknowledged"]) / wall,
        "dropped_per_s": (b["totals"]["dropped"] - a["totals"]["dropped"]) / wall,
        "received_per_s": (b["received"] - a["received"]) / wall,
        "shard_cores": window_cores(a["cpu"], b["cpu"], wall),
        "broker_cores": (b["broker"] - a["broker"]) / wall,
        "counter_cores": (b["counter"] - a["counter"]) / wall,
    }


@contextlib.contextmanager
def publishing(workdir: Path, shards: int, sensors: int, period: float) -> Iterator[tuple[Cluster, Any, Any]]:
    """``sensors`` every ``period`` s on ``shards`` shards publishing into a NATS broker of their
    own, counted there by a NATS subscriber; yields once every publisher is connected."""
    from bench.uplinks import NatsCounter
    from hardware.adapters.broker_server import start_broker
    from twin.settings import FleetPublishing

    scenario = _scenario(workdir, sensors, period)
    broker = start_broker("nats")
    counter = None
    try:
        assert broker.client_port is not None
        counter = NatsCounter(broker.reach, broker.client_port).start()
        out_to = FleetPublishing(broker.mqtt_url, None, buffer=max(10_000, sensors))
        with sharded(settings(scenario=scenario, publish_fleet=out_to), shards, publishing=True) as cluster:
            cluster.align()
            deadline = time.monotonic() + 60
            while not all(p["connected"] for p in _publishers(cluster).values()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the publishers did not connect: {_publishers(cluster)}")
                time.sleep(0.2)
            yield cluster, broker, counter
    finally:
        if counter is not None:
            counter.stop()
        broker.stop()


def publish(
    workdir: Path, shards: int, sensors: int, period: float, seconds: float, warmup: float
) -> dict[str, Any]:
    """The rates over a window, then (the clock paused, the publishers drained) received against
    produced over the whole run."""
    with publishing(workdir, shards, sensors, period) as (cluster, broker, counter):
        time.sleep(warmup)
        a = _edge(cluster, counter, broker)
        time.sleep(seconds)
        rates = _rates(a, _edge(cluster, counter, broker))
        rss, broker_rss = cluster.rss(), broker.rss_mb()
        cluster.align(paused=True)
        drained, final = _drain(cluster, counter)
        received = counter.received
        out = {"shards": shards, "sensors": sensors, "period_s": period, "ready_s": cluster.ready_s}
        return (
            out
            | rates
            | {
                "rss_mb": rss,
                "broker_rss_mb": broker_rss,
                "drained": drained,
                "totals": final,
                "received": received,
                "delivered": received / final["produced"] if final["produced"] else math.nan,
                "counter_error": counter.error,
            }
        )


def publish_sweep(
    workdir: Path, shards: int, sensors: int, speeds: list[float], seconds: float, warmup: float, pin: bool
) -> list[dict[str, Any]]:
    """The same fleet at rising clock speeds (``sensors`` x speed samples offered per wall second)
    until two steps in a row deliver less than 90 % of what is offered."""
    steps: list[dict[str, Any]] = []
    short = 0
    with publishing(workdir, shards, sensors, 1.0) as (cluster, broker, counter):
        if pin:
            cluster.pin()
        for speed in speeds:
            now = max(t.sim_time for t in cluster.coordinator.times())
            cluster.coordinator.follow(sim_at=now + 0.05 * speed, speed=speed, paused=False)
            time.sleep(warmup)
            a = _edge(cluster, counter, broker)
            time.sleep(seconds)
            step = {"speed": speed, "offered_per_s": sensors * speed} | _rates(
                a, _edge(cluster, counter, broker)
            )
            steps.append(step)
            print(
                f"    {shards} shard(s), {sensors * speed:.0f}/s offered: {step['received_per_s']:.0f} "
                f"received/s ({step['acknowledged_per_s']:.0f} acknowledged, "
                f"{step['dropped_per_s']:.0f} dropped), shard cores "
                + " ".join(f"{v:.2f}" for v in step["shard_cores"].values())
                + f", broker {step['broker_cores']:.2f}, counter {step['counter_cores']:.2f}",
                file=sys.stderr,
                flush=True,
            )
            short = short + 1 if step["received_per_s"] < 0.9 * step["offered_per_s"] else 0
            if short >= 2:  # two steps in a row under 90 % of the offer (one may be a passing dip)
                break
    return steps


def _drain(cluster: Cluster, counter: Any) -> tuple[bool, dict[str, int]]:
    """Wait (the clock paused) until nothing is buffered or in flight and the counter has every
    acknowledged message, or until its count stops moving for 3 s."""
    deadline, last, still = time.monotonic() + DRAIN_TIMEOUT_S, -1, 0
    while True:
        totals = _totals(_publishers(cluster))
        received = counter.received
        idle_now = totals["buffered"] == 0 and totals["in_flight"] == 0
        if idle_now and received >= totals["acknowledged"]:
            return True, totals
        still = still + 1 if idle_now and received == last else 0
        if still >= 15 or time.monotonic() > deadline:
            return False, totals
        last = received
        time.sleep(0.2)


def publish_scaling(
    workdir: Path, sensors: int, speeds: list[float], seconds: float, warmup: float, pin: bool = False
) -> dict[str, Any]:
    """One run: the publish sweep with 1 shard, then with 2; capacity is the best received rate
    (``capped``: the sweep's fastest speed was still delivered, so capacity is a lower bound)."""
    out: dict[str, Any] = {"sensors": sensors, "pinned": pin}
    for shards in (1, 2):
        steps = publish_sweep(workdir, shards, sensors, speeds, seconds, warmup, pin)
        best = max(steps, key=lambda step: step["received_per_s"])
        capped = len(steps) == len(speeds) and steps[-1]["received_per_s"] >= 0.9 * steps[-1]["offered_per_s"]
        out[str(shards)] = {
            "capacity_per_s": best["received_per_s"],
            "at": best,
            "steps": steps,
            "capped": capped,
        }
    one, two = out["1"]["capacity_per_s"], out["2"]["capacity_per_s"]
    out["ratio"] = two / one if one else math.nan
    return out


# The command ---------------------------------------------------------------------------------------
FULL = {
    "runs": 3,
    "barrier_shards": "2,4,8",
    "barrier_rounds": 200,
    "idle_cameras": 200,
    "idle_shards": 4,
    "max_cameras": 12,
    "seconds": 6.0,
    "warmup": 2.0,
    "publish_sensors": 10_000,
    "publish_speeds": "1,2,3,4,5,6,8,10,12",
    "publish_seconds": 5.0,
    "fleet_sensors": 100_000,
    "fleet_shards": 4,
    "fleet_seconds": 60.0,
}
QUICK = FULL | {
    "runs": 1,
    "barrier_shards": "2,4",
    "barrier_rounds": 50,
    "idle_cameras": 40,
    "max_cameras": 6,
    "seconds": 3.0,
    "warmup": 1.5,
    "publish_sensors": 5000,
    "publish_speeds": "1,2,4,8",
    "publish_seconds": 3.0,
    "fleet_sensors": 20_000,
    "fleet_seconds": 15.0,
}


def run_part(part: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """One run of one part."""
    if part == "barrier":
        return {str(n): barrier(n, args.barrier_rounds) for n in args.barrier_shards}
    if part == "idle":
        return idle(args.idle_shards, args.idle_cameras, settle=2.0)
    if part == "cameras":
        return cameras(args.max_cameras, args.seconds, args.warmup, args.pin)
    if part == "publish":
        speeds, seconds = args.publish_speeds, args.publish_seconds
        return publish_scaling(workdir, args.publish_sensors, speeds, seconds, 2.0, args.pin)
    if part == "fleet":
        return publish(workdir, args.fleet_shards, args.fleet_sensors, 10.0, args.fleet_seconds, 5.0)
    raise ValueError(part)


def _numbers(text: str, kind: type) -> list[Any]:
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, not {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers separated by commas, not {text!r}")
    return values


def _parts(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PARTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown part(s) {', '.join(unknown) or '(none named)'}; choose from {', '.join(PARTS)}"
        )
    return [p for p in PARTS if p in names]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.shards",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--quick", action="store_true", help="small sizes and one run (for development)")
    p.add_argument(
        "--parts", type=_parts, default=list(PARTS), metavar="PART,...", help=f"of {', '.join(PARTS)}"
    )
    p.add_argument("--runs", type=int, help="runs of each part (default 3; quick 1)")
    p.add_argument(
        "--pin",
        action="store_true",
        help="cameras, publish: each shard on a CPU of its own (shard k on CPU k): scaling per core",
    )
    p.add_argument("--barrier-shards", help="shard counts of the barrier part (default 2,4,8)")
    p.add_argument("--barrier-rounds", type=int, help="advances measured per shard count (default 200)")
    p.add_argument("--idle-cameras", type=int, help="idle cameras (default 200)")
    p.add_argument("--idle-shards", type=int, help="shards holding them (default 4)")
    p.add_argument("--max-cameras", type=int, help="the cameras part's fleet, the sweep's cap (default 12)")
    p.add_argument("--seconds", type=float, help="cameras: measured seconds per step (default 6)")
    p.add_argument("--warmup", type=float, help="cameras: unmeasured seconds per step (default 2)")
    p.add_argument("--publish-sensors", type=int, help="publish: sensors at period 1 s (default 10 000)")
    p.add_argument("--publish-speeds", help="publish: clock speeds of the sweep (default 1,2,...,12)")
    p.add_argument("--publish-seconds", type=float, help="publish: measured seconds per step (default 5)")
    p.add_argument("--fleet-sensors", type=int, help="fleet: sensors at period 10 s (default 100 000)")
    p.add_argument("--fleet-shards", type=int, help="fleet: shards publishing them (default 4)")
    p.add_argument("--fleet-seconds", type=float, help="fleet: seconds of publishing measured (default 60)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    try:
        args.barrier_shards = _numbers(str(args.barrier_shards), int)
        args.publish_speeds = _numbers(str(args.publish_speeds), float)
    except argparse.ArgumentTypeError as err:
        p.error(str(err))
    counts = ("runs", "barrier_rounds", "idle_cameras", "idle_shards", "max_cameras", "publish_sensors")
    if any(getattr(args, k) < 1 for k in (*counts, "fleet_sensors", "fleet_shards")):
        p.error("counts (--runs, --*-cameras, --*-shards, --*-sensors, --barrier-rounds) must be >= 1")
    if min(args.seconds, args.publish_seconds, args.fleet_seconds) <= 0 or args.warmup < 0:
        p.error("--seconds, --publish-seconds and --fleet-seconds must be > 0, --warmup >= 0")
    if args.idle_cameras <= args.idle_shards:
        p.error("--idle-cameras must be more than --idle-shards (the baseline holds one camera per shard)")
    if args.max_cameras < 2:
        p.error("--max-cameras must be >= 2 (one camera per shard with 2 shards)")
    return args


def main(argv: list[str] | None = None) -> int:
    from bench import sizing

    args = parse_args(argv)
    status = 0
    results: dict[str, Any] = {"machine": sizing.machine(), "options": sizing.jsonable(vars(args))}
    started = time.perf_counter()
    try:
        results["machine"]["ray_init_s"] = ray_up()
        with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
            for part in args.parts:
                runs: list[dict[str, Any]] = []
                for n in range(1, args.runs + 1):
                    print(f"  {part}: run {n}/{args.runs}", file=sys.stderr, flush=True)
                    try:
                        runs.append(run_part(part, args, Path(tmp)))
                    except Exception as err:  # one part failing does not stop the others
                        print(f"bench.shards: {part} failed: {type(err).__name__}: {err}", file=sys.stderr)
                        status = 1
                        break
                results[part] = sizing.summary(part, runs)
    except KeyboardInterrupt:
        print("bench.shards: interrupted", file=sys.stderr)
        return 130
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    results["machine"]["load_after"] = os.getloadavg()[0]
    results["machine"]["wall_s"] = time.perf_counter() - started
    results["sizing"] = sizing.sizing(results)
    print(sizing.report(results))
    if args.json:
        args.json.write_text(json.dumps(sizing.jsonable(results), indent=2) + "\n")
        print(f"wrote {args.json}")
    return status


if __name__ == "__main__":
    sys.exit(main())
