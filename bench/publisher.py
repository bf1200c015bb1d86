"""``python -m bench.publisher``: the simulated fleet published to an outside MQTT broker at 1 Hz per
sensor (``twin run --publish-fleet-to``), counted at both ends.

Per run, all on loopback: an amqtt broker in its own process (:class:`api.realtime.broker.EmbeddedBroker`,
the one the twin embeds); a subscriber in this process (paho, ``device/+/+/uplink``) that counts
every message and the wall second it arrived in; then ``twin run`` with ``--sensors``
(2 000) env sensors reporting every second on a realtime clock at speed 1, no cameras, publishing to
that broker. After ``--warmup`` seconds the twin's own counters (``GET /publisher`` on its control
plane) and the subscriber's count are read at the start and end of a ``--seconds`` window: messages
produced, acknowledged (``PUBACK``) and received per second. Then the twin's clock is paused
(``POST /clock/pause``: the fleet stops producing) and the publisher drains; lost is what the fleet
produced and the subscriber never received, next to the twin's own dropped and undelivered counts.

Targets: received per second over the window >= 0.99 x the sensors (the rate is held); 0 lost.

The fleet publishes at QoS 1 (the leg under test: nothing counts as sent without its ``PUBACK``);
the subscriber takes QoS 0 by default, so that the broker, a Python one sharing the machine, does
the publisher's leg and one write per message rather than a second acknowledged delivery as well
(``--subscriber-qos 1``: about a third more broker time per message). Loss anywhere still shows:
lost is counted at the subscriber.

  .venv/bin/python -m bench.publisher --runs 1 --seconds 10     # a quick look
  .venv/bin/python -m bench.publisher --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from bench import servers

RATE_TARGET = 0.99
TOPIC = "device/+/+/uplink"
DRAIN_TIMEOUT_S = 60.0
SCENARIO = """\
name: {name}
description: {description}
seed: 4242
clock:
  mode: realtime
  speed: 1
  epoch: now
fleet:
  sensors:
    - type: env_sensor
      id_prefix: {prefix}
      count: {sensors}
      period: {period:g}
      metrics:
        temperature: {{kind: diurnal, mean: 21, amplitude: 4, noise: 0.2, spread: 0.1, unit: "°C"}}
  cameras:
    count: 0
"""


def fleet_scenario(
    name: str, description: str, sensors: int, period: float, prefix: str = "env_sensor"
) -> str:
    """A scenario of ``sensors`` env sensors every ``period`` s on a realtime clock at speed 1, no
    cameras: the fleet the publishing benches publish."""
    return SCENARIO.format(name=name, description=description, sensors=sensors, period=period, prefix=prefix)


@dataclass
class Run:
    sensors: int
    seconds: float
    produced_per_s: float
    acknowledged_per_s: float
    received_per_s: float
    received_min_per_s: int  # the slowest whole wall second inside the window, at the subscriber
    produced: int  # over the whole run, after the drain
    received: int
    lost: int  # produced, never received
    dropped: int  # the publisher's own counts
    undelivered: int
    reconnects: int
    drained: bool
    cpu_cores: float  # the twin's CPU time over the window's wall time
    broker_cores: float  # the broker's, likewise
    rss_mb: float | None

    @property
    def rate_ratio(self) -> float:
        return self.received_per_s / self.sensors


class Subscriber:
    """Counts every uplink message the broker delivers, and how many arrived in each wall second."""

    def __init__(self, port: int, qos: int) -> None:
        self.count = 0
        self.per_second: Counter[int] = Counter()
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id="bench-subscriber", clean_session=True
        )
        client.on_connect = lambda c, u, f, code, p: c.subscribe(TOPIC, qos=qos)
        client.on_subscribe = lambda c, u, mid, codes, p: self._subscribed.set()
        client.on_message = self._on_message
        client.connect(servers.HOST, port, keepalive=60)
        client.loop_start()
        self.client = client
        if not self._subscribed.wait(10.0):
            self.stop()
            raise servers.ServerError(f"broker on port {port}: no SUBACK within 10 s")

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        second = int(time.monotonic())
        with self._lock:
            self.count += 1
            self.per_second[second] += 1

    def read(self) -> int:
        with self._lock:
            return self.count

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def serve_broker(port: int) -> None:
    """``--serve-broker PORT``: the outside broker, until SIGINT or SIGTERM."""
    from api.realtime.broker import EmbeddedBroker

    async def serve() -> None:
        broker = EmbeddedBroker(servers.HOST, port)
        await broker.start()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()
        await broker.stop()

    asyncio.run(serve())


def wait_port(server: servers.Server, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise servers.ServerError(
                f"{server.name} exited with {server.proc.returncode}:\n{server.log_tail()}"
            )
        try:
            with socket.create_connection((servers.HOST, server.port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.1)
    raise servers.ServerError(f"{server.name} not listening after {timeout:g} s:\n{server.log_tail()}")


def control(twin: servers.Server, method: str, path: str) -> dict[str, Any]:
    url = f"http://{servers.HOST}:{twin.control_port}{path}"
    status, body = servers.http_json(method, url, {} if method == "POST" else None)
    if status != 200 or not isinstance(body, dict):
        raise servers.ServerError(f"{twin.name}: {method} {url} answered {status}: {body!r}")
    return body


def one_run(args: argparse.Namespace, workdir: Path) -> Run:
    scenario = workdir / "publisher.yaml"
    about = f"Fleet publisher bench, {args.sensors} sensors at 1 Hz on a realtime clock at speed 1."
    scenario.write_text(fleet_scenario("publisher-bench", about, args.sensors, 1))
    broker_port = servers.free_port()
    argv = [sys.executable, "-m", "bench.publisher", "--serve-broker", str(broker_port)]
    broker = servers.launch("broker", argv, broker_port)
    twin = subscriber = None
    try:
        wait_port(broker)
        subscriber = Subscriber(broker_port, args.subscriber_qos)
        port, control_port = servers.free_port(), servers.free_port()
        flags = (
            "--rate-limit",
            str(servers.RATE_LIMIT),
            "--publish-fleet-to",
            f"mqtt://{servers.HOST}:{broker_port}",
        )
        twin = servers.launch(
            "twin", servers.twin_run(scenario, port, control_port, *flags), port, control_port
        )
        took = servers.wait_healthy(twin, timeout=120)
        print(f"  twin ready in {took:.1f} s (pid {twin.proc.pid}), {args.sensors} sensors", file=sys.stderr)
        deadline = time.monotonic() + 30
        while not control(twin, "GET", "/publisher")["connected"]:
            if time.monotonic() > deadline:
                raise servers.ServerError("the fleet publisher did not connect within 30 s")
            time.sleep(0.2)
        time.sleep(args.warmup)
        start, received0, cpu0, wall0, broker0 = window_edge(twin, broker, subscriber)
        time.sleep(args.seconds)
        end, received1, cpu1, wall1, broker1 = window_edge(twin, broker, subscriber)
        rss = servers.rss_mb(twin.proc.pid)
        control(twin, "POST", "/clock/pause")
        drained, status = drain(twin, subscriber)
        wall = wall1 - wall0
        whole = range(math.ceil(wall0), math.floor(wall1))  # wall seconds wholly inside the window
        return Run(
            sensors=args.sensors,
            seconds=round(wall, 3),
            produced_per_s=(end["produced"] - start["produced"]) / wall,
            acknowledged_per_s=(end["acknowledged"] - start["acknowledged"]) / wall,
            received_per_s=(received1 - received0) / wall,
            received_min_per_s=min((subscriber.per_second[s] for s in whole), default=0),
            produced=status["produced"],
            received=subscriber.read(),
            lost=status["produced"] - subscriber.read(),
            dropped=status["dropped"],
            undelivered=status["undelivered"],
            reconnects=status["reconnects"],
            drained=drained,
            cpu_cores=(cpu1 - cpu0) / wall,
            broker_cores=(broker1 - broker0) / wall,
            rss_mb=rss,
        )
    finally:
        servers.stop(twin)
        if subscriber is not None:
            subscriber.stop()
        servers.stop(broker)


def window_edge(
    twin: servers.Server, broker: servers.Server, subscriber: Subscriber
) -> tuple[dict[str, Any], int, float, float, float]:
    """At one edge of the window: the twin's publisher counts, the subscriber's count, the twin's CPU
    seconds, the wall time and the broker's CPU seconds."""
    return (
        control(twin, "GET", "/publisher"),
        subscriber.read(),
        servers.cpu_seconds(twin.proc.pid),
        time.monotonic(),
        servers.cpu_seconds(broker.proc.pid),
    )


def drain(twin: servers.Server, subscriber: Subscriber) -> tuple[bool, dict[str, Any]]:
    """Wait, the clock paused, until nothing is buffered or in flight and the subscriber has seen
    every acknowledged message (or its count stops moving)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    last, still = -1, 0
    while True:
        status = control(twin, "GET", "/publisher")
        received = subscriber.read()
        idle = status["buffered"] == 0 and status["in_flight"] == 0
        if idle and received >= status["acknowledged"]:
            return True, status
        still = still + 1 if idle and received == last else 0
        if still >= 10 or time.monotonic() > deadline:  # 2 s without a message more: that is all
            return False, status
        last = received
        time.sleep(0.2)


def report(runs: list[Run], args: argparse.Namespace) -> str:
    lines = [
        f"fleet publisher: {args.sensors} sensors at 1 Hz to an amqtt broker on loopback, QoS 1, "
        f"subscriber at QoS {args.subscriber_qos}; {args.runs} run(s), {args.seconds:g} s windows "
        f"after {args.warmup:g} s; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}",
        "",
        f"{'run':>4}{'produced/s':>12}{'acked/s':>10}{'received/s':>12}{'min/s':>7}{'produced':>10}"
        f"{'received':>10}{'lost':>6}{'dropped':>8}{'undeliv.':>9}{'reconn.':>8}{'cores':>7}{'broker':>7}"
        f"{'RSS MB':>8}",
    ]
    for n, r in enumerate(runs, 1):
        lines.append(
            f"{n:>4}{r.produced_per_s:>12.1f}{r.acknowledged_per_s:>10.1f}{r.received_per_s:>12.1f}"
            f"{r.received_min_per_s:>7}{r.produced:>10}{r.received:>10}{r.lost:>6}{r.dropped:>8}"
            f"{r.undelivered:>9}{r.reconnects:>8}{r.cpu_cores:>7.2f}{r.broker_cores:>7.2f}"
            f"{r.rss_mb or math.nan:>8.1f}" + ("" if r.drained else "  (did not drain)")
        )
    ratio = statistics.median(r.rate_ratio for r in runs)
    lost = max(r.lost for r in runs)
    lines += [
        "",
        f"target publisher rate: received/s over sensors (median of runs) = {ratio:.3f}, "
        f"want ≥ {RATE_TARGET}: {'PASS' if ratio >= RATE_TARGET else 'MISS'}",
        f"target publisher loss: lost messages (worst run) = {lost}, want 0: "
        f"{'PASS' if lost == 0 else 'MISS'}",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.publisher",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--sensors", type=int, default=2000, help="sensors publishing at 1 Hz (default 2000)")
    p.add_argument("--runs", type=int, default=3, help="runs, each with a new broker and twin (default 3)")
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds per run (default 20)")
    p.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds per run (default 5)")
    p.add_argument(
        "--subscriber-qos", type=int, choices=(0, 1), default=0, help="the subscriber's QoS (default 0)"
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    p.add_argument("--serve-broker", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_broker is None and (
        args.sensors < 1 or args.runs < 1 or args.seconds <= 0 or args.warmup < 0
    ):
        p.error("--sensors and --runs must be >= 1, --seconds > 0, --warmup >= 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_broker is not None:
        serve_broker(args.serve_broker)
        return 0
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-publisher-") as tmp:
            for n in range(1, args.runs + 1):
                run = one_run(args, Path(tmp))
                runs.append(run)
                print(
                    f"  run {n}/{args.runs}: {run.received_per_s:.1f} received/s, {run.lost} lost",
                    file=sys.stderr,
                )
    except (servers.ServerError, OSError) as err:
        print(f"bench.publisher: {err}", file=sys.stderr)
        return 1
    print(report(runs, args))
    if args.json:
        data = {"runs": [asdict(r) for r in runs], "rate_target": RATE_TARGET}
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
