"""The twin's implementation of the gateway's media area, over one camera of the world.

Streams belong to the world's current SimPy environment: after a reset or restore (a new
environment) the old streams' viewers are closed and fresh streams are made on next use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardware.ports.errors import NotFound
from hardware.ports.media import StreamConfig, StreamStatus
from twin.video import stream as _stream
from twin.video.scene import Scene
from twin.video.stream import VideoStream, Viewer

if TYPE_CHECKING:
    from twin.clock import SimClock
    from twin.world import World


class TwinGatewayMedia:
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self._world = world
        self._clock = clock
        self._id = camera_id
        self._env = None
        self._streams: dict[str, VideoStream] = {}

    def _current(self) -> dict[str, VideoStream]:
        if self._env is not self._world.env:
            for old in self._streams.values():
                old.close()
            scene = Scene(self._world.streams.key(f"{self._id}/scene"))
            self._streams = {
                c.stream_id: VideoStream(
                    self._world, self._id, _stream.scaled(c, _stream.RESOLUTION_SCALE), scene
                )
                for c in _stream.DEFAULT_STREAMS
            }
            self._env = self._world.env
        return self._streams

    def streams(self) -> list[StreamConfig]:
        return [s.config for s in self._current().values()]

    def status(self) -> list[StreamStatus]:
        out = []
        now = self._world.env.now
        for s in self._current().values():
            # The device's camera daemon encodes all the time; the twin renders only while someone
            # watches, but reports what the device would: an active stream whose last frame is at
            # most one frame period old.
            period = 1.0 / s.config.fps
            if s.running() and s.last_frame_at is not None:
                since = round((now - s.last_frame_at) * 1000, 1)
            else:
                since = round((now % period) * 1000, 1)
            out.append(
                StreamStatus(
                    config=s.config,
                    status="active",
                    has_encoder=True,
                    ms_since_last_frame=since,
                    measured_fps=s.measured_fps() if s.running() else float(s.config.fps),
                    status_detail="",
                    viewers=len(s.viewers),
                    dropped_frames=s.dropped(),
                )
            )
        return out

    def open_viewer(self, stream_id: str) -> Viewer:
        stream = self._current().get(stream_id)
        if stream is None:
            raise NotFound(f"stream {stream_id} not found", resource="stream")
        return stream.join()
