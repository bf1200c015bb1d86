"""`twin run` as a real process: it starts, answers, survives kill -9 with a state dir, exits cleanly."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import SCENARIOS

pytestmark = pytest.mark.socket

PORT_FLAGS = [
    "--host", "127.0.0.1", "--port", "0", "--control-port", "0", "--mqtt-port", "0",
    "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
]  # fmt: skip


def launch(*extra: str) -> tuple[subprocess.Popen, str]:
    """Start `twin run` and return it with its automation API URL, read from the start banner."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "twin.cli",
            "run",
            "--scenario",
            str(SCENARIOS / "test.yaml"),
            *PORT_FLAGS,
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 30
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        match = re.search(r"automation API\s+(http://\S+)/api", line)
        if match:
            return proc, match.group(1)
    proc.kill()
    raise AssertionError("twin did not start:\n" + "".join(lines))


def test_state_survives_kill_9_and_sigint_exits_cleanly(tmp_path: Path) -> None:
    state = ["--state-dir", str(tmp_path / "state")]
    proc, url = launch(*state)
    try:
        resp = httpx.post(f"{url}/api/setup/initialize", json={"username": "admin", "password": "abc12345"})
        assert resp.status_code == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    proc, url = launch(*state)
    try:
        resp = httpx.post(f"{url}/api/auth/login", json={"username": "admin", "password": "abc12345"})
        assert resp.status_code == 200
        assert httpx.get(f"{url}/api/setup/status").json()["setup_required"] is False
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert "Traceback" not in out
    assert "shutting down" in out


def test_a_bad_scenario_is_reported_with_its_location(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nfleet:\n  cameras:\n    count: many\n")
    proc = subprocess.run(
        [sys.executable, "-m", "twin.cli", "run", "--scenario", str(bad), *PORT_FLAGS],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert f"{bad}:4: fleet.cameras.count" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_lists_every_command_with_a_line_each() -> None:
    def twin(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "twin.cli", *args], capture_output=True, text=True, timeout=30
        )

    top, scenario = twin("--help"), twin("scenario", "--help")
    assert top.returncode == 0 and scenario.returncode == 0
    actions = re.search(r"\{([a-z,]+)\}", scenario.stdout).group(1).split(",")
    assert sorted(actions) == ["list", "run", "validate"]
    for command in ["run", *(f"scenario {a}" for a in actions)]:
        assert re.search(rf"^  {command} +\w", top.stdout, re.M), top.stdout
    assert "exit status of twin scenario run:\n  0  passed" in top.stdout
    bare = twin()
    assert bare.returncode == 2 and "usage: twin [-h] command ..." in bare.stderr
