"""The control plane's demo page plays a camera's live stream in headless Chromium: the page remuxes
the gateway's framing to fragmented MP4 for Media Source Extensions, and the video element's
``currentTime`` advances past 2 s on a realtime world clock."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from hardware.ports.types import ClockMode
from tests.sockets import socket_settings, until
from twin.camera.video import stream as video_stream
from twin.serve import build, start, stop

pytestmark = pytest.mark.socket


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's ``chromium``, installed here when it is missing and this is root with apt-get (as on
    CI); skipped, saying why, only where it cannot be installed."""
    if _chromium() is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        for command in (["apt-get", "update"], install):
            subprocess.run(command, env=env, capture_output=True, timeout=900, check=False)
    found = _chromium()
    if found is None:
        pytest.skip("Chromium is missing and cannot be installed here (Debian's `chromium` needs root)")
    return found


@pytest.mark.timeout(1200)  # the first use may install Chromium
async def test_demo_page_plays_the_main_stream(
    chromium: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.25)
    twin = build(socket_settings())
    twin.clock.set_mode(ClockMode.REALTIME)
    running = await start(twin, tmp_path)
    gateway, control = running.url("cam-01/http"), running.url("control")
    async with httpx.AsyncClient() as http:
        page = await http.get(control + "/demo/video")
    assert page.status_code == 200 and "MediaSource" in page.text
    profile = tmp_path / "chromium"
    url = f"{control}/demo/video#gateway={gateway}&stream=main&username=admin&password=password"
    browser = await asyncio.create_subprocess_exec(
        chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--autoplay-policy=no-user-gesture-required", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", url,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        await until(lambda: port_file.exists() and port_file.read_text().strip(), attempts=1500)
        port = int(port_file.read_text().split()[0])
        async with httpx.AsyncClient() as http:
            targets = (await http.get(f"http://127.0.0.1:{port}/json")).json()
        target = next(t for t in targets if t["type"] == "page")
        ids = itertools.count(1)
        async with connect(target["webSocketDebuggerUrl"], max_size=None) as cdp:

            async def evaluate(expression: str) -> object:
                n = next(ids)
                params = {"expression": expression, "returnByValue": True}
                await cdp.send(json.dumps({"id": n, "method": "Runtime.evaluate", "params": params}))
                while True:
                    answer = json.loads(await cdp.recv())
                    if answer.get("id") == n:
                        return answer["result"]["result"].get("value")

            async def played() -> bool:
                return (await evaluate("document.getElementById('video').currentTime") or 0) >= 2.0

            await until(played, attempts=1500)  # 30 s of wall time at most
            state = await evaluate("JSON.stringify(window.twinDemo)")
            size = await evaluate("[video.videoWidth, video.videoHeight].join('x')")
        assert json.loads(str(state))["frames"] >= 50 and json.loads(str(state))["error"] == ""
        assert size == "480x270"
    finally:
        if browser.returncode is None:
            browser.terminate()
            await browser.wait()
        await stop(running)
