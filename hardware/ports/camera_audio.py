"""The camera's audio as its gateway serves it (``handlers/audio.go`` over the camera daemon): the
ALSA devices, the daemon's audio configuration and status, the live capture and two-way talk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class AudioDevice:
    """An ALSA device as the camera daemon lists it."""

    name: str
    description: str


@dataclass(frozen=True, slots=True)
class AudioConfig:
    """The daemon's ``audio`` block (``camera-daemon.yaml``)."""

    device: str = "default"
    sample_rate: int = 48000
    channels: int = 1
    codec: str = "pcm"
    """``pcm``, ``aac``, ``g711a`` or ``g711u``."""
    bitrate: int = 128000
    volume: float = 1.0
    """0.0-2.0 (1.0 = unity gain)."""
    mute: bool = False
    playback_enabled: bool = True


@dataclass(frozen=True, slots=True)
class AudioUpdate:
    """``PUT audio/config``: a zero ``device``/``sample_rate``/``channels``/``codec``/``bitrate`` and a
    ``None`` ``volume``/``mute``/``playback_enabled`` leave the value as it is."""

    device: str = ""
    sample_rate: int = 0
    channels: int = 0
    codec: str = ""
    bitrate: int = 0
    volume: float | None = None
    mute: bool | None = None
    playback_enabled: bool | None = None


@dataclass(frozen=True, slots=True)
class AudioStatus:
    capturing: bool
    playing: bool
    config: AudioConfig
    """What the daemon runs with: the device, rate, channels and codec it started with, the live
    volume and mute, and the stored ``playback_enabled``."""
    talk_active: bool = False
    talk_bytes: int = 0


@runtime_checkable
class AudioListener(Protocol):
    """One ``/audio/stream`` subscriber: PCM chunks paced by the world clock."""

    async def next_chunk(self) -> bytes:
        """The next chunk of S16LE PCM (waits in world time); ``Unavailable`` once capture stops."""

    def close(self) -> None: ...


@runtime_checkable
class TalkSession(Protocol):
    def receive(self, pcm: bytes) -> None:
        """S16LE PCM from the client, played on the device's speaker."""

    def close(self) -> None: ...


@runtime_checkable
class GatewayAudio(Protocol):
    def capture_devices(self) -> list[AudioDevice]: ...

    def playback_devices(self) -> list[AudioDevice]: ...

    def status(self) -> AudioStatus: ...

    def set_config(self, update: AudioUpdate) -> None:
        """Volume and mute apply now; every field sent is stored and the rest apply at the next start."""

    def start_capture(self, volume: float | None = None, mute: bool | None = None) -> None: ...

    def stop_capture(self) -> None: ...

    def start_playback(self, device: str, sample_rate: int, channels: int) -> None:
        """``InternalError`` (resource ``camera``) for a device the daemon cannot open."""

    def stop_playback(self) -> None: ...

    def listen(self) -> AudioListener:
        """Start receiving the capture (starting it on the default device if stopped)."""

    def talk(self) -> TalkSession:
        """Open the one two-way-audio session; ``RateLimited`` while another is open."""
