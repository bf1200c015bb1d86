"""The Locust load test runs distributed on loopback: a twin as a real process, one master and two
workers for ten seconds; no request fails and every user class shows up under its own names."""

from __future__ import annotations

import csv
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.socket

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILE = ROOT / "loadtests" / "locustfile.py"
PORT_FLAGS = [
    "--host", "127.0.0.1", "--port", "0", "--control-port", "0", "--mqtt-port", "0",
    "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
]  # fmt: skip
BANNER = {
    "automation": r"automation API\s+(http://\S+)/api",
    "control": r"control plane\s+(http://\S+)",
    "mqtt": r"MQTT broker\s+mqtt://\S+:(\d+)",
    "gateway": r"cam-01 gateway\s+(http://\S+)",
}
NAMES = {  # one statistics entry each user class must have made
    "ApiUser": "/api/devices/[id]",
    "HealthUser": "/api/health",
    "MqttUser": "mqtt publish device/load_sensor/[id]/uplink",
    "EventWsUser": "ws /api/events/ws (message)",
    "EventSseUser": "sse /api/events/stream (event)",
    "GatewayUser": "gateway /api/v1/system/health",
    "H264Viewer": "gateway /api/v1/h264/main (frame)",
    "FaultUser": "control POST /ratelimit/automation/storm",
}


def start_twin() -> tuple[subprocess.Popen, dict[str, str], list[str]]:
    """`twin run` on the default (realtime) scenario, every server on a free loopback port; its
    addresses from the banner, and its output (drained by a thread from then on)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "twin.cli", "run", "--scenario", str(SCENARIOS / "default.yaml"), *PORT_FLAGS],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    found: dict[str, str] = {}
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line)
        for name, pattern in BANNER.items():
            if match := re.search(pattern, line):
                found[name] = match.group(1)
        if len(found) == len(BANNER):
            break
    else:
        proc.kill()
        raise AssertionError("twin did not start:\n" + "".join(lines))
    found["mqtt"] = f"mqtt://127.0.0.1:{found['mqtt']}"  # the broker listens on every address
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    return proc, found, lines


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def locust(*args: str, output: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), *args],
        cwd=ROOT,
        env=env,
        stdout=output.open("w"),
        stderr=subprocess.STDOUT,
    )


def test_a_master_and_two_workers_load_every_path_without_a_failure(tmp_path: Path) -> None:
    twin, urls, twin_output = start_twin()
    procs: list[subprocess.Popen] = []
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TWIN_")}
        env |= {
            "TWIN_GATEWAY_URL": urls["gateway"],
            "TWIN_CONTROL_URL": urls["control"],
            "TWIN_MQTT_URL": urls["mqtt"],
        }
        port = str(free_port())
        worker = ["--worker", "--master-host", "127.0.0.1", "--master-port", port]
        for n in (1, 2):
            procs.append(locust(*worker, output=tmp_path / f"worker{n}.log", env=env))
        master = locust(
            *["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", port],
            *["--expect-workers", "2", "--headless", "-u", "20", "-r", "20", "-t", "10s"],
            *["--host", urls["automation"], "--csv", str(tmp_path / "load"), "--only-summary"],
            output=tmp_path / "master.log",
            env=env,
        )
        procs.append(master)
        status = master.wait(60)
        logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(tmp_path.glob("*.log")))
        assert status == 0, logs
        assert "2 workers connected" in (tmp_path / "master.log").read_text(), logs

        with (tmp_path / "load_stats.csv").open() as fh:
            rows = {row["Name"]: row for row in csv.DictReader(fh)}
        assert rows["Aggregated"]["Failure Count"] == "0", logs
        missing = {
            user: name for user, name in NAMES.items() if int(rows.get(name, {}).get("Request Count", 0)) == 0
        }
        assert not missing, f"no statistics from {missing}\n{logs}"

        # The MQTT uplinks and webhook pushes reached the automation server: unknown devices are drafts.
        body = {
            "username": "admin",
            "password": "changeme1",
        }  # the locustfile's default, made on a fresh twin
        token = httpx.post(f"{urls['automation']}/api/auth/login", json=body).json()["token"]
        drafts = httpx.get(
            f"{urls['automation']}/api/devices/drafts", headers={"Authorization": f"Bearer {token}"}
        ).json()
        sources = {(d["device_id"].rsplit("-", 1)[0], d["source"]) for d in drafts["data"]["items"]}
        assert sources == {("mqtt-load", "mqtt"), ("load", "webhook")}, sources
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
        twin.send_signal(signal.SIGINT)
        twin.wait(15)
    assert twin.returncode == 0, "".join(twin_output)
    assert "Traceback" not in "".join(twin_output)
