"""Each camera's RTSP server over real sockets: PyAV's FFmpeg (a real RTSP client) reads the streams
over TCP and UDP, ffprobe/ffmpeg where installed; a raw client checks the daemon's answers, RFC 6184
packets and a decodable picture with the clock paused; enabling, moving and disabling RTSP and
streams through the API; the fault layer's drops, hangs and latency; the UDP session timeout."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import shutil
import socket
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import av
import httpx
import pytest

from api.gateway.rtsp import rtp
from hardware.ports.media import MediaFrame
from tests.sockets import socket_settings, until
from tests.twin.camera.test_video import decode as pictures
from twin.camera.video import stream as video_stream
from twin.camera.video.encoder import to_avcc
from twin.camera.wing import cameras_of
from twin.serve import build, start, stop
from twin.settings import Settings

pytestmark = pytest.mark.socket
SCALE = 0.25  # main 480x270, sub 320x180 (third 160x96: a valid configuration document)


class Client:
    """A bare RTSP client: requests and answers, interleaved RTP, access units put back together."""

    def __init__(self, url: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.url, self.reader, self.writer = url, reader, writer
        self.cseq = 0
        self.next_ts = -1

    @classmethod
    async def open(cls, url: str) -> Client:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(url, reader, writer)

    async def request(self, method: str, uri: str | None = None, **headers: str) -> tuple[int, dict, bytes]:
        self.cseq += 1
        lines = [f"{method} {uri or self.url} RTSP/1.0", f"CSeq: {self.cseq}"]
        lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        return await self.answer()

    async def answer(self) -> tuple[int, dict, bytes]:
        while (await self.reader.readexactly(1)) == b"$":  # media before the answer
            size = struct.unpack(">xH", await self.reader.readexactly(3))[0]
            await self.reader.readexactly(size)
        head = ("R" + (await self.reader.readuntil(b"\r\n\r\n")).decode()).split("\r\n")
        fields = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
        body = await self.reader.readexactly(int(fields.get("Content-Length", 0)))
        assert fields["CSeq"] == str(self.cseq)
        return int(head[0].split()[1]), fields, body

    async def setup(self, transport: str | None = None, uri: str | None = None) -> tuple[int, dict, bytes]:
        headers = {"Transport": transport} if transport else {}
        return await self.request("SETUP", (uri or self.url) + "/trackID=0", **headers)

    async def play(self, stream: str = "main") -> bytes:
        """DESCRIBE, SETUP (TCP), PLAY; returns the SPS/PPS of the SDP as AVCC."""
        status, fields, sdp = await self.request("DESCRIBE", Accept="application/sdp")
        assert status == 200 and fields["Content-Base"] == self.url + "/"
        fmtp = next(line for line in sdp.decode().split("\r\n") if line.startswith("a=fmtp:96"))
        sprop = fmtp.split("sprop-parameter-sets=")[1].split(";")[0]
        status, fields, _ = await self.setup("RTP/AVP/TCP;unicast;interleaved=0-1")
        assert status == 200
        self.session = fields["Session"].split(";")[0]
        status, fields, _ = await self.request("PLAY", self.url + "/", Session=self.session)
        assert status == 200 and fields["RTP-Info"] == f"url={self.url}//trackID=0;seq=0"
        return to_avcc([base64.b64decode(p) for p in sprop.split(",")])

    async def packet(self) -> bytes:
        assert await self.reader.readexactly(1) == b"$"
        channel, size = struct.unpack(">BH", await self.reader.readexactly(3))
        assert channel == 0
        return await self.reader.readexactly(size)

    async def access_unit(self) -> tuple[int, int, bytes]:
        """(RTP timestamp, packets, AVCC) of the next access unit (up to the marker bit), and the
        delimiter that follows it at once (the next access unit's first NAL unit, not counted)."""
        nals: list[bytearray] = []
        count = 0
        while True:
            packet = await self.packet()
            count += 1
            ts, payload = struct.unpack(">I", packet[4:8])[0], packet[12:]
            assert packet[0] == 0x80 and packet[1] & 0x7F == 96 and len(payload) <= rtp.RTP_MTU
            if payload[0] & 0x1F == rtp.FU_A:
                if payload[1] & 0x80:
                    nals.append(bytearray([payload[0] & 0xE0 | payload[1] & 0x1F]))
                nals[-1] += payload[2:]
            else:
                nals.append(bytearray(payload))
            if packet[1] & 0x80:
                delimiter = await self.packet()
                assert delimiter[12:] == rtp.AUD and delimiter[1] == 96  # no marker: it opens the next
                self.next_ts = struct.unpack(">I", delimiter[4:8])[0]
                return ts, count, to_avcc([bytes(n) for n in nals])

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
async def camera(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", getattr(request, "param", SCALE))
    twin = build(socket_settings(rtsp_udp=True))
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient(base_url=base) as http:
        login = await http.post("/api/login", json={"username": "admin", "password": "password"})
        http.headers["Authorization"] = login.json()["data"]["token"]
        try:
            yield twin, twin.rtsp["cam-01"], http
        finally:
            await stop(running)


async def while_time_moves(twin, job, step: float = 1 / 30, limit: int = 1500):
    """Run ``job`` (blocking, in a thread) while the paused world clock is advanced a frame at a
    time between polls, as a step-mode client's wait would move it; its result."""
    task = asyncio.ensure_future(asyncio.to_thread(job))
    for _ in range(limit):
        if task.done():
            return task.result()
        twin.clock.advance(step)
        await asyncio.sleep(0.02)
    task.cancel()
    raise AssertionError("the client did not finish")


def read_with_pyav(url: str, transport: str, count: int) -> list[tuple[int, int]]:
    options = {"rtsp_transport": transport, "timeout": "10000000"}
    with av.open(url, options=options, timeout=10) as container:
        sizes = []
        for frame in container.decode(video=0):
            sizes.append((frame.width, frame.height))
            if len(sizes) == count:
                return sizes
    return sizes


@pytest.mark.parametrize("transport", ["tcp", "udp"])
async def test_pyav_reads_the_sub_stream_over_tcp_and_udp(camera, transport: str) -> None:
    twin, server, http = camera
    sizes = await while_time_moves(twin, lambda: read_with_pyav(server.url("sub"), transport, 20))
    assert sizes == [(320, 180)] * 20
    rows = (await http.get("/api/v1/media/status")).json()["data"]["streams"]
    assert rows[1]["stream_id"] == "sub"
    kinds = [(e.method, e.route, e.status) for e in twin.journal.entries if e.server == "cam-01"]
    assert ("DESCRIBE", "rtsp:/sub", 200) in kinds and ("SETUP", "rtsp:/sub", 200) in kinds


async def test_a_client_of_the_paused_clock_gets_a_decodable_picture_at_once(camera) -> None:
    twin, server, _ = camera
    client = await Client.open(server.url("main"))
    try:
        status, fields, _ = await client.request("OPTIONS")
        assert (status, fields["Public"]) == (200, "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER")
        parameter_sets = await client.play()
        ts, _, unit = await client.access_unit()  # the clock never moves
        assert ts == 0 and client.next_ts == 3000  # its delimiter ends it for a client at once
        (picture,) = pictures(parameter_sets, [unit])
        assert (picture.width, picture.height, picture.key_frame) == (480, 270, True)
        status, fields, _ = await client.request("GET_PARAMETER", Session=client.session)
        assert (status, fields["Session"]) == (200, client.session)
        twin.clock.advance(1)
        units = await world_units(client, 30)  # the picture repeated meanwhile left out
        pts = [round(k / 30 * 1e9) // 11111 for k in range(1, 31)]
        assert [t - units[0][0] for t, _, _ in units] == [p - pts[0] for p in pts]
        assert len(pictures(parameter_sets, [unit] + [u for _, _, u in units])) == 31
        assert (await client.request("TEARDOWN", Session=client.session))[0] == 200
        assert await client.reader.read() == b""  # the daemon closes the connection after TEARDOWN
    finally:
        client.close()


def repeated(unit: bytes) -> bool:
    """A skipped, non-reference P frame: the picture repeated while the world stands still."""
    return unit[4] == 0x01 and len(unit) < 20


async def world_units(client: Client, count: int) -> list[tuple[int, int, bytes]]:
    units: list[tuple[int, int, bytes]] = []
    while len(units) < count:
        unit = await client.access_unit()
        if not repeated(unit[2]):
            units.append(unit)
    return units


def test_large_nal_units_are_cut_into_fu_a_fragments() -> None:
    nal = bytes([0x65]) + bytes(range(256)) * 12  # an IDR slice of 3073 bytes
    stream = rtp.RtpStream(ssrc=0x1234, seq=65535, base=None)
    first = stream.packets(MediaFrame(True, 1000, 1000, to_avcc([b"\x67abc", nal])))
    assert len(first) == 1 + 3 + 1 and stream.seq == 4  # the SPS whole, the slice in three; seq wraps
    assert [p[12] for p in first[1:4]] == [0x7C] * 3 and [p[13] for p in first[1:4]] == [0x85, 0x05, 0x45]
    assert b"".join(p[14:] for p in first[1:4]) == nal[1:] and max(len(p) - 12 for p in first) == rtp.RTP_MTU
    assert [p[1] >> 7 for p in first] == [0, 0, 0, 1, 0]  # the marker on the access unit's last packet
    assert first[4][12:] == rtp.AUD and struct.unpack(">I", first[4][4:8])[0] == 3000  # then the next's AUD
    second = stream.packets(MediaFrame(False, 4000, 4000, to_avcc([b"\x41xyz"])))
    assert struct.unpack(">HII", second[0][2:12]) == (4, 3000, 0x1234)
    assert struct.unpack(">HI", second[1][2:8]) == (5, 6000)  # dated a frame interval on
    third = stream.packets(MediaFrame(False, 5500, 5500, to_avcc([b"\x41xyz"])))
    assert struct.unpack(">I", third[1][4:8])[0] == 4500 + 1500  # the last interval


async def test_the_daemons_answers_to_bad_requests(camera) -> None:
    _, server, http = camera
    client = await Client.open(server.url("fourth"))
    try:
        assert (await client.request("DESCRIBE"))[0] == 404
        assert (await client.request("SETUP", server.url("main") + "/trackID=0"))[0] == 461  # no Transport
        multicast = "RTP/AVP;multicast;client_port=5000-5001"
        assert (await client.request("SETUP", server.url("main") + "/trackID=0", Transport=multicast))[
            0
        ] == 461
        assert (await client.request("PLAY", server.url("main")))[0] == 455
        assert (await client.request("PAUSE", server.url("main")))[0] == 405
        client.writer.write(b"nonsense\r\n\r\n")  # ignored, as the daemon does
        status, fields, _ = await client.request("GET_PARAMETER", server.url("main"))
        assert (status, fields["Session"]) == (200, "")
        assert (await http.delete("/api/v1/media/streams/sub/disable")).status_code == 200
        assert (await client.request("DESCRIBE", server.url("sub")))[0] == 404
        client.writer.write(b"OPTIONS " + b"x" * 20_000)  # no end of headers in sight: dropped
        assert await client.reader.read() == b""
    finally:
        client.close()
    tcp_only = await Client.open(server.url("main"))
    server.udp = False  # as the device (the default): UDP refused, clients fall back to TCP
    transport = "RTP/AVP;unicast;client_port=5000-5001"
    try:
        assert (await tcp_only.request("SETUP", server.url("main") + "/trackID=0", Transport=transport))[
            0
        ] == 461
    finally:
        tcp_only.close()
    assert Settings().rtsp_udp is False


async def test_rtsp_and_streams_follow_the_media_configuration(camera) -> None:
    twin, server, http = camera
    config = (await http.get("/api/v1/media/config")).json()["data"]
    assert config["rtsp"] == {"enabled": True, "port": server.port} and server.serving
    client = await Client.open(server.url("sub"))
    await client.play("sub")
    await client.access_unit()
    assert (await http.delete("/api/v1/media/streams/sub/disable")).status_code == 200
    assert await client.reader.read() == b""  # the stream went away with its session
    client.close()

    assert (await http.put("/api/v1/media/rtsp", json={"enabled": False})).status_code == 200
    assert not server.serving
    with pytest.raises(OSError):
        await Client.open(server.url("main"))
    assert (await http.put("/api/v1/media/rtsp", json={"enabled": True})).status_code == 200
    (await Client.open(server.url("main"))).close()

    def port_field(port: int) -> dict:
        return {"field_path": "rtsp.port", "type": 2, "value": str(port)}

    old = server.port
    with socket_bound_elsewhere() as port:
        moved = await http.put("/api/v1/media/config/field", json=port_field(port))
        assert moved.status_code == 200 and not server.serving  # taken: RTSP stays down, as on the daemon
    assert (await http.put("/api/v1/media/config/field", json=port_field(port))).status_code == 200
    assert server.serving and server.port == port != old
    (await Client.open(server.url("main"))).close()
    assert (await http.get("/api/v1/media/config")).json()["data"]["rtsp"]["port"] == port

    cameras_of(twin.world)["cam-01"].power.restart(delay=0)
    twin.clock.advance(0.1)
    await until(lambda: not server.serving)
    twin.clock.advance(60)
    await until(lambda: server.serving)


@contextlib.contextmanager
def socket_bound_elsewhere() -> Iterator[int]:
    """A listening socket on a free loopback port, for the length of a ``with``."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock.getsockname()[1]


async def test_the_fault_layer_drops_stalls_and_delays_rtsp(camera) -> None:
    twin, server, _ = camera
    faults = twin.faults["cam-01"]
    client = await Client.open(server.url("main"))
    await client.play()
    await client.access_unit()
    assert faults.drop_streams(at=twin.world.env.now) == 1
    assert await client.reader.read() == b""
    client.close()
    dropped = [e for e in twin.journal.entries if e.method == "PLAY"]
    assert [(e.route, e.fault, e.stream) for e in dropped] == [("rtsp:/main", "dropped", True)]

    client = await Client.open(server.url("main"))
    await client.play()
    await client.access_unit()
    faults.hang = True
    twin.clock.advance(1)
    client.writer.write(f"GET_PARAMETER {client.url} RTSP/1.0\r\nCSeq: 9\r\n\r\n".encode())
    await until(lambda: twin.clock.waiting)  # the request waits for the hang to lift
    await twin.gateways["cam-01"].media.stream("main").settle()
    (connection,) = server.connections
    assert connection.session.viewer.pending() >= 29  # the session stalls: its frames wait
    faults.hang = False
    twin.clock.advance(1)
    data = await client.reader.read()
    assert b"RTSP/1.0" not in data  # no answer, then the connection closed
    client.close()

    faults.add_latency(2.0)
    client = await Client.open(server.url("main"))
    answer = asyncio.ensure_future(client.request("OPTIONS"))
    await until(lambda: twin.clock.waiting)
    assert not answer.done()
    twin.clock.advance(2)
    assert (await answer)[0] == 200
    client.close()


async def test_a_silent_udp_session_ends_after_its_timeout(camera) -> None:
    _, server, _ = camera
    now = [0.0]
    server.clock = lambda: now[0]
    client = await Client.open(server.url("main"))
    try:
        await client.request("DESCRIBE")
        transport = "RTP/AVP;unicast;client_port=5000-5001"
        status, fields, _ = await client.request(
            "SETUP", server.url("main") + "/trackID=0", Transport=transport
        )
        assert status == 200 and fields["Session"].endswith(";timeout=60")
        assert fields["Transport"].startswith("RTP/AVP;unicast;client_port=5000-5001;server_port=")
        now[0] = 59.0
        await client.request("GET_PARAMETER", Session=fields["Session"].split(";")[0])  # keep-alive
        now[0] = 118.0
        assert server.reap() == 0
        now[0] = 120.0
        assert server.reap() == 1
        assert await client.reader.read() == b""
    finally:
        client.close()


@pytest.fixture(scope="session")
def ffmpeg_tools() -> tuple[str, str]:
    """Debian's ffprobe and ffmpeg, installed here when missing and this is root with apt-get (as on
    CI); skipped, saying why, only where they cannot be installed."""
    if shutil.which("ffprobe") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "ffmpeg"]
        for command in (["apt-get", "update"], install):
            subprocess.run(command, env=env, capture_output=True, timeout=900, check=False)
    probe, mpeg = shutil.which("ffprobe"), shutil.which("ffmpeg")
    if probe is None or mpeg is None:
        pytest.skip("ffprobe/ffmpeg are missing and cannot be installed here (Debian's `ffmpeg` needs root)")
    return probe, mpeg


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.timeout(1200)  # the first use may install FFmpeg
@pytest.mark.parametrize("camera", [1.0], indirect=True)
async def test_ffprobe_sees_the_main_stream_at_1920x1080(camera, ffmpeg_tools) -> None:
    twin, server, _ = camera
    ffprobe, _ = ffmpeg_tools
    command = [
        ffprobe,
        "-v",
        "error",
        "-rtsp_transport",
        "tcp",
        "-show_entries",
        "stream=codec_name,width,height",
    ]
    probe = await while_time_moves(twin, lambda: run([*command, "-of", "csv=p=0", server.url("main")]))
    assert probe.returncode == 0 and probe.stdout.split() == ["h264,1920,1080"], probe.stderr


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("transport", ["tcp", "udp"])
async def test_ffmpeg_reads_50_frames_of_the_sub_stream(camera, ffmpeg_tools, transport: str) -> None:
    twin, server, _ = camera
    _, ffmpeg = ffmpeg_tools
    command = [ffmpeg, "-v", "error", "-rtsp_transport", transport, "-i", server.url("sub")]
    done = await while_time_moves(twin, lambda: run([*command, "-frames:v", "50", "-f", "null", "-"]))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def first_picture_with_default_options(url: str) -> tuple[int, int]:
    """What a stock client does: ``av.open`` with FFmpeg's default probing, then the first frame."""
    with av.open(url, timeout=60) as container:
        frame = next(container.decode(video=0))
        return frame.width, frame.height


@pytest.mark.parametrize("camera", [1.0], indirect=True)
async def test_a_stock_client_of_the_paused_clock_gets_the_picture_repeated(camera) -> None:
    twin, server, _ = camera
    at = twin.clock.now()
    size = await asyncio.to_thread(first_picture_with_default_options, server.url("main"))
    assert size == (1920, 1080)
    assert twin.clock.now() == at  # transport time only: the world never moved


async def test_repeated_pictures_are_skipped_frames_then_the_world_takes_over(camera) -> None:
    twin, server, _ = camera
    client = await Client.open(server.url("main"))
    try:
        parameter_sets = await client.play()
        units = [await client.access_unit() for _ in range(4)]  # the join picture, then repeats
        assert [t for t, _, _ in units] == [0, 3000, 6000, 9000]
        assert all(repeated(u) for _, _, u in units[1:])  # non-reference P frames, every macroblock skipped
        pictures_paused = pictures(parameter_sets, [u for _, _, u in units])
        assert len(pictures_paused) == 4
        assert all((p.to_ndarray() == pictures_paused[0].to_ndarray()).all() for p in pictures_paused)
        twin.clock.advance(0.5)
        world = await world_units(client, 15)
        stamps = [t for t, _, _ in world]
        assert all(b - a >= 3000 for a, b in itertools.pairwise(stamps))  # RTP time never goes back
        assert stamps[0] > units[-1][0]
        session = next(c.session for c in server.connections if c.session is not None)
        assert session.repeats >= 3
    finally:
        client.close()


def test_a_skipped_picture_repeats_the_last_and_leaves_the_encoders_references_alone() -> None:
    import numpy as np

    from api.gateway.rtsp import repeat
    from twin.camera.video.encoder import H264Encoder

    encoder = H264Encoder(320, 176, 30, 500_000, 30)
    rng = np.random.default_rng(7)
    images = [rng.integers(0, 255, (22, 40, 3), dtype=np.uint8).repeat(8, 0).repeat(8, 1) for _ in range(4)]
    head = [encoder.encode(image)[0].avcc for image in images[:2]]
    stx = repeat.syntax(encoder.sps or b"", encoder.pps or b"")
    assert stx is not None and stx.mbs == 20 * 11 and stx.poc_type == 2
    last_ref = repeat.reference(rtp.nal_units(head[1])[0], stx)
    assert last_ref == (1, 0)
    skip = to_avcc([repeat.skip_frame(stx, last_ref)])
    tail = [encoder.encode(image)[0].avcc for image in images[2:]]
    parameter_sets = encoder.parameter_sets()
    with_skips = pictures(parameter_sets, [*head, skip, skip, skip, *tail])
    without = pictures(parameter_sets, [*head, *tail])
    assert len(with_skips) == 7
    assert all((p.to_ndarray() == with_skips[1].to_ndarray()).all() for p in with_skips[2:5])
    assert [p.to_ndarray().tobytes() for p in with_skips[5:]] == [
        p.to_ndarray().tobytes() for p in without[2:]
    ]
    cabac = bytes((0x68, 0b11100000))  # pps_id 0, sps_id 0, entropy_coding_mode_flag 1
    assert repeat.syntax(encoder.sps or b"", cabac) is None  # not followed: nothing is repeated
    assert repeat.syntax(b"\x67", b"\x68") is None  # truncated parameter sets
