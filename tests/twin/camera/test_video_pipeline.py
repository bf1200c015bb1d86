"""The live feed shows what the device does: decoded with PyAV from the real WebSocket, frames have
the configured size; defocus blurs them and an autofocus one-shot makes them sharp again; privacy
masks are black, night mode is grayscale, OSD text changes the pixels where it is drawn."""

from __future__ import annotations

import struct
from pathlib import Path

import av
import cv2
import httpx
import numpy as np
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.sockets import socket_settings
from twin.camera.video import stream as video_stream
from twin.camera.video.encoder import avcc_to_annexb
from twin.serve import Twin, build, start, stop

pytestmark = pytest.mark.socket
SCALE = 0.25  # main 480x270, sub 320x180


class Feed:
    """One WebSocket viewer and its decoder; :meth:`advance` moves world time and decodes every
    frame the stream encoded meanwhile."""

    def __init__(self, twin: Twin, ws: ClientConnection, stream_id: str) -> None:
        self.twin = twin
        self.ws = ws
        self.stream = twin.gateways["cam-01"].media.stream(stream_id)
        self.codec = av.CodecContext.create("h264", "r")
        self.parameter_sets = b""
        self.last: np.ndarray | None = None
        self.last_yuv: np.ndarray | None = None
        self.sizes: set[tuple[int, int]] = set()
        self.pts = -1

    async def open(self) -> None:
        config = await self.ws.recv()
        assert struct.unpack(">I", config[:4])[0] == 0xFFD8FF00
        self.parameter_sets = config[18:]
        await self.stream.settle()
        await self._drain()

    async def advance(self, seconds: float, chunk: float = 0.5) -> None:
        done = 0.0
        while done < seconds - 1e-9:
            step = min(chunk, seconds - done)
            self.twin.clock.advance(step)
            done += step
            await self.stream.settle()
            await self._drain()

    async def _drain(self) -> None:
        """Receive up to the stream's latest frame (its PTS), decoding each one."""
        if self.stream.last_frame_at is None:
            return
        last = video_stream.ticks_90k(self.stream.last_frame_at)
        while self.pts != last:
            message = await self.ws.recv(decode=False)
            self.pts = struct.unpack(">I", message[6:10])[0]
            self._decode(message[18:])

    def _decode(self, payload: bytes) -> None:
        if self.parameter_sets:
            payload, self.parameter_sets = self.parameter_sets + payload, b""
        for frame in self.codec.decode(av.Packet(avcc_to_annexb(payload))):
            self.sizes.add((frame.width, frame.height))
            self.last = frame.to_ndarray(format="bgr24")
            self.last_yuv = frame.to_ndarray(format="yuv420p")


def sharpness(img: np.ndarray) -> float:
    """Variance of the Laplacian below the OSD lines and above the tallest passing truck: the houses
    across the street, which stay put while people and vehicles come and go."""
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    h = gray.shape[0]
    return float(cv2.Laplacian(gray[int(0.12 * h) : int(0.33 * h)], cv2.CV_64F).var())


@pytest.fixture
async def feed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", SCALE)
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient(base_url=base) as http:
        login = await http.post("/api/login", json={"username": "admin", "password": "password"})
        token = login.json()["data"]["token"].removeprefix("Bearer ")
        http.headers["Authorization"] = f"Bearer {token}"
        ws_url = base.replace("http://", "ws://") + f"/api/v1/h264/main?token={token}"
        try:
            async with connect(ws_url, max_size=None) as ws:
                feed = Feed(twin, ws, "main")
                await feed.open()
                yield feed, http
        finally:
            await stop(running)


async def test_frames_decode_at_the_configured_size_defocus_blurs_and_autofocus_restores(feed) -> None:
    feed, http = feed
    await feed.advance(1.0)
    assert feed.sizes == {(480, 270)}
    assert feed.last is not None
    sharp = sharpness(feed.last)

    resp = await http.put("/api/v1/device/lens/focus-level", json={"level": 0.0})
    assert resp.status_code == 200 and resp.json()["data"]["success"] is True
    await feed.advance(2.0)
    status = (await http.get("/api/v1/device/lens/status")).json()["data"]
    assert status["focus_pos"] == 0 and status["focus_state"] == 1
    blurred = sharpness(feed.last)
    assert blurred < 0.5 * sharp

    job = (await http.post("/api/v1/device/lens/oneshot-af")).json()["data"]
    assert job["accepted"] is True and job["job_id"]
    await feed.advance(0.5)
    running = (await http.get("/api/v1/device/lens/af/status")).json()["data"]
    assert running["busy"] is True and running["state"] in ("coarse", "fine") and 0 < running["progress"] < 1
    await feed.advance(8.0)
    done = (await http.get("/api/v1/device/lens/af/status")).json()["data"]
    assert done["state"] == "completed" and done["busy"] is False and done["progress"] == 1.0
    assert done["job_id"] == job["job_id"] and done["confidence"] > 0.9
    restored = sharpness(feed.last)
    assert restored > 0.85 * sharp
    assert feed.sizes == {(480, 270)}


async def test_privacy_mask_black_night_gray_and_osd_text_drawn(feed) -> None:
    feed, http = feed
    day = await http.post("/api/v1/device/ir-cut", json={"mode": "day"})
    assert day.status_code == 200
    await feed.advance(0.5)
    u, v = _chroma(feed.last_yuv)
    assert max(u.std(), v.std()) > 3  # colour by day

    night = await http.post("/api/v1/device/ir-cut", json={"mode": "night"})
    assert night.status_code == 200
    await feed.advance(0.5)
    u, v = _chroma(feed.last_yuv)
    assert abs(u.astype(int) - 128).max() <= 3 and abs(v.astype(int) - 128).max() <= 3  # grayscale

    await http.post("/api/v1/device/ir-cut", json={"mode": "day"})
    assert (await http.post("/api/v1/device/light", json={"level": 100})).status_code == 200  # it is midnight
    door = {"points_x": [0.5, 0.8, 0.8, 0.5], "points_y": [0.4, 0.4, 0.8, 0.8]}
    mask = {"enabled": True, "regions": [{"id": "door", "enabled": True, **door}]}
    resp = await http.put("/api/v1/media/privacy-mask", json=mask)
    assert resp.status_code == 200, resp.text
    await feed.advance(0.5)
    inside = feed.last[int(0.4 * 270) + 4 : int(0.8 * 270) - 4, int(0.5 * 480) + 4 : int(0.8 * 480) - 4]
    assert inside.max() <= 12  # black (codec noise only)
    outside = feed.last[int(0.4 * 270) :, : int(0.5 * 480) - 8]
    assert outside.mean() > 40

    region = (slice(int(0.82 * 270), int(0.97 * 270)), slice(int(0.05 * 480), int(0.45 * 480)))
    before = feed.last[region].copy()
    osd = {
        "streams": [
            {
                "stream_name": "main",
                "text_overlays": [
                    {
                        "id": "t1",
                        "text": "GATE 7",
                        "x": 0.05,
                        "y": 0.82,
                        "font_size": 110,
                        "text_color": 0xFF00FF,
                        "enabled": True,
                    }
                ],
            }
        ]
    }
    assert (await http.put("/api/v1/media/osd", json=osd)).status_code == 200
    await feed.advance(0.5)
    after = feed.last[region]
    magenta = (after[:, :, 2].astype(int) > 180) & (after[:, :, 1].astype(int) < 90) & (after[:, :, 0] > 180)
    magenta_before = (before[:, :, 2] > 180) & (before[:, :, 1] < 90) & (before[:, :, 0] > 180)
    assert magenta.sum() > 100 and magenta_before.sum() == 0
    got = (await http.get("/api/v1/media/osd")).json()["data"]["streams"]
    assert got[0]["text_overlays"][0]["text"] == "GATE 7"


def _chroma(yuv: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The U and V planes of a decoded yuv420p frame (PyAV stacks them under Y)."""
    assert yuv is not None
    h = yuv.shape[0] * 2 // 3
    w = yuv.shape[1]
    chroma = yuv[h:].reshape(-1)
    half = chroma.size // 2
    return chroma[:half].reshape(h // 2, w // 2), chroma[half:].reshape(h // 2, w // 2)
