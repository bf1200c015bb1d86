"""The control plane's console in real Chromium (driven by Playwright, on Debian's ``chromium``): it
plays a camera's video as the camera is opened, pauses and advances the clock (and refuses an empty
"run to"), switches a latency fault on and off from a form whose server is a select of the servers,
takes, labels and deletes snapshots, runs a scenario to its verdict and re-attaches the video to the
rebuilt world; and the console's video socket over a real connection."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Page, async_playwright
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from hardware.ports.types import ClockMode
from tests.conftest import CHROMIUM_ARGS
from tests.sockets import socket_settings
from twin.camera.video import stream as video_stream
from twin.scenario.live import LiveScenarios
from twin.serve import Running, build, start, stop

pytestmark = pytest.mark.socket

WAIT_MS = 20_000


@pytest.fixture
async def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Running]:
    """The test world on a realtime clock (small frames keep the video cheap), with scenarios run
    from the control plane as ``twin run`` sets them up."""
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.25)
    twin = build(socket_settings())
    twin.clock.set_mode(ClockMode.REALTIME)
    twin.control.scenarios = LiveScenarios(twin.control)
    started = await start(twin, tmp_path)
    try:
        yield started
    finally:
        await stop(started)


@pytest.mark.timeout(1200)  # the first use may install Chromium
async def test_the_console_drives_the_twin(chromium: str, running: Running) -> None:
    base = running.url("control")
    errors: list[str] = []
    async with async_playwright() as pw, httpx.AsyncClient(base_url=base) as control:
        browser = await pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1366, "height": 768})
            page.on("pageerror", lambda err: errors.append(str(err)))
            await page.goto(f"{base}/console")
            await watch_a_camera(page)
            await pause_and_advance(page, control)
            await latency_on_and_off(page, control)
            await label_and_delete_snapshots(page, control)
            await run_a_scenario(page, control)
        finally:
            await browser.close()
    assert errors == []


async def watch_a_camera(page: Page) -> None:
    await page.click("[data-camera=cam-01] button", timeout=WAIT_MS)
    await page.wait_for_selector("#camera-stream option", state="attached", timeout=WAIT_MS)
    video = "document.getElementById('camera-video')"  # it plays with no Play click
    await page.wait_for_function(f"{video}.readyState >= 3 && {video}.currentTime > 0.5", timeout=WAIT_MS)
    played = await page.evaluate(f"{video}.currentTime")
    await page.wait_for_function(f"{video}.currentTime > {played} + 0.5", timeout=WAIT_MS)
    state = await page.evaluate("window.twinConsole.video")
    assert state["frames"] > 10 and state["error"] == "" and state["fps"] > 1
    assert await page.evaluate(f"[{video}.videoWidth, {video}.videoHeight]") == [320, 180]  # sub, scaled
    await page.wait_for_selector("#camera-video-status:has-text('fps received')", timeout=WAIT_MS)
    watched = page.locator("#camera-streams [data-stream=sub]")
    await watched.filter(has_text="fps received here").wait_for(timeout=WAIT_MS)


async def pause_and_advance(page: Page, control: httpx.AsyncClient) -> None:
    await page.click("#clock-toggle")
    await page.wait_for_selector("#clock-toggle:text('Resume')", timeout=WAIT_MS)
    paused = (await control.get("/clock")).json()
    assert paused["paused"] is True
    await page.fill("#clock-target", "")
    await page.click("#clock-run-to")
    await page.wait_for_selector("#toast.error:has-text('run to: the field is empty')", timeout=WAIT_MS)
    assert (await control.get("/clock")).json()["sim_time"] == paused["sim_time"]
    await page.fill("#clock-seconds", "3600")
    await page.click("#clock-advance")
    target = paused["sim_time"] + 3600
    await page.wait_for_function(
        f"Number(document.getElementById('clock-sim').dataset.sim) >= {target}", timeout=WAIT_MS
    )
    assert (await control.get("/clock")).json()["sim_time"] == pytest.approx(target)


async def latency_on_and_off(page: Page, control: httpx.AsyncClient) -> None:
    await page.click("#tab-faults")
    await page.click("[data-action=latency]", timeout=WAIT_MS)
    await page.fill("#action-form input[name=seconds]", "2")
    servers = await page.locator("#action-form select[name=server] option").all_inner_texts()
    assert servers == ["automation", "cam-01"]  # the servers the control plane knows
    await page.select_option("#action-form select[name=server]", "automation")
    await page.click("#action-run")
    undo = await page.wait_for_selector("#active-faults [data-undo]", timeout=WAIT_MS)
    latency = (await control.get("/faults")).json()["automation"]["latency"]
    assert latency == [{"seconds": 2.0, "path_prefix": "/", "jitter": 0.0}]
    await undo.click()
    await page.wait_for_selector("#no-active", timeout=WAIT_MS)
    assert (await control.get("/faults")).json()["automation"]["latency"] == []


async def label_and_delete_snapshots(page: Page, control: httpx.AsyncClient) -> None:
    await page.click("#tab-snapshots")
    await page.fill("#snapshot-label", "before the run")
    await page.click("#snapshot-take")
    await page.wait_for_selector("#snapshot-table td:has-text('before the run')", timeout=WAIT_MS)
    await page.click("#snapshot-take")
    [first, second] = (await control.get("/snapshots")).json()["snapshots"]
    assert (first["label"], second["label"]) == ("before the run", "")
    await page.click(f"[data-delete={second['id']}]", timeout=WAIT_MS)
    await page.wait_for_selector(f"[data-delete={second['id']}]", state="detached", timeout=WAIT_MS)
    assert [s["id"] for s in (await control.get("/snapshots")).json()["snapshots"]] == [first["id"]]


async def run_a_scenario(page: Page, control: httpx.AsyncClient) -> None:
    attached = await page.evaluate("window.twinConsole.reattached || 0")
    await page.click("#tab-scenarios")
    await page.click("[data-scenario=flaky_network] button", timeout=WAIT_MS)
    await page.wait_for_selector("#scenario-start:not([disabled])", timeout=WAIT_MS)
    await page.select_option("#run-mode", "step")  # the file is realtime at speed 20: 30 s of wall time
    await page.click("#scenario-start")
    await page.wait_for_selector("#scenario-state[data-state=running]", timeout=WAIT_MS)
    done = await page.wait_for_selector("#scenario-state[data-state=finished]", timeout=WAIT_MS)
    assert await done.get_attribute("data-outcome") in {"passed", "failed", "inconclusive"}
    outcomes = await page.locator("#verdicts tbody tr td:nth-child(2)").all_inner_texts()
    assert len(outcomes) == 2 and all(o in {"passed", "failed", "inconclusive"} for o in outcomes)
    run = (await control.get("/scenario")).json()["run"]
    assert run["sim_time"] == 600 and [a["action"] for a in run["actions"]] == [
        "latency",
        "network_loss",
        "http_errors",
    ]
    assert await page.get_attribute("#scenario-report", "href") == "/scenario/report"
    report_page = await control.get("/scenario/report")
    assert report_page.status_code == 200 and "flaky_network" in report_page.text
    # the run rebuilt the world: the camera's video went on with the new world's stream
    await page.wait_for_function(f"window.twinConsole.reattached > {attached}", timeout=WAIT_MS)
    await page.wait_for_function("window.twinConsole.video.frames > 0", timeout=WAIT_MS)
    assert await page.evaluate("window.twinConsole.video.error") == ""


def _header(message: bytes) -> tuple[int, int, int, int, int]:
    return struct.unpack(">IBBII", message[:14])


async def test_the_video_socket_sends_the_gateway_framing_and_refuses_in_the_control_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    twin = build(socket_settings())
    started = await start(twin, tmp_path)
    ws = started.url("control").replace("http://", "ws://")
    try:
        async with connect(f"{ws}/cameras/cam-01/video/main") as feed:
            config = await feed.recv()
            assert _header(config) == (0xFFD8FF00, 1, 1, 0, 0) and config[22] & 0x1F == 7  # SPS first
            twin.clock.advance(0.5)
            heads = [_header(await feed.recv()) for _ in range(15)]
        assert heads[0][1] == 0 and all(h[0] == 0xFFD8FF00 for h in heads)
        assert len(twin.journal) == 0  # watching from the console is not a client of the gateway
        for path, status, code in [
            ("/cameras/cam-09/video/main", 404, "not_found"),
            ("/cameras/cam-01/video/fourth", 404, "not_found"),
        ]:
            with pytest.raises(InvalidStatus) as refused:
                async with connect(ws + path):
                    pass
            assert refused.value.response.status_code == status
            assert f'"code":"{code}"' in refused.value.response.body.decode()
        twin.control.run_action("camera_restart", {"camera": "cam-01"})
        twin.clock.advance(5)
        with pytest.raises(InvalidStatus) as down:
            async with connect(f"{ws}/cameras/cam-01/video/main"):
                pass
        assert down.value.response.status_code == 503 and b"cam-01 is down" in down.value.response.body
    finally:
        await stop(started)


async def test_the_video_socket_closes_1012_when_the_world_is_rebuilt_and_the_new_one_plays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    twin = build(socket_settings())
    started = await start(twin, tmp_path)
    ws = started.url("control").replace("http://", "ws://")
    try:
        snapshot = twin.control.snapshot()
        for rebuild in (twin.control.reset, lambda: twin.control.restore(snapshot.id)):
            async with connect(f"{ws}/cameras/cam-01/video/sub") as feed:
                await feed.recv()
                twin.clock.advance(0.2)
                await feed.recv()
                rebuild()
                with pytest.raises(ConnectionClosed) as closed:
                    while True:
                        await asyncio.wait_for(feed.recv(), 30)
                assert closed.value.rcvd is not None
                assert (closed.value.rcvd.code, closed.value.rcvd.reason) == (1012, "the world was rebuilt")
            async with connect(f"{ws}/cameras/cam-01/video/sub") as feed:
                assert _header(await feed.recv())[1] == 1  # SPS/PPS of the new world's encoder
                twin.clock.advance(0.2)
                assert _header(await asyncio.wait_for(feed.recv(), 30))[0] == 0xFFD8FF00
    finally:
        await stop(started)
