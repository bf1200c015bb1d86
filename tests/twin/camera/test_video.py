"""Scene, renderer, encoder and streams of the synthetic video, without HTTP."""

from __future__ import annotations

import itertools

import av
import numpy as np
import pytest

from hardware.ports.camera_hw import AiOverlay
from hardware.ports.errors import NotFound
from hardware.ports.events import EventKind
from hardware.ports.types import ClockMode
from twin.camera.detections import MISS_RATE, Detector
from twin.camera.video import stream as video_stream
from twin.camera.video.backend import CameraMedia
from twin.camera.video.encoder import H264Encoder, avcc_to_annexb
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import Scene
from twin.camera.wing import cameras_of
from twin.clock import SimClock
from twin.fleet import CameraSpec, WorldConfig
from twin.wings import KINDS
from twin.world import World


def decode(parameter_sets: bytes, payloads: list[bytes]) -> list[av.VideoFrame]:
    """Decode AVCC access units; the SPS/PPS go in front of the first one (a lone SPS/PPS packet
    is refused by FFmpeg's decoder, a remuxer would put them in the avcC box)."""
    ctx = av.CodecContext.create("h264", "r")
    frames = []
    payloads = [parameter_sets + payloads[0], *payloads[1:]]
    for payload in payloads:
        frames.extend(ctx.decode(av.Packet(avcc_to_annexb(payload))))
    return frames


class _Bits:
    """An H.264 RBSP read bit by bit, with Exp-Golomb codes (ITU-T H.264 §7.2, §9.1)."""

    def __init__(self, nal: bytes) -> None:
        rbsp, zeros = bytearray(), 0
        for b in nal[1:]:  # drop emulation-prevention bytes (00 00 03)
            if zeros >= 2 and b == 3:
                zeros = 0
                continue
            rbsp.append(b)
            zeros = zeros + 1 if b == 0 else 0
        self.data, self.pos = bytes(rbsp), 0

    def u(self, n: int) -> int:
        v = 0
        for _ in range(n):
            v = (v << 1) | (self.data[self.pos >> 3] >> (7 - (self.pos & 7))) & 1
            self.pos += 1
        return v

    def ue(self) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)


def sps_size(sps: bytes) -> tuple[tuple[int, int], tuple[int, int, int, int] | None]:
    """The coded size (whole macroblocks) and the frame cropping offsets of a 4:2:0 SPS (None
    when it carries no cropping): what a decoder reports is the coded size less 2x the offsets."""
    r = _Bits(sps)
    profile = r.u(8)
    r.u(16)  # constraint flags, level
    r.ue()  # seq_parameter_set_id
    if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
        assert r.ue() == 1, "4:2:0 only"
        r.ue(), r.ue(), r.u(1)  # bit depths, transform bypass
        assert r.u(1) == 0, "no scaling matrices"
    r.ue()  # log2_max_frame_num_minus4
    poc = r.ue()
    if poc == 0:
        r.ue()
    elif poc == 1:
        r.u(1), r.se(), r.se()
        for _ in range(r.ue()):
            r.se()
    r.ue(), r.u(1)  # max_num_ref_frames, gaps allowed
    width, height = (r.ue() + 1) * 16, (r.ue() + 1) * 16
    frames_only = r.u(1)
    if not frames_only:
        r.u(1)
        height *= 2
    r.u(1)  # direct_8x8_inference
    crop = (r.ue(), r.ue(), r.ue(), r.ue()) if r.u(1) else None
    return (width, height), crop


@pytest.mark.parametrize(
    ("width", "height", "coded"), [(1920, 1080, 1088), (1280, 720, 720), (640, 384, 384)]
)
def test_the_sps_crops_coded_macroblock_rows_to_the_configured_size(
    width: int, height: int, coded: int
) -> None:
    """1080 lines are coded as 68 macroblock rows (1088): the SPS crops the 8 extra lines so decoders
    report 1920x1080 (a full-size encoder, two frames)."""
    enc = H264Encoder(width, height, 30, 4_000_000, 30)
    renderer = Renderer(Scene(1), width, height, "cam-01")
    units = [u for t in (0.0, 1 / 30) for u in enc.encode(renderer.render(t, View(t)))]
    (coded_w, coded_h), crop = sps_size(enc.sps)
    assert (coded_w, coded_h) == (width, coded)
    left, right, top, bottom = crop or (0, 0, 0, 0)
    assert (coded_w - 2 * (left + right), coded_h - 2 * (top + bottom)) == (width, height)
    assert (crop is not None) == (coded != height)
    frames = decode(enc.parameter_sets(), [u.avcc for u in units])
    assert [(f.width, f.height) for f in frames] == [(width, height)] * 2


def test_same_seed_and_time_give_identical_frames_and_time_moves_objects() -> None:
    view = View(1_767_225_603.0, "cam-01")
    a = Renderer(Scene(42), 160, 96, "cam-01").render(3.0, view)
    b = Renderer(Scene(42), 160, 96, "cam-01").render(3.0, view)
    assert a.shape == (96, 160, 3) and a.dtype == np.uint8
    assert a.tobytes() == b.tobytes()
    assert Scene(42).boxes(0.0) != Scene(42).boxes(5.0)
    assert Scene(42).boxes(0.0) != Scene(43).boxes(0.0)
    for box in Scene(42).boxes(123.4):
        assert 0 <= box.x <= 1 - box.w and 0 <= box.y <= 1 - box.h


def test_encoder_output_is_avcc_and_decodes_to_the_configured_size() -> None:
    enc = H264Encoder(160, 96, 30, 200_000, 10)
    renderer = Renderer(Scene(1), 160, 96, "cam-01")
    units = []
    for i in range(25):
        if i == 15:
            enc.request_keyframe()
        units.extend(enc.encode(renderer.render(i / 30, View(i / 30))))
    assert [i for i, u in enumerate(units) if u.key] == [0, 10, 15]
    for unit in units:  # AVCC: length prefixes walk the payload exactly, no start codes
        i = 0
        while i < len(unit.avcc):
            i += 4 + int.from_bytes(unit.avcc[i : i + 4], "big")
        assert i == len(unit.avcc)
        assert not unit.avcc.startswith(b"\x00\x00\x00\x01")
    assert enc.sps and enc.sps[0] & 0x1F == 7 and enc.pps and enc.pps[0] & 0x1F == 8
    frames = decode(enc.parameter_sets(), [u.avcc for u in units])
    assert len(frames) == 25
    assert {(f.width, f.height) for f in frames} == {(160, 96)}


@pytest.fixture
def media(monkeypatch: pytest.MonkeyPatch) -> tuple[CameraMedia, SimClock]:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    world = World(WorldConfig(seed=3, cameras=CameraSpec(1)), kinds=KINDS)
    clock = SimClock(world, mode=ClockMode.STEP)
    return CameraMedia(world, clock, "cam-01"), clock


async def test_frames_come_only_while_watched_and_only_as_world_time_moves(media) -> None:
    gm, clock = media
    assert [s.stream_id for s in gm.streams()] == ["main", "sub", "third"]
    assert gm.streams()[0].width == 240
    clock.advance(1)
    status = {s.config.stream_id: s for s in gm.status()}
    assert status["main"].status == "active" and status["main"].ms_since_last_frame is not None
    viewer = gm.open_viewer("main")
    await viewer.stream.primed()
    assert viewer.config_frame().payload and viewer.config_frame().pts == 0
    first = await viewer.next_frame()
    assert first.key and viewer.pending() == 0
    clock.advance(1)
    await gm.stream("main").settle()
    assert viewer.pending() == 30
    frames = [await viewer.next_frame() for _ in range(30)]
    assert all(b.pts > a.pts for a, b in itertools.pairwise(frames))
    assert frames[0].pts == round(1 / 30 * 1e9) // 11111 + 90_000
    assert len(decode(viewer.config_frame().payload, [first.payload] + [f.payload for f in frames])) == 31
    main = gm.status()[0]
    assert main.status == "active" and main.measured_fps == pytest.approx(30, rel=0.05)
    assert main.ms_since_last_frame == 0
    viewer.close()
    clock.advance(1)
    assert gm.status()[0].status == "active"
    assert gm.status()[0].ms_since_last_frame < 1000 / 30  # the device encodes all the time
    with pytest.raises(NotFound):
        gm.open_viewer("fourth")


async def test_a_full_queue_drops_non_key_frames_and_counts_them(media) -> None:
    gm, clock = media
    viewer = gm.open_viewer("third")  # 15 fps, GOP 30
    for _ in range(5):  # 75 more frames: the queue holds 60
        clock.advance(1)
        await gm.stream("third").settle()
    assert viewer.pending() <= video_stream.QUEUE_FRAMES
    assert viewer.dropped > 0
    assert gm.status()[2].dropped_frames == viewer.dropped


async def test_detections_follow_ground_truth_feed_the_bus_and_stop_without_the_camera_service(media) -> None:
    gm, clock = media
    world = gm._world
    sub = world.bus.subscribe([EventKind.CAMERA_DETECTIONS])
    assert gm.detections()  # ground truth in view, a few missed, boxes inside the frame
    truth = {b.object_id for b in gm._scene.boxes(world.env.now)}
    assert {d.object_id for d in gm.detections()} <= truth | {-1}
    gm.set_ai_overlay(AiOverlay(enabled=True))
    clock.advance(3)
    events = []
    while (event := sub.get_nowait()) is not None:
        events.append(event.data)
    assert len(events) == 4 and all(e["count"] == sum(e["labels"].values()) for e in events)
    assert sum(e["count"] for e in events) > 0
    cameras_of(world)["cam-01"].ai.stop_camera_service()
    assert gm.detections() == []
    seen = [d for t in range(2000) for d in Detector(7).detect(gm._scene, t / 5) if d.object_id >= 0]
    perfect = sum(len(Detector(7, 0.0, 0.0).detect(gm._scene, t / 5)) for t in range(2000))
    assert len(seen) / perfect == pytest.approx(1 - MISS_RATE, abs=0.03)  # a seeded miss rate
    assert Detector(7).detect(gm._scene, 12.3) == Detector(7).detect(gm._scene, 12.3)


async def test_a_frame_that_fails_to_render_is_skipped_and_the_stream_goes_on(media, monkeypatch) -> None:
    gm, clock = media
    viewer = gm.open_viewer("main")
    await viewer.stream.primed()
    original, calls = Renderer.render, []

    def flaky(self, t, view):
        calls.append(t)
        if len(calls) == 3:
            raise ValueError("bad frame")
        return original(self, t, view)

    monkeypatch.setattr(Renderer, "render", flaky)
    clock.advance(1)
    await gm.stream("main").settle()
    assert viewer.pending() == 1 + 29  # the primed key frame, then 29 of 30


async def test_a_viewer_joining_while_the_clock_is_paused_gets_the_current_picture_at_once(media) -> None:
    gm, clock = media
    first = gm.open_viewer("main")
    await first.stream.primed()
    clock.advance(1)
    await gm.stream("main").settle()
    frames_before = gm.stream("main").frames
    late = gm.open_viewer("main")  # the clock stays where it is
    await late.stream.primed()
    await gm.stream("main").settle()
    snapshot = await late.next_frame()
    assert snapshot.key and snapshot.pts == video_stream.ticks_90k(1.0)
    assert gm.stream("main").frames == frames_before  # the shared stream did not move
    assert first.pending() == 31 and late.pending() == 0
    clock.advance(0.5)
    await gm.stream("main").settle()
    later = [await late.next_frame() for _ in range(late.pending())]
    assert len(later) == 15 and later[0].key  # the key frame its join asked for comes next
    assert all(b.pts > a.pts for a, b in itertools.pairwise([snapshot, *later]))
    pictures = decode(late.config_frame().payload, [snapshot.payload] + [f.payload for f in later])
    assert len(pictures) == 16
    shared = [await first.next_frame() for _ in range(first.pending())]
    assert len(decode(first.config_frame().payload, [f.payload for f in shared])) == 46


async def test_a_stream_stopped_and_started_again_before_the_clock_moves_keeps_running(media) -> None:
    gm, clock = media
    gone = gm.open_viewer("main")
    await gone.stream.primed()
    gone.close()  # the stream stops; its world process has not even begun (the clock is paused)
    viewer = gm.open_viewer("main")
    await viewer.stream.primed()
    clock.advance(1)
    await gm.stream("main").settle()
    assert gm.stream("main").running() and viewer.pending() == 31
