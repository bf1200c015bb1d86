"""Live video streams: one encoder per stream, shared by all its viewers, driven by world time.

A stream renders and encodes only while someone watches. The first viewer primes the encoder
synchronously (one frame at the current instant, so the SPS/PPS are cached even in ``step`` mode),
then a SimPy process encodes a frame every ``1/fps`` of WORLD time: in ``step`` mode frames come
only when time is advanced; at realtime speed 1 they come at ``fps``. When the last viewer leaves,
the process ends at its next tick and the encoder is released.

Each viewer has a bounded queue of :data:`QUEUE_FRAMES`. When it is full a non-key frame is
dropped (and counted); a key frame replaces the whole backlog (also counted), since it makes the
older frames useless. A viewer skips frames until its first key frame.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from typing import TYPE_CHECKING

from hardware.ports.errors import Unavailable
from hardware.ports.media import MediaFrame, StreamConfig
from twin.video.encoder import H264Encoder
from twin.video.render import Renderer
from twin.video.scene import Scene

if TYPE_CHECKING:
    from twin.world import World

QUEUE_FRAMES = 60
DEFAULT_STREAMS = (
    StreamConfig("main", "h264", 1920, 1080, 30, 4_000_000, 30),
    StreamConfig("sub", "h264", 1280, 720, 30, 2_000_000, 60),
    StreamConfig("third", "h264", 640, 384, 15, 512_000, 30),
)
RESOLUTION_SCALE = 1.0
"""Scale-down knob for tests and small hosts: sizes (and bitrates) are multiplied by this."""


def scaled(config: StreamConfig, scale: float) -> StreamConfig:
    """``config`` at ``scale`` of its size (even dimensions, at least 16x16) and bitrate."""
    if scale == 1.0:
        return config

    def even(v: int) -> int:
        return max(16, int(v * scale) // 2 * 2)

    return dataclasses.replace(
        config,
        width=even(config.width),
        height=even(config.height),
        bitrate_bps=max(50_000, int(config.bitrate_bps * scale * scale)),
    )


def ticks_90k(sim_time: float) -> int:
    """The device's PTS: the encoder's nanoseconds divided by 11111, as u32."""
    return (round(sim_time * 1e9) // 11111) & 0xFFFFFFFF


class Viewer:
    """One subscriber: a bounded queue the stream fills and :meth:`next_frame` drains."""

    def __init__(self, stream: VideoStream) -> None:
        self.stream = stream
        self.stream_id = stream.config.stream_id
        self.dropped = 0
        self.closed = False
        self._queue: deque[MediaFrame] = deque()
        self._started = False
        self._waiter: asyncio.Future[None] | None = None

    def config_frame(self) -> MediaFrame:
        return MediaFrame(False, 0, 0, self.stream.parameter_sets)

    def request_keyframe(self) -> None:
        self.stream.request_keyframe()

    def push(self, frame: MediaFrame) -> None:
        if self.closed:
            return
        if not self._started:
            if not frame.key:
                return
            self._started = True
        if len(self._queue) >= QUEUE_FRAMES:
            if not frame.key:
                self.dropped += 1
                return
            self.dropped += len(self._queue)
            self._queue.clear()
        self._queue.append(frame)
        self._wake()

    async def next_frame(self) -> MediaFrame:
        while not self._queue:
            if self.closed:
                raise Unavailable("the stream was closed")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self.stream.leave(self)
        self._wake()

    def pending(self) -> int:
        return len(self._queue)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class VideoStream:
    """One configured encoder of one camera, in one world (one SimPy environment)."""

    def __init__(self, world: World, camera_id: str, config: StreamConfig, scene: Scene) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.config = config
        self.scene = scene
        self.viewers: list[Viewer] = []
        self.encoder: H264Encoder | None = None
        self.renderer: Renderer | None = None
        self.parameter_sets = b""
        self.frames = 0
        self.dropped_total = 0
        self.last_frame_at: float | None = None
        self._recent: deque[float] = deque(maxlen=max(2, config.fps + 1))
        self._running = False
        self._want_key = False

    # Viewers -------------------------------------------------------------------------------
    def join(self) -> Viewer:
        viewer = Viewer(self)
        self.viewers.append(viewer)
        if not self._running:
            self._start()
        else:
            self.request_keyframe()
        return viewer

    def leave(self, viewer: Viewer) -> None:
        if viewer in self.viewers:
            self.viewers.remove(viewer)
            self.dropped_total += viewer.dropped

    def request_keyframe(self) -> None:
        self._want_key = True

    def close(self) -> None:
        for viewer in list(self.viewers):
            viewer.close()

    # Encoding ------------------------------------------------------------------------------
    def _start(self) -> None:
        c = self.config
        self.encoder = H264Encoder(c.width, c.height, c.fps, c.bitrate_bps, c.gop)
        self.renderer = Renderer(self.scene, c.width, c.height, self.camera_id)
        self._running = True
        self._encode_now()  # primes SPS/PPS and gives the first viewer its key frame at once
        self.env.process(self._run())

    def _run(self):
        start, k = self.env.now, 0
        while True:
            k += 1  # absolute schedule: no drift from summing 1/fps
            yield self.env.timeout(max(0.0, start + k / self.config.fps - self.env.now))
            if not self.viewers:
                break
            self._encode_now()
        self._running = False
        self.encoder = None
        self.renderer = None

    def _encode_now(self) -> None:
        assert self.encoder is not None and self.renderer is not None
        t = self.env.now
        image = self.renderer.render(t, self.world.now())
        if self._want_key:
            self.encoder.request_keyframe()
            self._want_key = False
        units = self.encoder.encode(image)
        if self.encoder.sps and self.encoder.pps:
            self.parameter_sets = self.encoder.parameter_sets()
        pts = ticks_90k(t)
        for unit in units:
            frame = MediaFrame(unit.key, pts, pts, unit.avcc)
            for viewer in list(self.viewers):
                viewer.push(frame)
        self.frames += 1
        self.last_frame_at = t
        self._recent.append(t)

    # Status --------------------------------------------------------------------------------
    def measured_fps(self) -> float:
        """Frames per second of world time over the last second, 0 when idle."""
        now = self.env.now
        recent = [t for t in self._recent if now - t < 1.0 + 1e-9]
        if not self._running or len(recent) < 2:
            return 0.0
        span = recent[-1] - recent[0]
        return round((len(recent) - 1) / span, 2) if span > 0 else 0.0

    def running(self) -> bool:
        return self._running

    def dropped(self) -> int:
        return self.dropped_total + sum(v.dropped for v in self.viewers)
