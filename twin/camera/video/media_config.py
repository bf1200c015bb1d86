"""The camera daemon's configuration operations of the media area: the whole document (get, post
overlay, one field, export/import), encoders (hot update, full reconfigure), RTSP, profiles, the
pipeline and the stream list. They work on the settings of a :class:`ConfiguredMedia` (the
camera's :class:`twin.camera.video.backend.CameraMedia`), which makes the running streams match them
and writes them to the store (``sync``)."""

from __future__ import annotations

from typing import Any, Protocol

from hardware.ports.errors import Conflict, Forbidden, InvalidInput, NotFound
from hardware.ports.media import StreamConfig
from twin.camera.video import config as cfg
from twin.camera.video import stream as _stream

MAX_STREAMS = 8


class ConfiguredMedia(Protocol):
    """The media whose settings a :class:`MediaConfiguration` changes."""

    def settings(self) -> cfg.MediaSettings:
        """The current settings (the store's, in a new environment)."""

    def sync(self) -> None:
        """Make the running streams match the settings, and write them to the store."""

    def drop_orphan_osd(self) -> None:
        """Forget the OSD of streams the settings no longer have."""

    def reinit_streams(self) -> None:
        """Reinitialise every running encoder with its current configuration."""


class MediaConfiguration:
    """The media configuration port of one camera."""

    def __init__(self, media: ConfiguredMedia) -> None:
        self.media = media

    def config(self) -> dict[str, Any]:
        return self.media.settings().to_dict()

    def set_config(self, overlay: dict[str, Any]) -> None:
        s = self.media.settings()
        s.apply(overlay)
        self.media.drop_orphan_osd()
        self.media.sync()

    def config_field(self, field_path: str) -> tuple[int, str]:
        return self.media.settings().field(field_path)

    def set_config_field(self, field_path: str, kind: int, value: str) -> None:
        self.media.settings().set_field(field_path, kind, value)
        self.media.sync()

    def export_config(self) -> dict[str, Any]:
        return {"schema": cfg.EXPORT_SCHEMA, "version": cfg.EXPORT_VERSION, "config": self.config()}

    def import_config(self, schema: str, version: int, config: dict[str, Any]) -> None:
        if schema != cfg.EXPORT_SCHEMA:
            raise InvalidInput(f"schema must be {cfg.EXPORT_SCHEMA}")
        if version != cfg.EXPORT_VERSION:
            raise InvalidInput(f"unsupported version {version}")
        s = self.media.settings()
        parsed = cfg.parse_document(cfg.merge(s.to_dict(), config))
        for name, value in parsed.items():
            setattr(s, name, value)
        self.media.sync()

    def set_encoder(self, stream_name: str, bitrate_bps: int, framerate: int, gop: int) -> None:
        """Hot update of bitrate, frame rate and GOP (zero keeps the current value)."""
        self.reconfigure_encoder(stream_name, 0, 0, "", bitrate_bps, framerate, gop)

    def reconfigure_encoder(
        self, stream_name: str, width: int, height: int, codec: str, bitrate_bps: int, fps: int, gop: int
    ) -> int:
        """Full reinit of one encoder; returns the interruption in milliseconds."""
        s = self.media.settings()
        current = s.stream(stream_name)
        if current is None:
            raise NotFound(f"stream {stream_name} not found", resource="stream")
        enc = {
            "codec": codec or current.codec,
            "width": width or current.width,
            "height": height or current.height,
            "fps": fps or current.fps,
            "bitrate_bps": bitrate_bps or current.bitrate_bps,
            "gop": gop or current.gop,
        }
        new = cfg.stream_config(stream_name, enc)
        s.streams = [new if c.stream_id == stream_name else c for c in s.streams]
        self.media.sync()
        return round(_stream.INTERRUPT_S * 1000)

    def reconfigure_pipeline(self) -> int:
        self.media.reinit_streams()
        return round(_stream.INTERRUPT_S * 1000)

    def set_rtsp(self, enabled: bool) -> None:
        self.media.settings().rtsp_enabled = enabled
        self.media.sync()

    def profile(self) -> dict[str, Any]:
        s = self.media.settings()
        return {"name": s.profile, "config": s.to_dict()}

    def profiles(self) -> list[tuple[str, bool]]:
        s = self.media.settings()
        device = [name for name in cfg.DEVICE_PROFILES if name in s.profiles]
        names = device + sorted(set(s.profiles) - set(device))  # one order before and after a restart
        return [(name, name == s.profile) for name in names]

    def switch_profile(self, name: str) -> None:
        s = self.media.settings()
        doc = s.profiles.get(name)
        locked = name in cfg.DEVICE_PROFILES and name not in cfg.SWITCHABLE_DEVICE_PROFILES
        if locked or (doc is None and name not in cfg.SWITCHABLE_DEVICE_PROFILES):
            raise Forbidden(f"profile {name} is not switchable", resource="profile")
        if doc is None:
            raise NotFound(f"profile {name} not found", resource="profile")
        parsed = cfg.parse_document(doc)
        for key, value in parsed.items():
            setattr(s, key, value)
        s.profile = name
        self.media.sync()

    def backup_profile(self, name: str) -> str:
        s = self.media.settings()
        name = name or s.profile
        if not name or "/" in name or ".." in name:
            raise InvalidInput("invalid profile name")
        s.profiles[name] = {**s.to_dict(), "profile": name}
        self.media.sync()
        return name

    def add_stream(self, config: StreamConfig) -> None:
        s = self.media.settings()
        if not config.stream_id or "/" in config.stream_id or ".." in config.stream_id:
            raise InvalidInput("invalid stream name")
        if s.stream(config.stream_id) is not None:
            raise Conflict(f"stream {config.stream_id} already exists")
        if len(s.streams) >= MAX_STREAMS:
            raise InvalidInput(f"at most {MAX_STREAMS} streams")
        enc = {k: getattr(config, k) for k in ("codec", "width", "height", "fps", "bitrate_bps", "gop")}
        s.streams = [*s.streams, cfg.stream_config(config.stream_id, enc)]
        s.enabled[config.stream_id] = True
        self.media.sync()

    def remove_stream(self, name: str) -> None:
        s = self.media.settings()
        if s.stream(name) is None:
            raise NotFound(f"stream {name} not found", resource="stream")
        if len(s.streams) == 1:
            raise InvalidInput("cannot remove the last stream")
        s.streams = [c for c in s.streams if c.stream_id != name]
        s.enabled.pop(name, None)
        s.osd.pop(name, None)
        self.media.sync()

    def enable_stream(self, name: str, enabled: bool) -> None:
        s = self.media.settings()
        if s.stream(name) is None:
            raise NotFound(f"stream {name} not found", resource="stream")
        s.enabled[name] = enabled
        self.media.sync()
