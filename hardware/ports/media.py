"""The edge gateway's media area: streams, encoders, media status and the live H.264 feed.

A viewer of the live feed opens a :class:`MediaViewer` on one stream: it waits until the stream is
primed (:meth:`LiveStream.primed`), takes the stream's cached parameter sets
(:meth:`MediaViewer.config_frame`), then awaits access units one by one
(:meth:`MediaViewer.next_frame`). Payloads are AVCC (4-byte big-endian length + NAL, no start codes);
timestamps are 90 kHz ticks (the encoder's nanoseconds divided by 11111, wrapped to u32).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """One configured encoder (the device's ``camera-daemon.yaml`` entry)."""

    stream_id: str
    codec: str
    width: int
    height: int
    fps: int
    bitrate_bps: int
    gop: int


@dataclass(frozen=True, slots=True)
class StreamStatus:
    """One row of ``GET media/status``."""

    config: StreamConfig
    status: str
    """``streaming`` while at least one viewer watches, ``idle`` otherwise."""
    has_encoder: bool
    ms_since_last_frame: float | None
    measured_fps: float
    status_detail: str
    viewers: int = 0
    dropped_frames: int = 0


@dataclass(frozen=True, slots=True)
class MediaFrame:
    """One access unit as the live feed sends it."""

    key: bool
    pts: int
    dts: int
    payload: bytes
    """AVCC NAL units."""


@runtime_checkable
class LiveStream(Protocol):
    """The encoder of one stream, shared by its viewers."""

    def request_keyframe(self) -> None:
        """Ask the encoder for an IDR as its next frame."""

    async def primed(self) -> None:
        """Wait until the stream's parameter sets exist (its first frame is encoded)."""


@runtime_checkable
class MediaViewer(Protocol):
    """One subscriber of a stream: a bounded queue of 60 frames; when full, non-key frames drop."""

    stream_id: str
    dropped: int

    @property
    def stream(self) -> LiveStream:
        """The stream this viewer watches."""

    def config_frame(self) -> MediaFrame:
        """The cached SPS/PPS as one AVCC frame: not key, PTS/DTS 0."""

    async def next_frame(self) -> MediaFrame:
        """The next frame, waiting (in world time) until one is encoded; ``Unavailable`` once closed."""

    def pending(self) -> int:
        """Frames waiting in the queue."""

    def close(self) -> None:
        """Leave the stream; idempotent. The stream stops encoding when its last viewer leaves."""


@runtime_checkable
class GatewayMedia(Protocol):
    """A camera's video streams as its gateway serves them."""

    def streams(self) -> list[StreamConfig]:
        """The configured encoders, in configuration order."""

    def status(self) -> list[StreamStatus]:
        """Every stream's encoder state, for ``GET media/status``."""

    def open_viewer(self, stream_id: str) -> MediaViewer:
        """Start watching a stream; ``NotFound`` if no encoder of that id is configured,
        ``Unavailable`` if it is disabled."""


@runtime_checkable
class GatewayMediaConfig(Protocol):
    """The camera daemon's configuration: encoders, RTSP, profiles, the stream list."""

    def config(self) -> dict[str, Any]:
        """The whole configuration document: streams with encoders, image, transform, osd,
        privacy_mask, ai_overlay, rtsp, frontend, profile."""

    def set_config(self, overlay: dict[str, Any]) -> None:
        """Merge a partial document, validate the result (``InvalidInput``), apply it."""

    def config_field(self, field_path: str) -> tuple[int, str]:
        """(ConfigFieldType 0 BOOL … 4 STRING, value as text) of an allow-listed scalar."""

    def set_config_field(self, field_path: str, kind: int, value: str) -> None: ...

    def export_config(self) -> dict[str, Any]:
        """``{schema: "aipc.media_config", version: 1, config}``."""

    def import_config(self, schema: str, version: int, config: dict[str, Any]) -> None: ...

    def set_encoder(self, stream_name: str, bitrate_bps: int, framerate: int, gop: int) -> None:
        """Zero keeps a value. ``NotFound`` for an unknown stream."""

    def reconfigure_encoder(
        self, stream_name: str, width: int, height: int, codec: str, bitrate_bps: int, fps: int, gop: int
    ) -> int:
        """Full reinit (zero/empty keeps a value); returns the interruption in milliseconds."""

    def reconfigure_pipeline(self) -> int: ...

    def set_rtsp(self, enabled: bool) -> None: ...

    def profile(self) -> dict[str, Any]: ...

    def profiles(self) -> list[tuple[str, bool]]:
        """(name, active) of every stored profile."""

    def switch_profile(self, name: str) -> None:
        """``Forbidden`` for a name the camera will not switch to (outside its switch allowlist and
        its stored profiles); ``NotFound`` for an allowlisted profile the camera does not have."""

    def backup_profile(self, name: str) -> str:
        """Store the current configuration as ``name`` (the active profile's name if empty)."""

    def add_stream(self, config: StreamConfig) -> None:
        """``Conflict`` if the name exists."""

    def remove_stream(self, name: str) -> None: ...

    def enable_stream(self, name: str, enabled: bool) -> None: ...
