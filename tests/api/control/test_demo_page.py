"""The control plane's demo page plays a camera's live stream in headless Chromium: the page (with the
player module it shares with the console) remuxes the gateway's framing to fragmented MP4 for Media
Source Extensions, and the video element's ``currentTime`` advances past 2 s on a realtime world
clock."""

from __future__ import annotations

import asyncio
import itertools
import json
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
        player = await http.get(control + "/static/js/mse.js")  # the remuxing the console shares
    assert page.status_code == 200 and "/static/js/mse.js" in page.text
    assert player.status_code == 200 and "MediaSource" in player.text
    assert player.headers["content-type"].startswith("text/javascript")
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
