"""Live video streams: one encoder per stream, shared by all its viewers, driven by world time.

A stream renders and encodes only while someone watches. A SimPy process ticks every ``1/fps`` of
WORLD time (in ``step`` mode frames come only when time is advanced; at realtime speed 1 they come at
``fps``); at each tick it captures the device's :class:`~twin.camera.video.render.View` on the world's thread
and hands (time, view) to the stream's worker thread, which renders and encodes off the event loop
and posts the access units back to the loop for the viewers. The first viewer's join submits a frame
at once, so the SPS/PPS and a key frame exist even in ``step`` mode (:meth:`Viewer.start` awaits it).
A viewer that joins a running stream gets a key frame of the current picture at once too, from a
one-shot encoder with the same settings (the same SPS/PPS), so a paused clock never leaves it waiting;
it then skips the shared encoder's frames until the key frame its join requested for the next tick.
At most :data:`BACKLOG_S` seconds of frames wait for the worker; ticks beyond that are skipped and
counted. When the last viewer leaves, the worker and its encoder are released at once and the
process ends at its next tick. A reconfigure stops the encoder and starts a new one after
:data:`INTERRUPT_S` of world time.

Each viewer has a bounded queue of :data:`QUEUE_FRAMES`. When it is full a non-key frame is
dropped (and counted); a key frame replaces the whole backlog (also counted), since it makes the
older frames useless. A viewer skips frames until its first key frame.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from hardware.ports.errors import Unavailable
from hardware.ports.media import MediaFrame, StreamConfig
from twin.camera.video.encoder import H264Encoder
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import Scene

if TYPE_CHECKING:
    from twin.camera.video.source import MediaSource
    from twin.engine import Engine

log = logging.getLogger(__name__)

QUEUE_FRAMES = 60
DEFAULT_STREAMS = (
    StreamConfig("main", "h264", 1920, 1080, 30, 4_000_000, 30),
    StreamConfig("sub", "h264", 1280, 720, 30, 2_000_000, 60),
    StreamConfig("third", "h264", 640, 384, 15, 512_000, 30),
)
BACKLOG_S = 2.0
INTERRUPT_S = 0.2
"""How long a reconfigured encoder is silent (``interrupt_ms`` in the answer)."""
LATENCY_SAMPLES = 2048
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
        self._await_shared_key = False
        """After a join snapshot: the shared encoder's frames refer to pictures this viewer never
        got, so they are skipped until its next key frame."""
        self._waiter: asyncio.Future[None] | None = None

    def config_frame(self) -> MediaFrame:
        return MediaFrame(False, 0, 0, self.stream.parameter_sets)

    def push(self, frame: MediaFrame) -> None:
        if self.closed:
            return
        if not self._started or self._await_shared_key:
            if not frame.key:
                return
            self._started, self._await_shared_key = True, False
        self._enqueue(frame)

    def push_snapshot(self, frame: MediaFrame) -> None:
        """The key frame encoded for this viewer alone when it joined (ignored once it started)."""
        if self.closed or self._started:
            return
        self._started = self._await_shared_key = True
        self._enqueue(frame)

    def _enqueue(self, frame: MediaFrame) -> None:
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

    def __init__(
        self,
        world: Engine,
        camera_id: str,
        config: StreamConfig,
        scene: Scene,
        view_of: Callable[[str], View] | None = None,
        source: MediaSource | None = None,
    ) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self.config = config
        self.scene = scene
        self.source = source
        """Real video in place of the scene (:mod:`twin.camera.video.source`)."""
        self.view_of = view_of or (lambda _sid: View(self.world.now(), camera_id))
        self.viewers: list[Viewer] = []
        self.parameter_sets = b""
        self.frames = 0
        self.skipped = 0
        self.dropped_total = 0
        self.last_frame_at: float | None = None
        self.interrupted_until: float | None = None
        self.latency: deque[tuple[int, float, float]] = deque(maxlen=LATENCY_SAMPLES)
        """(PTS, perf_counter at render start, at hand-over to the viewers) of recent frames."""
        self._recent: deque[float] = deque(maxlen=max(2, config.fps + 1))
        self._running = False
        self._want_key = False
        self._night = False
        self._worker: _Worker | None = None
        self._generation = 0
        self._primed: asyncio.Event | None = None

    # Viewers -------------------------------------------------------------------------------
    def join(self) -> Viewer:
        viewer = Viewer(self)
        self.viewers.append(viewer)
        if not self._running:
            self._start()
        else:
            self.request_keyframe()
            if self._worker is not None:  # the current picture, now: the next tick may be far off
                self._worker.submit(_Job(self.env.now, self.view_of(self.config.stream_id), True, viewer))
        return viewer

    def leave(self, viewer: Viewer) -> None:
        if viewer in self.viewers:
            self.viewers.remove(viewer)
            self.dropped_total += viewer.dropped
        if not self.viewers and self._running:
            # Nobody watches: release the worker and its encoder now (in step mode the next tick
            # may never come); the SimPy process sees the new generation and ends.
            self._generation += 1
            self._running = False
            self._stop_worker()

    def request_keyframe(self) -> None:
        self._want_key = True

    def close(self) -> None:
        for viewer in list(self.viewers):
            viewer.close()
        self._stop_worker()

    async def primed(self) -> None:
        if self.parameter_sets or self._primed is None:
            return
        await self._primed.wait()

    async def settle(self) -> None:
        """Wait until the worker has encoded every submitted frame and the viewers have them."""
        worker = self._worker
        if worker is not None:
            await asyncio.to_thread(worker.jobs.join)
        self._deliver()

    # Encoding ------------------------------------------------------------------------------
    def _start(self) -> None:
        self._running = True
        self._generation += 1
        self._start_worker()
        self._submit()  # the first viewer's key frame and the SPS/PPS, at once
        self.env.process(self._run(self._generation))

    def _start_worker(self) -> None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self._primed = asyncio.Event() if loop is not None and not self.parameter_sets else None
        self._worker = _Worker(self, self._generation, loop)

    def _stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def _run(self, generation: int):
        # A process starts at the world's next step: by then its stream may have stopped and
        # started again (step mode, the clock paused), so it checks its generation after each
        # wait and leaves a newer generation alone.
        start, k = self.env.now, 0
        while True:
            k += 1  # absolute schedule: no drift from summing 1/fps
            yield self.env.timeout(max(0.0, start + k / self.config.fps - self.env.now))
            if generation != self._generation:
                return
            if not self.viewers:
                break
            self._submit()
        self._running = False
        self._stop_worker()

    def _submit(self) -> None:
        worker = self._worker
        if worker is None:
            return
        if worker.jobs.qsize() >= max(2, int(self.config.fps * BACKLOG_S)):
            self.skipped += 1
            return
        view = self.view_of(self.config.stream_id)
        key = self._want_key or view.night != self._night  # day/night: the whole picture changes
        self._want_key, self._night = False, view.night
        worker.submit(_Job(self.env.now, view, key))

    def reconfigure(self, config: StreamConfig) -> None:
        """Take new encoder settings: the current encoder stops, a new one starts after
        :data:`INTERRUPT_S` of world time (at once if nobody watches)."""
        self.config = config
        self._recent = deque(maxlen=max(2, config.fps + 1))
        self.parameter_sets = b""
        if not self._running:
            return
        self._generation += 1
        self._stop_worker()
        self._running = False
        self.interrupted_until = self.env.now + INTERRUPT_S
        self.env.process(self._resume(self._generation))

    def _resume(self, generation: int):
        yield self.env.timeout(INTERRUPT_S)
        self.interrupted_until = None
        if generation == self._generation and self.viewers and not self._running:
            self._start()

    def _deliver(self) -> None:
        """On the loop: hand the worker's finished frames to the viewers."""
        worker = self._worker
        if worker is None:
            return
        while worker.outbox:
            t, units, parameter_sets, stamps, target = worker.outbox.popleft()
            if parameter_sets and (target is None or not self.parameter_sets):
                self.parameter_sets = parameter_sets
                if self._primed is not None:
                    self._primed.set()
            pts = ticks_90k(t)
            if target is not None:
                for unit in units:
                    target.push_snapshot(MediaFrame(unit.key, pts, pts, unit.avcc))
                continue
            for unit in units:
                frame = MediaFrame(unit.key, pts, pts, unit.avcc)
                for viewer in list(self.viewers):
                    viewer.push(frame)
            self.frames += 1
            self.last_frame_at = t
            self._recent.append(t)
            self.latency.append((pts, stamps, time.perf_counter()))

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


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    t: float
    view: View
    key: bool
    viewer: Viewer | None = None
    """Set for a join snapshot: encoded by a one-shot encoder and handed to this viewer alone."""


class _Worker:
    """The stream's render+encode thread: one encoder, jobs in order, results to the loop.

    Without a running event loop (plain synchronous use) jobs run inline on the caller's thread.
    """

    def __init__(self, stream: VideoStream, generation: int, loop: asyncio.AbstractEventLoop | None) -> None:
        self.config = c = stream.config
        self.stream = stream
        self.generation = generation
        self.loop = loop
        self.encoder = self._new_encoder()
        self.renderer = Renderer(stream.scene, c.width, c.height, stream.camera_id, stream.source)
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.outbox: deque[tuple[float, list, bytes, float, Viewer | None]] = deque()
        self._thread: threading.Thread | None = None
        if loop is not None:
            self._thread = threading.Thread(
                target=self._loop, name=f"video-{stream.camera_id}-{c.stream_id}", daemon=True
            )
            self._thread.start()

    def submit(self, job: _Job) -> None:
        if self._thread is None:
            self._encode(job)
            self.stream._deliver()
        else:
            self.jobs.put(job)

    def stop(self) -> None:
        if self._thread is not None:
            self.jobs.put(None)

    def _loop(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                if job is None:
                    return
                try:
                    self._encode(job)
                except Exception:  # one bad frame must not end the stream for every viewer
                    log.exception(
                        "video %s/%s: frame at t=%.3f failed",
                        self.stream.camera_id,
                        self.stream.config.stream_id,
                        job.t,
                    )
                    continue
                try:
                    self.loop.call_soon_threadsafe(self._handoff)  # type: ignore[union-attr]
                except RuntimeError:  # the loop is closed: nobody is left to watch
                    return
            finally:
                self.jobs.task_done()

    def _handoff(self) -> None:
        if self.stream._worker is self:
            self.stream._deliver()

    def _new_encoder(self) -> H264Encoder:
        c = self.config
        return H264Encoder(c.width, c.height, c.fps, c.bitrate_bps, c.gop)

    def _encode(self, job: _Job) -> None:
        started = time.perf_counter()
        image = self.renderer.render(job.t, job.view)
        encoder = self.encoder
        if job.viewer is not None:  # a fresh session's first frame is an IDR
            encoder = self._new_encoder()
        elif job.key:
            encoder.request_keyframe()
        units = encoder.encode(image)
        parameter_sets = encoder.parameter_sets() if encoder.sps and encoder.pps else b""
        self.outbox.append((job.t, units, parameter_sets, started, job.viewer))
