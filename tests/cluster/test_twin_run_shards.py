"""`twin run --shards N` as a user runs it (an embedded Ray on this machine): every member answers
where ``GET /fleet`` says, a shard whose process dies is reported there while the rest serve on,
and a shard that cannot start stops the others, leaving no process of its Ray behind."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.twin.test_cli_process import PORT_FLAGS

pytest.importorskip("ray")
pytestmark = [pytest.mark.socket, pytest.mark.timeout(300)]

START_S = 180.0


class Twin:
    def __init__(self, *args: str) -> None:
        cmd = [sys.executable, "-m", "twin.cli", "run", "--shards", "2", "--cameras", "2", "--sensors", "10"]
        self.proc = subprocess.Popen([*cmd, *PORT_FLAGS, "--rtsp-port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def control_url(self) -> str:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            for line in list(self.lines):
                if match := re.search(r"control plane\s+(http://\S+)", line):
                    return match.group(1)
            time.sleep(0.2)
        self.proc.kill()
        raise AssertionError("twin did not start:\n" + "".join(self.lines))

    def wait(self) -> int:
        code = self.proc.wait(timeout=120)
        self.reader.join(timeout=10)
        return code


def left_behind(pid: int) -> list[str]:
    """Processes of the Ray session twin ``pid`` started (Ray names its session after its driver)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = (
                    Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                )
            except OSError:
                continue
            if re.search(rf"session_\S+_{pid}\b", cmd):
                out.append(f"{entry}: {cmd[:120]}")
    return out


def test_shards_serve_every_member_and_a_dead_one_is_reported() -> None:
    twin = Twin()
    try:
        url = twin.control_url()
        fleet = httpx.get(f"{url}/fleet", timeout=30).json()
        where = {m["name"]: m for m in fleet["members"]}
        assert {where["cam-01"]["shard"], where["cam-02"]["shard"]} == {"shard-0", "shard-1"}
        assert (
            httpx.get(
                where["automation"]["urls"]["http"].replace("0.0.0.0", "127.0.0.1") + "/api/health"
            ).status_code
            == 200
        )
        assert httpx.get(where["cam-02"]["urls"]["http"] + "/api/v1/system/info").status_code == 401
        assert [s["state"] for s in fleet["shards"]] == ["running", "running"]
        os.kill(where["cam-02"]["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            states = {s["name"]: s["state"] for s in httpx.get(f"{url}/fleet", timeout=30).json()["shards"]}
            if states["shard-1"] != "running":
                break
            time.sleep(0.5)
        assert states["shard-1"].startswith("shard-1 is gone"), states
        assert states["shard-0"] == "running"
        assert httpx.get(where["cam-01"]["urls"]["http"] + "/api/v1/system/info").status_code == 401
        assert httpx.post(f"{url}/clock/pause", timeout=30).json()["paused"] is True
    finally:
        twin.proc.send_signal(signal.SIGTERM)
        code = twin.wait()
    assert code == 0, "".join(twin.lines)
    assert any("shard-1 is gone" in line for line in twin.lines)
    time.sleep(2)
    assert left_behind(twin.proc.pid) == []


def test_a_shard_that_cannot_start_stops_the_rest() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        flags = list(PORT_FLAGS)
        at = flags.index("--gateway-http-port")
        flags[at + 1] = str(port - 2)  # cam-02, on shard-1, listens at the base port + 2
        twin = Twin(*flags)
        code = twin.wait()
    assert code != 0
    text = "".join(twin.lines)
    assert "address already in use" in text.lower() or "errno 98" in text.lower(), text[-3000:]
    time.sleep(2)
    assert left_behind(twin.proc.pid) == []
