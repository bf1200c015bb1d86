"""The stand-in for a real device and server: ``twin run`` as a process of its own on loopback, as a
device on the network would be."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import SCENARIOS

STANDIN_START_S = 60.0
COMMAND = [sys.executable, "-m", "twin.cli", "run", "--scenario"]
FLAGS = [
    "--step", "--host", "127.0.0.1", "--port", "0", "--control-port", "0", "--mqtt-port", "0",
    "--rtsp-port", "0", "--gateway-addressing", "port",
    "--gateway-http-port", "0", "--gateway-https-port", "0",
]  # fmt: skip
BANNER = {
    "automation": re.compile(r"automation API\s+(http://\S+)/api"),
    "control": re.compile(r"control plane\s+(http://\S+)"),
    "cam-01/http": re.compile(r"cam-01 gateway\s+(http://\S+)"),
}


@dataclass
class StandIn:
    """A ``twin run`` process standing in for the real device and server, where to reach them."""

    proc: subprocess.Popen
    urls: dict[str, str]

    def url(self, name: str) -> str:
        return self.urls[name]


def launch_standin(root: Path, api_key: str, *flags: str) -> StandIn:
    """``twin run`` on the test scenario, step clock, every server on a free loopback port, seeded
    with the default API key ``api_key``, then ``flags``; its addresses read off the start banner."""
    log_path = root / "standin.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*COMMAND, str(SCENARIOS / "test.yaml"), *FLAGS, *flags],
            env={**os.environ, "NEOMIND_API_KEY": api_key},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + STANDIN_START_S
    while time.monotonic() < deadline and proc.poll() is None:
        text = log_path.read_text(errors="replace")
        found = {name: m.group(1) for name, pattern in BANNER.items() if (m := pattern.search(text))}
        if len(found) == len(BANNER):
            return StandIn(proc, found)
        time.sleep(0.1)  # a process starting on the wall clock: nothing in a world to advance
    proc.kill()
    proc.wait(10)
    raise AssertionError("the stand-in twin did not start:\n" + log_path.read_text(errors="replace"))


def stop_standin(standin: StandIn) -> None:
    standin.proc.send_signal(signal.SIGINT)
    try:
        standin.proc.wait(15)
    except subprocess.TimeoutExpired:
        standin.proc.kill()
        standin.proc.wait(10)


@contextlib.asynccontextmanager
async def standin_process(root: Path, api_key: str, *flags: str) -> AsyncIterator[StandIn]:
    """:func:`launch_standin` for an async test or fixture, stopped on the way out."""
    standin = await asyncio.to_thread(launch_standin, root, api_key, *flags)
    try:
        yield standin
    finally:
        await asyncio.to_thread(stop_standin, standin)
