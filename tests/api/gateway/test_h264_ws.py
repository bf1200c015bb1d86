"""The live H.264 feed over a real socket: framing, refusals and the per-IP connection limit."""

from __future__ import annotations

import struct
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from api.gateway.routers import media as media_router
from hardware.ports.media import MediaFrame
from tests.sockets import socket_settings
from tests.twin.camera.test_video import decode
from twin.camera.video import stream as video_stream
from twin.camera.wing import cameras_of
from twin.serve import build, start, stop

pytestmark = pytest.mark.socket


def header(message: bytes) -> tuple[int, int, int, int, int, bytes]:
    return struct.unpack(">IBBII4s", message[:18])


@pytest.fixture
async def gateway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient() as http:
        login = await http.post(base + "/api/login", json={"username": "admin", "password": "password"})
        token = login.json()["data"]["token"].removeprefix("Bearer ")
    try:
        yield twin, base, token
    finally:
        await stop(running)


async def test_sps_pps_first_then_key_and_delta_frames_that_decode(gateway) -> None:
    twin, base, token = gateway
    ws_base = base.replace("http://", "ws://")
    async with connect(f"{ws_base}/api/v1/h264/main?token={token}") as ws:
        config = await ws.recv()
        magic, frame_type, flags, pts, dts, reserved = header(config)
        assert (magic, frame_type, flags, pts, dts, reserved) == (0xFFD8FF00, 1, 1, 0, 0, b"\0" * 4)
        assert config[22] & 0x1F == 7  # AVCC: length, then the SPS
        twin.clock.advance(1)
        messages = [await ws.recv() for _ in range(31)]
    heads = [header(m) for m in messages]
    assert all(h[0] == 0xFFD8FF00 and h[2] == 1 and h[5] == b"\0" * 4 for h in heads)
    assert heads[0][1] == 0 and heads[-1][1] == 1
    assert [h[3] for h in heads] == sorted(h[3] for h in heads) and all(h[3] == h[4] for h in heads)
    frames = decode(config[18:], [m[18:] for m in messages])
    assert len(frames) == 31 and (frames[0].width, frames[0].height) == (240, 134)
    async with httpx.AsyncClient() as http:
        status = await http.get(base + "/api/v1/media/status", headers={"Authorization": f"Bearer {token}"})
        refused = await http.get(base + "/api/v1/media/status")
    rows = status.json()["data"]["streams"]
    assert [r["stream_id"] for r in rows] == ["main", "sub", "third"]
    assert set(rows[0]) == {
        "stream_id", "status", "has_encoder", "codec", "width", "height", "fps", "bitrate_bps", "gop",
        "ms_since_last_frame", "measured_fps", "status_detail",
    }  # fmt: skip
    assert (
        rows[1]["status"] == "active" and rows[1]["ms_since_last_frame"] is not None and rows[0]["fps"] == 30
    )
    assert refused.status_code == 401


async def test_a_client_joining_while_the_clock_is_paused_gets_a_picture_at_once(gateway) -> None:
    """Step mode, the clock paused: a viewer already watches, so the stream is running and its next
    tick never comes; a new client still gets the SPS/PPS and a key frame of the current picture."""
    twin, base, token = gateway
    url = base.replace("http://", "ws://") + f"/api/v1/h264/main?token={token}"
    async with connect(url) as first:
        await first.recv(), await first.recv()
        twin.clock.advance(0.5)
        await twin.gateways["cam-01"].media.stream("main").settle()
        async with connect(url) as late:
            config, key = await late.recv(), await late.recv()
            assert header(key)[1] == 0 and header(key)[3] == video_stream.ticks_90k(twin.world.env.now)
            assert [(f.width, f.height) for f in decode(config[18:], [key[18:]])] == [(240, 134)]


async def test_paused_in_step_mode_the_main_stream_gives_a_full_size_picture_at_once(tmp_path: Path) -> None:
    """At full size (no test scaling), the clock in step mode and paused: the first viewer of
    /h264/main gets the SPS/PPS and a key frame that decodes to 1920x1080 (the SPS crops the 1088
    coded lines), without the clock moving."""
    twin = build(socket_settings())
    twin.clock.pause()
    running = await start(twin, tmp_path)
    try:
        base = running.url("cam-01/http")
        async with httpx.AsyncClient() as http:
            login = await http.post(base + "/api/login", json={"username": "admin", "password": "password"})
        token = login.json()["data"]["token"].removeprefix("Bearer ")
        url = base.replace("http://", "ws://") + f"/api/v1/h264/main?token={token}"
        async with connect(url, max_size=None) as ws:
            config, key = await ws.recv(), await ws.recv()
        assert header(config)[1] == 1 and header(key)[1] == 0 and twin.world.env.now == 0.0
        [frame] = decode(config[18:], [key[18:]])
        assert (frame.width, frame.height) == (1920, 1080)
        assert frame.to_ndarray(format="gray").std() > 20  # a picture, not a blank frame
    finally:
        await stop(running)


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [("main", 401, 2000), ("main..x?token={t}", 400, 1001), ("fourth?token={t}", 404, 4000)],
)
async def test_refusals_come_before_the_upgrade(gateway, path: str, status: int, code: int) -> None:
    _, base, token = gateway
    url = base.replace("http://", "ws://") + "/api/v1/h264/" + path.format(t=token)
    with pytest.raises(InvalidStatus) as info:
        async with connect(url):
            pass
    assert info.value.response.status_code == status
    assert f'"code":{code}' in info.value.response.body.decode()


async def test_a_sixth_connection_from_one_ip_replaces_the_oldest(gateway) -> None:
    _, base, token = gateway
    url = base.replace("http://", "ws://") + f"/api/v1/h264/third?token={token}"
    sockets = [await connect(url) for _ in range(5)]
    try:
        for ws in sockets:
            await ws.recv()
        sixth = await connect(url)
        sockets.append(sixth)
        await sixth.recv()
        with pytest.raises(ConnectionClosed) as info:
            while True:
                await sockets[0].recv()
        assert info.value.rcvd.code == 1008 and info.value.rcvd.reason == "Connection replaced"
        for ws in sockets[1:]:
            await ws.ping()
    finally:
        for ws in sockets:
            await ws.close()


async def test_a_stream_that_cannot_start_says_so_after_the_upgrade(gateway) -> None:
    twin, base, token = gateway
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        assert (await http.delete("/api/v1/media/streams/sub/disable")).status_code == 200
    url = base.replace("http://", "ws://") + f"/api/v1/h264/sub?token={token}"
    async with connect(url) as ws:
        assert await ws.recv() == '{"error": "Failed to start stream"}'
        with pytest.raises(ConnectionClosed):
            await ws.recv()
    cameras_of(twin.world)["cam-01"].ai.stop_camera_service()
    async with connect(url.replace("/sub?", "/main?")) as ws:
        assert "Failed to start stream" in await ws.recv()
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}) as http:
        rows = (await http.get("/api/v1/media/status")).json()["data"]["streams"]
    assert {r["status"] for r in rows} == {"unknown"} and {r["ms_since_last_frame"] for r in rows} == {None}


class _SlowSocket:
    """Records what the pump sends; each send moves a fake monotonic clock by ``cost``."""

    def __init__(self, costs: list[float]) -> None:
        self.now = 0.0
        self.costs = costs
        self.sent = 0
        self.closed: tuple[int, str] | None = None

    def clock(self) -> float:
        return self.now

    async def send_bytes(self, data: bytes) -> None:
        self.now += self.costs[self.sent % len(self.costs)]
        self.sent += 1

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class _Frames:
    async def next_frame(self) -> MediaFrame:
        return MediaFrame(False, 0, 0, b"\0\0\0\1\x41")


@pytest.mark.parametrize(
    ("costs", "sent"),
    [([0.06], 5), ([0.06, 0.06, 0.06, 0.06, 0.01, 0.06, 0.06, 0.06, 0.06, 0.06], 10)],
)
async def test_five_slow_writes_in_a_row_evict_the_client(costs: list[float], sent: int) -> None:
    ws = _SlowSocket(costs)
    await media_router._pump(ws, _Frames(), clock=ws.clock)  # type: ignore[arg-type]
    assert ws.sent == sent and ws.closed == (1008, "Client too slow")
