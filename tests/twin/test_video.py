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
from twin.camera.video.backend import TwinGatewayMedia
from twin.camera.video.encoder import H264Encoder, avcc_to_annexb
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import Scene
from twin.clock import SimClock
from twin.fleet import CameraSpec, WorldConfig
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
def media(monkeypatch: pytest.MonkeyPatch) -> tuple[TwinGatewayMedia, SimClock]:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    world = World(WorldConfig(seed=3, cameras=CameraSpec(1)))
    clock = SimClock(world, mode=ClockMode.STEP)
    return TwinGatewayMedia(world, clock, "cam-01"), clock


async def test_frames_come_only_while_watched_and_only_as_world_time_moves(media) -> None:
    gm, clock = media
    assert [s.stream_id for s in gm.streams()] == ["main", "sub", "third"]
    assert gm.streams()[0].width == 240
    clock.advance(1)
    status = {s.config.stream_id: s for s in gm.status()}
    assert status["main"].status == "active" and status["main"].ms_since_last_frame is not None
    viewer = gm.open_viewer("main")
    await viewer.start()
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
    world.cameras["cam-01"].ai.stop_camera_service()
    assert gm.detections() == []
    seen = [d for t in range(2000) for d in Detector(7).detect(gm._scene, t / 5) if d.object_id >= 0]
    perfect = sum(len(Detector(7, 0.0, 0.0).detect(gm._scene, t / 5)) for t in range(2000))
    assert len(seen) / perfect == pytest.approx(1 - MISS_RATE, abs=0.03)  # a seeded miss rate
    assert Detector(7).detect(gm._scene, 12.3) == Detector(7).detect(gm._scene, 12.3)


async def test_a_frame_that_fails_to_render_is_skipped_and_the_stream_goes_on(media, monkeypatch) -> None:
    gm, clock = media
    viewer = gm.open_viewer("main")
    await viewer.start()
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
