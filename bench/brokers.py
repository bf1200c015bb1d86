"""``python -m bench.brokers``: which broker holds the fleet at 10 000 msg/s. The embedded amqtt (in a
process of its own, as ``bench.publisher`` runs it), NATS (``nats-server`` with its MQTT listener,
from the ``cluster`` extra) and mosquitto (when it is on ``PATH``), each started by
:mod:`hardware.adapters.broker_server` on free loopback ports.

Per broker and offered rate (``--rates``, messages per second; default 2 000, 5 000, 10 000): sensors
= rate x ``--period`` (default 1 s), split over ``--publishers`` ``twin run --publish-fleet-to``
processes (realtime, speed 1, each its own slice of device ids, QoS 1, a buffer of two ticks), and
an uplink counter in this process (:class:`bench.uplinks.MqttCounter`, QoS 0 on
``device/+/+/uplink``). After ``--warmup`` seconds, a ``--seconds`` window: produced, acknowledged
and received per second, the publishers' and the broker's CPU (cores) and RSS. Then the clocks are
paused and the publishers get one period + 5 s to drain: received / produced over the whole run
(the target: >= 0.999) with the publishers' dropped and undelivered counts. A broker that falls
behind piles up more than one period of backlog and misses the ratio; one that holds drains its
last tick in time. Medians of ``--runs`` runs.

``--counters mqtt,nats,paho`` instead measures the uplink counters themselves: all of them on one
NATS broker at once (``--rates``' last rate), each one's thread CPU per message received.

  .venv/bin/python -m bench.brokers --runs 1 --seconds 10 --rates 2000   # a quick look
  .venv/bin/python -m bench.brokers --brokers nats --rates 10000 --period 10 --seconds 60 --publishers 2
  .venv/bin/python -m bench.brokers --counters mqtt,nats,paho --rates 5000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import servers
from bench.publisher import control, fleet_scenario, wait_port
from bench.uplinks import COUNTERS, MqttCounter, UplinkCounter
from hardware.adapters.broker_server import BrokerError, find_binary, start_broker

TARGET = 0.999
READY_TIMEOUT_S = 600.0  # 100 000 sensors take a while to build on a loaded machine
DRAIN_EXTRA_S = 5.0
SERVE_PUBLISHER = "--serve-publisher"


@dataclass
class Broker:
    """A broker under test: where its MQTT listener is, its process, how to stop it."""

    name: str
    port: int
    pid: int
    stop: Callable[[], None]
    nats_port: int | None = None


def start(name: str) -> Broker:
    if name == "amqtt":
        port = servers.free_port()
        argv = [sys.executable, "-m", "bench.publisher", "--serve-broker", str(port)]
        server = servers.launch("amqtt", argv, port)
        try:
            wait_port(server)
        except servers.ServerError:
            servers.stop(server)
            raise
        return Broker(name, port, server.proc.pid, lambda: servers.stop(server))
    broker = start_broker(name)
    return Broker(name, broker.mqtt_port, broker.proc.pid, broker.stop, broker.client_port)


@dataclass
class Run:
    broker: str
    rate: float  # offered: sensors / period
    sensors: int
    publishers: int
    seconds: float
    produced_per_s: float
    acknowledged_per_s: float
    received_per_s: float
    backlog_end: int  # produced - received at the window's end
    produced: int  # over the whole run, after the drain
    received: int
    dropped: int
    undelivered: int
    reconnects: int
    drained: bool
    publisher_cores: float  # all publishers' CPU over the window's wall time
    broker_cores: float
    counter_cores: float  # the counter's reading thread
    publisher_rss_mb: list[float] = field(default_factory=list)
    broker_rss_mb: float | None = None
    devices: int = 0  # devices the counter saw

    @property
    def behind_s(self) -> float:
        """The backlog at the window's end in seconds of production: under one period if it holds."""
        return self.backlog_end / self.produced_per_s if self.produced_per_s else math.inf

    @property
    def ratio(self) -> float:
        return self.received / self.produced if self.produced else 0.0


def scenarios(workdir: Path, sensors: int, publishers: int, period: float) -> list[Path]:
    """One scenario per publisher, each with its share of the sensors under its own id prefix."""
    paths = []
    for index in range(publishers):
        share = sensors // publishers + (index < sensors % publishers)
        path = workdir / f"publisher-{index}.yaml"
        about = f"Broker bench, publisher {index} of {publishers}, {share} sensors every {period:g} s."
        path.write_text(fleet_scenario("brokers-bench", about, share, period, prefix=f"p{index}-env"))
        paths.append(path)
    return paths


def launch_publishers(
    args: argparse.Namespace, workdir: Path, sensors: int, url: str
) -> list[servers.Server]:
    """``--publishers`` twins publishing their slices of ``sensors`` to ``url``, each with a buffer
    of two of its ticks."""
    buffer = str(2 * math.ceil(sensors / args.publishers))
    flags = (
        "--rate-limit",
        str(servers.RATE_LIMIT),
        "--publish-fleet-to",
        url,
        "--publish-fleet-buffer",
        buffer,
    )
    twins = []
    for index, scenario in enumerate(scenarios(workdir, sensors, args.publishers, args.period)):
        port, control_port = servers.free_port(), servers.free_port()
        # Two twins under one MQTT client id would end each other's sessions: each its own.
        own = [sys.executable, "-m", "bench.brokers", SERVE_PUBLISHER, f"twin-fleet-p{index}"]
        command = own if args.publishers > 1 else None
        argv = servers.twin_run(scenario, port, control_port, *flags, command=command)
        twins.append(servers.launch(f"twin-{len(twins)}", argv, port, control_port))
    return twins


def serve_publisher(client_id: str, argv: list[str]) -> int:
    """``SERVE_PUBLISHER CLIENT_ID run ...``: ``twin run ...`` whose fleet publisher connects as
    ``CLIENT_ID`` (one ``twin run`` always connects as ``twin-fleet``)."""
    from hardware.adapters import mqtt_fleet
    from twin import cli

    init = mqtt_fleet.FleetPublisher.__init__

    def named(self: mqtt_fleet.FleetPublisher, *a: Any, **kw: Any) -> None:
        init(self, *a, **{**kw, "client_id": client_id})

    mqtt_fleet.FleetPublisher.__init__ = named  # type: ignore[method-assign]
    return cli.main(argv)


def totals(twins: list[servers.Server]) -> dict[str, int]:
    keys = ("produced", "acknowledged", "undelivered", "dropped", "buffered", "in_flight", "reconnects")
    states = [control(t, "GET", "/publisher") for t in twins]
    return {k: sum(s[k] for s in states) for k in keys}


def one_run(name: str, rate: float, args: argparse.Namespace, workdir: Path) -> Run:
    sensors = round(rate * args.period)
    broker = start(name)
    twins: list[servers.Server] = []
    counter: UplinkCounter | None = None
    try:
        counter = MqttCounter(servers.HOST, broker.port).start()
        twins = launch_publishers(args, workdir, sensors, f"mqtt://{servers.HOST}:{broker.port}")
        took = max(servers.wait_healthy(t, timeout=READY_TIMEOUT_S) for t in twins)
        deadline = time.monotonic() + 60
        while not all(control(t, "GET", "/publisher")["connected"] for t in twins):
            if time.monotonic() > deadline:
                raise servers.ServerError("a fleet publisher did not connect within 60 s")
            time.sleep(0.2)
        print(f"  {name} {rate:g}/s: {len(twins)} publisher(s) ready in {took:.0f} s", file=sys.stderr)
        time.sleep(args.warmup)
        edge0 = edge(twins, broker, counter)
        time.sleep(args.seconds)
        edge1 = edge(twins, broker, counter)
        rss = [servers.rss_mb(t.proc.pid) or math.nan for t in twins]
        broker_rss = servers.rss_mb(broker.pid)
        for twin in twins:
            control(twin, "POST", "/clock/pause")
        drained, final = drain(twins, counter, args.period + DRAIN_EXTRA_S)
        wall = edge1["wall"] - edge0["wall"]
        return Run(
            broker=name,
            rate=rate,
            sensors=sensors,
            publishers=len(twins),
            seconds=round(wall, 3),
            produced_per_s=(edge1["produced"] - edge0["produced"]) / wall,
            acknowledged_per_s=(edge1["acknowledged"] - edge0["acknowledged"]) / wall,
            received_per_s=(edge1["received"] - edge0["received"]) / wall,
            backlog_end=edge1["produced"] - edge1["received"],
            produced=final["produced"],
            received=counter.received,
            dropped=final["dropped"],
            undelivered=final["undelivered"],
            reconnects=final["reconnects"],
            drained=drained,
            publisher_cores=(edge1["publisher_cpu"] - edge0["publisher_cpu"]) / wall,
            broker_cores=(edge1["broker_cpu"] - edge0["broker_cpu"]) / wall,
            counter_cores=(edge1["counter_cpu"] - edge0["counter_cpu"]) / wall,
            publisher_rss_mb=[round(r, 1) for r in rss],
            broker_rss_mb=None if broker_rss is None else round(broker_rss, 1),
            devices=counter.devices(),
        )
    finally:
        for twin in twins:
            servers.stop(twin)
        if counter is not None:
            counter.stop()
        broker.stop()


def edge(twins: list[servers.Server], broker: Broker, counter: UplinkCounter) -> dict[str, Any]:
    """At one edge of the window: the publishers' counts, the counter's, CPU seconds and wall time."""
    state: dict[str, Any] = dict(totals(twins))
    state.update(
        received=counter.received,
        publisher_cpu=sum(servers.cpu_seconds(t.proc.pid) for t in twins),
        broker_cpu=servers.cpu_seconds(broker.pid),
        counter_cpu=counter.cpu_seconds(),
        wall=time.monotonic(),
    )
    return state


def drain(twins: list[servers.Server], counter: UplinkCounter, limit: float) -> tuple[bool, dict[str, int]]:
    """The clocks paused: wait at most ``limit`` seconds until nothing is buffered or in flight and
    the counter has every acknowledged message."""
    deadline = time.monotonic() + limit
    while True:
        state = totals(twins)
        idle = state["buffered"] == 0 and state["in_flight"] == 0
        if idle and counter.received >= state["acknowledged"]:
            return True, state
        if time.monotonic() > deadline:
            return False, state
        time.sleep(0.2)


MEDIANS = ("produced_per_s", "acknowledged_per_s", "received_per_s", "behind_s", "dropped", "undelivered",
           "publisher_cores", "broker_cores", "counter_cores")  # fmt: skip


def median_of(runs: list[Run], key: Callable[[Run], float]) -> float:
    return statistics.median(key(r) for r in runs)


def report(results: dict[tuple[str, float], list[Run]], args: argparse.Namespace, skipped: list[str]) -> str:
    lines = [
        f"brokers: fleet publishers ({args.publishers} process(es), QoS 1) -> broker -> uplink counter "
        f"(QoS 0), sensors every {args.period:g} s; medians of {args.runs} run(s), "
        f"{args.seconds:g} s windows after {args.warmup:g} s; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}",
    ]
    lines += [f"  {s}" for s in skipped]
    lines += [
        "",
        f"{'broker':<10}{'offered/s':>10}{'produced/s':>11}{'acked/s':>9}{'received/s':>11}{'recv/prod':>10}"
        f"{'behind s':>9}{'dropped':>8}{'undeliv.':>9}{'pub cores':>10}{'broker':>7}{'counter':>8}"
        f"{'pub RSS MB':>11}{'broker MB':>10}",
    ]
    holds: dict[str, float] = {}
    for (name, rate), runs in results.items():
        ratio = median_of(runs, lambda r: r.ratio)
        if ratio >= TARGET:
            holds[name] = max(holds.get(name, 0.0), rate)
        pub_rss = statistics.median(sum(r.publisher_rss_mb) / len(r.publisher_rss_mb) for r in runs)
        broker_rss = [r.broker_rss_mb for r in runs if r.broker_rss_mb is not None]
        m = {key: median_of(runs, lambda r, k=key: getattr(r, k)) for key in MEDIANS}
        lines.append(
            f"{name:<10}{rate:>10.0f}{m['produced_per_s']:>11.0f}{m['acknowledged_per_s']:>9.0f}"
            f"{m['received_per_s']:>11.0f}{ratio:>10.4f}{m['behind_s']:>9.1f}{m['dropped']:>8.0f}{m['undelivered']:>9.0f}"
            f"{m['publisher_cores']:>10.2f}{m['broker_cores']:>7.2f}{m['counter_cores']:>8.2f}{pub_rss:>11.1f}"
            f"{statistics.median(broker_rss) if broker_rss else math.nan:>10.1f}"
            + ("" if all(r.drained for r in runs) else "  (not drained in time)")
        )
    lines.append("")
    for name in dict.fromkeys(n for n, _ in results):
        best = holds.get(name)
        lines.append(
            f"{name}: received/produced >= {TARGET} up to {best:g} msg/s offered"
            if best
            else f"{name}: below {TARGET} at every rate offered"
        )
    return "\n".join(lines)


def counters_run(args: argparse.Namespace, workdir: Path) -> str:
    """Every named counter on one NATS broker at once, at the last rate: CPU per message each."""
    rate = args.rates[-1]
    sensors = round(rate * args.period)
    broker = start("nats")
    twins: list[servers.Server] = []
    counters: dict[str, UplinkCounter] = {}
    try:
        for name in args.counters:
            port = broker.nats_port if name == "nats" else broker.port
            counters[name] = COUNTERS[name](servers.HOST, port).start()
        twins = launch_publishers(args, workdir, sensors, f"mqtt://{servers.HOST}:{broker.port}")
        for twin in twins:
            servers.wait_healthy(twin, timeout=READY_TIMEOUT_S)
        time.sleep(args.warmup)
        before = {n: (c.received, c.cpu_seconds()) for n, c in counters.items()}
        time.sleep(args.seconds)
        after = {n: (c.received, c.cpu_seconds()) for n, c in counters.items()}
    finally:
        for twin in twins:
            servers.stop(twin)
        for counter in counters.values():
            counter.stop()
        broker.stop()
    lines = [
        f"uplink counters on one NATS broker at once, {rate:g} msg/s offered ({sensors} sensors every "
        f"{args.period:g} s), a {args.seconds:g} s window; load average {os.getloadavg()[0]:.2f}",
        f"{'counter':<8}{'received/s':>11}{'thread cores':>13}{'µs/message':>11}",
    ]
    for name in counters:
        received = after[name][0] - before[name][0]
        cpu = after[name][1] - before[name][1]
        per = 1e6 * cpu / received if received else math.nan
        lines.append(f"{name:<8}{received / args.seconds:>11.0f}{cpu / args.seconds:>13.3f}{per:>11.1f}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.brokers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--brokers", default="amqtt,nats,mosquitto", help="brokers, in order (default: all three)")
    p.add_argument("--rates", default="2000,5000,10000", help="offered msg/s (default 2000,5000,10000)")
    p.add_argument("--period", type=float, default=1.0, help="the sensors' period in seconds (default 1)")
    p.add_argument("--publishers", type=int, default=1, help="publisher processes (default 1)")
    p.add_argument("--runs", type=int, default=3, help="runs per broker and rate (default 3)")
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run (default 20)")
    p.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds per run (default 5)")
    p.add_argument("--counters", help="measure these uplink counters instead (mqtt,nats,paho)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    unknown = [b for b in args.brokers if b not in ("amqtt", "nats", "mosquitto")]
    if unknown or not args.brokers:
        p.error(f"--brokers: unknown {', '.join(unknown) or '(none)'}; choose from amqtt, nats, mosquitto")
    try:
        args.rates = [float(r) for r in args.rates.split(",")]
    except ValueError:
        p.error("--rates: comma-separated numbers")
    if not args.rates or min(args.rates) <= 0 or args.period <= 0:
        p.error("--rates and --period must be > 0")
    if args.publishers < 1 or args.runs < 1 or args.seconds <= 0 or args.warmup < 0:
        p.error("--publishers and --runs must be >= 1, --seconds > 0, --warmup >= 0")
    if args.counters is not None:
        args.counters = [c.strip() for c in args.counters.split(",") if c.strip()]
        if not args.counters or any(c not in COUNTERS for c in args.counters):
            p.error(f"--counters: choose from {', '.join(COUNTERS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [SERVE_PUBLISHER]:
        return serve_publisher(argv[1], argv[2:])
    args = parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-brokers-"))
    try:
        if args.counters:
            print(counters_run(args, workdir))
            return 0
        skipped = []
        for name in list(args.brokers):
            if name != "amqtt":
                try:
                    find_binary(name)
                except BrokerError as err:
                    skipped.append(f"{name} skipped: {err}")
                    args.brokers.remove(name)
        results: dict[tuple[str, float], list[Run]] = {}
        for rate in args.rates:
            for name in args.brokers:
                for n in range(1, args.runs + 1):
                    run = one_run(name, rate, args, workdir)
                    results.setdefault((name, rate), []).append(run)
                    print(
                        f"  {name} {rate:g}/s run {n}/{args.runs}: {run.received_per_s:.0f} received/s, "
                        f"ratio {run.ratio:.4f}, backlog at the end {run.backlog_end}, "
                        f"{run.dropped} dropped, {run.undelivered} undelivered, {run.reconnects} reconnects",
                        file=sys.stderr,
                    )
    except (servers.ServerError, BrokerError, OSError) as err:
        print(f"bench.brokers: {err}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(report(results, args, skipped))
    if args.json:
        data = {
            f"{n}@{r:g}": [asdict(x) | {"ratio": x.ratio, "behind_s": x.behind_s} for x in runs]
            for (n, r), runs in results.items()
        }
        args.json.write_text(json.dumps({"target": TARGET, "runs": data}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
