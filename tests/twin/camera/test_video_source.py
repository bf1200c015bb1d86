"""Real video into a simulated camera: a clip (made here with PyAV) or another camera's RTSP stream as
a camera's source, read back over the live H.264 WebSocket with the camera's OSD drawn on it."""

from __future__ import annotations

import socket
from fractions import Fraction
from pathlib import Path

import av
import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect

from tests.sockets import socket_settings, until
from tests.twin.camera.test_video import decode
from twin.camera.video import stream as video_stream
from twin.camera.video.decoder import SourceError
from twin.fleet import VideoSpec
from twin.scenario.model import Cameras
from twin.serve import build, start, stop, world_config

pytestmark = pytest.mark.socket
TOP, BOTTOM_LEFT, BOTTOM_RIGHT = (128, 128, 128), (40, 200, 40), (200, 40, 200)  # BGR


def make_clip(path: Path, seconds: float = 2.0, fps: int = 10) -> Path:
    """320x240 H.264: gray on top, green and magenta halves below, a white square moving in the top."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
        stream.codec_context.time_base = Fraction(1, fps)
        for i in range(int(seconds * fps)):
            img = np.empty((240, 320, 3), np.uint8)
            img[:120], img[120:, :160], img[120:, 160:] = TOP, BOTTOM_LEFT, BOTTOM_RIGHT
            x = 40 + 10 * i
            img[60:100, x : x + 40] = 255
            frame = av.VideoFrame.from_ndarray(img, format="bgr24")
            frame.pts = i
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return path


async def login(base: str) -> str:
    async with httpx.AsyncClient() as http:
        answer = await http.post(base + "/api/login", json={"username": "admin", "password": "password"})
    return answer.json()["data"]["token"].removeprefix("Bearer ")


async def sub_picture(twin, base: str, token: str) -> np.ndarray:
    """One decoded picture of the camera's sub stream (BGR)."""
    async with connect(base.replace("http://", "ws://") + f"/api/v1/h264/sub?token={token}") as ws:
        config = await ws.recv()
        twin.clock.advance(0.2)
        messages = [await ws.recv() for _ in range(3)]
    frames = decode(config[18:], [m[18:] for m in messages])
    return frames[-1].to_ndarray(format="bgr24")


def near(region: np.ndarray, colour: tuple[int, int, int], tolerance: float = 25) -> bool:
    return bool(np.abs(region.reshape(-1, 3).mean(axis=0) - np.array(colour)).max() < tolerance)


async def test_a_clip_is_the_video_with_the_osd_drawn_on_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.25)  # sub: 320x180
    clip = make_clip(tmp_path / "bars.mp4")
    twin = build(socket_settings(video_sources=(f"cam-01={clip}",)))
    running = await start(twin, tmp_path)
    try:
        base = running.url("cam-01/http")
        token = await login(base)
        source = twin.gateways["cam-01"].media.source
        await until(lambda: source.decoder.latest()[0] > 0)
        picture = await sub_picture(twin, base, token)
        status = await _status(base, token)
    finally:
        await stop(running)
    assert picture.shape == (180, 320, 3)
    assert near(picture[110:170, 10:150], BOTTOM_LEFT) and near(picture[110:170, 170:310], BOTTOM_RIGHT)
    osd = picture[0:30, 0:150]  # the camera's name and clock, top left, over the clip's gray
    assert (np.abs(osd.astype(int) - TOP).max(axis=2) > 60).mean() > 0.005  # text and its outline
    assert status["sub"]["status"] == "active" and status["sub"]["status_detail"] == ""


async def _status(base: str, token: str) -> dict:
    async with httpx.AsyncClient() as http:
        answer = await http.get(base + "/api/v1/media/status", headers={"Authorization": f"Bearer {token}"})
    return {row["stream_id"]: row for row in answer.json()["data"]["streams"]}


def test_a_source_that_cannot_be_opened_fails_the_build_naming_camera_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mp4"
    with pytest.raises(SourceError, match=f"camera cam-01: video source {missing}: no such file"):
        build(socket_settings(video_sources=(str(missing),)))
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video")
    with pytest.raises(SourceError, match=f"camera cam-01: video source cannot open {junk}"):
        build(socket_settings(video_sources=(f"cam-01={junk}",)))


def test_video_source_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="the fleet has no camera 'cam-09'"):
        world_config(socket_settings(video_sources=("cam-09=rtsp://127.0.0.1/x",)))
    with pytest.raises(SourceError, match=r"'ftp://\*\*\*@host/x' is not a file"):
        world_config(socket_settings(video_sources=("ftp://user:secret@host/x",)))
    config, _, _ = world_config(socket_settings(video_sources=("rtsp://127.0.0.1:9/sub",)))
    assert dict(config.camera_specs())["cam-01"].video == VideoSpec("rtsp://127.0.0.1:9/sub")
    group = Cameras.model_validate({"count": 2, "video": {"source": "/dev/video0", "loop": False}})
    assert group.video is not None and group.video.spec() == VideoSpec("/dev/video0", False)
    with pytest.raises(ValueError, match="is not a file"):
        Cameras.model_validate({"video": {"source": "file:///etc/passwd"}})


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


async def test_another_cameras_rtsp_stream_as_the_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.25)
    port = _free_port("127.0.0.1")  # cam-01 serves RTSP there (port addressing)
    settings = socket_settings(
        rtsp_port=port, cameras=2, video_sources=(f"cam-02=rtsp://127.0.0.1:{port}/sub",)
    )
    twin = build(settings)
    running = await start(twin, tmp_path)
    try:
        source = twin.gateways["cam-02"].media.source
        assert twin.gateways["cam-01"].media.source is None
        # FFmpeg probes a few frames before it decodes: the paused clock moves a frame per poll.
        await until(lambda: twin.clock.advance(1 / 30) or source.decoder.latest()[0] > 0, attempts=1000)
        base = running.url("cam-02/http")
        picture = await sub_picture(twin, base, await login(base))
        scene = twin.gateways["cam-01"].media.render_now("sub")
    finally:
        await stop(running)
    lower = (slice(100, 180), slice(0, 320))  # the street, below either camera's OSD
    assert np.abs(picture[lower].astype(int) - scene[lower]).mean() < 20
