"""Wire shapes of ``/api/v1/audio/*`` (``handlers/audio.go``): the request structs the handlers bind
and the ``gin.H`` answers they build."""

from __future__ import annotations

from typing import Any

from api.gateway.schemas.binding import bind
from hardware.ports.camera_audio import AudioDevice, AudioStatus, AudioUpdate

CONFIG_REQ = {
    "device": "string",
    "sample_rate": "uint32",
    "channels": "uint32",
    "codec": "string",
    "bitrate": "uint32",
    "volume": "*float32",
    "mute": "*bool",
    "playback_enabled": "*bool",
}
"""``audioConfigReq`` (``PUT audio/config``)."""
CAPTURE_REQ = {k: v for k, v in CONFIG_REQ.items() if k != "playback_enabled"}
"""``StartCapture``'s anonymous struct."""
PLAYBACK_REQ = {"device": "string", "sample_rate": "uint32", "channels": "uint32"}
"""``StartPlayback``'s anonymous struct."""


def parse_config(raw: bytes) -> AudioUpdate:
    return AudioUpdate(**bind(raw, "handlers.audioConfigReq", CONFIG_REQ))


def parse_capture(raw: bytes) -> tuple[float | None, bool | None]:
    """The volume and mute ``StartCapture`` passes on (the other fields reach a daemon that ignores them)."""
    body = bind(raw, "", CAPTURE_REQ)
    return body.get("volume"), body.get("mute")


def parse_playback(raw: bytes) -> tuple[str, int, int]:
    body = bind(raw, "", PLAYBACK_REQ)
    return body.get("device", ""), body.get("sample_rate", 0), body.get("channels", 0)


def devices(found: list[AudioDevice]) -> dict[str, Any]:
    return {"devices": [{"name": d.name, "description": d.description} for d in found]}


def status(s: AudioStatus) -> dict[str, Any]:
    """``GetStatus``'s ``gin.H``: the daemon's ``AudioStatusResponse`` flattened, every key present."""
    c = s.config
    return {
        "capturing": s.capturing,
        "playing": s.playing,
        "device": c.device,
        "sample_rate": c.sample_rate,
        "channels": c.channels,
        "codec": c.codec,
        "volume": c.volume,
        "mute": c.mute,
        "playback_enabled": c.playback_enabled,
    }


def message(text: str) -> dict[str, str]:
    return {"message": text}
