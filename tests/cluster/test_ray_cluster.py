"""Shards on a real Ray cluster: two nodes on this machine (every port of ours picked free), four
shards spread over them. After every barrier all shards stand at the same sim time, the merged
trace is the single process's, realtime anchors keep the shards within one slice through speed
changes and pauses, and a shard whose process is killed fails the run, named."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.cluster.test_shards import SITE
from twin.cluster.merge import trace_hash
from twin.scenario.runner import RunOptions, run

pytestmark = pytest.mark.timeout(400)
RAY = Path(sys.executable).with_name("ray")
KILLER = Path(__file__).with_name("killer.py")
DRIVE = Path(__file__).with_name("drive.py")


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def node_ports() -> list[str]:
    names = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
             "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port")  # fmt: skip
    ports = free_ports(len(names))
    lo = free_ports(1)[0]
    return [f"--{n}={p}" for n, p in zip(names, ports, strict=True)] + [
        f"--min-worker-port={lo}", f"--max-worker-port={lo + 40}",
    ]  # fmt: skip


def ray_start(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run([str(RAY), "start", *args], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"ray start {' '.join(args)}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def stop_tree(marker: str) -> None:
    """End every process whose command line names ``marker`` (our cluster's directory), and their
    children: never ``ray stop``, which ends every Ray on the machine, other users' too."""
    procs: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = (
                    Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            procs[int(entry)] = (ppid, cmd)
    found = {pid for pid, (_, cmd) in procs.items() if marker in cmd} - {os.getpid()}
    grown = True
    while grown:
        more = {pid for pid, (ppid, _) in procs.items() if ppid in found} - found
        found |= more
        grown = bool(more)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)
        time.sleep(2)


@pytest.fixture(scope="module")
def cluster():
    """A head and one worker node on this machine, one CPU each; every process of it ended after."""
    temp = f"/tmp/twin-ray-{os.getpid()}"  # short: Ray's socket paths have a length limit
    token = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}  # this cluster's own
    env = {**os.environ, **token, "RAY_USAGE_STATS_ENABLED": "0"}  # every node and driver presents it
    gcs = free_ports(1)[0]
    common = ["--num-cpus=1", "--disable-usage-stats", "--node-ip-address=127.0.0.1"]
    try:
        head = ["--head", f"--port={gcs}", "--include-dashboard=false", f"--temp-dir={temp}"]
        ray_start([*head, *common, *node_ports()], env)
        ray_start([f"--address=127.0.0.1:{gcs}", *common, *node_ports()], env)
        yield env, f"127.0.0.1:{gcs}"
    finally:
        stop_tree(temp)
        shutil.rmtree(temp, ignore_errors=True)


def test_four_shards_on_two_nodes_agree_after_every_barrier_and_give_the_single_trace(cluster) -> None:
    env, address = cluster
    done = subprocess.run(
        [sys.executable, str(DRIVE), address], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["nodes"] == 2  # the four shards are spread over both nodes
    assert seen["apart"] == []  # after every advance every shard stood at the barrier's time
    single = asyncio.run(run(SITE, RunOptions(step=True, stop_at=600)))
    assert seen["hash"] == trace_hash(single.trace)
    assert seen["drift"] and all(d <= 0.01 * speed for speed, d in seen["drift"]), seen["drift"]
    assert seen["paused"] == [seen["paused_at"]]


def test_a_killed_shard_fails_the_run_naming_it(cluster, tmp_path) -> None:
    env, address = cluster
    command = [sys.executable, "-m", "twin.cli", "scenario", "run", str(SITE), "--shards", "4", "--cluster",
               address, "--speed", "10", "--client", f"{sys.executable} {KILLER} 120", "--junit",
               str(tmp_path / "junit.xml")]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]  # failed
    assert "twin: shard-2 is gone" in done.stderr
    assert "shard-2 is gone" in (tmp_path / "junit.xml").read_text()
