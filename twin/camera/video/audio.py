"""The camera's audio: a microphone that hears a test tone and the scene, a speaker for two-way talk.

Captured audio is synthetic S16LE PCM, a pure function of (camera key, sample index): a 1 kHz test
tone, the hum of each moving vehicle in the scene (louder the closer it is, i.e. the lower its box), and a
little seeded noise, scaled by the volume (1.0 = unity) and silent when muted. A listener receives
:data:`CHUNK_S` of it per chunk, paced by the world clock (in ``step`` mode chunks come as time is
advanced). Only one talk session at a time: a second is refused (the device's 4002/429).

As on the device, ``set_config`` changes the volume and mute of the running capture at once and stores
every field sent (the daemon's ``camera-daemon.yaml``): the device, rate, channels, codec and bitrate
apply when the daemon next starts. The stored configuration is durable: one document per camera in the
store, read back by a new environment (capture and playback start stopped).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from hardware.ports.camera_audio import AudioConfig, AudioDevice, AudioStatus, AudioUpdate
from hardware.ports.errors import InternalError, InvalidInput, RateLimited, Unavailable
from twin.camera.video.scene import Scene, scene_of
from twin.rng import hash_uniform

if TYPE_CHECKING:
    import simpy

    from twin.clock import SimClock
    from twin.world import World

CHUNK_S = 0.1
ENGINE_LOOKBACK_S = 0.5
"""A vehicle that has not moved in this long is parked: its engine is off, it does not hum."""
TONE_HZ = 1000.0
CAPTURE = (AudioDevice("default", "Built-in microphone"),)
PLAYBACK = (AudioDevice("default", "Built-in speaker"),)
AUDIO_KIND = "camera_audio"
"""Durable: one document per camera, keyed by its id: the stored audio configuration."""
_FLAGS = ("volume", "mute", "playback_enabled")
"""Fields sent as pointers: a zero value is a change."""


def pcm(key: int, scene: Scene, start: int, count: int, rate: int, channels: int, volume: float) -> bytes:
    """``count`` frames of S16LE from sample ``start`` (interleaved if ``channels`` is 2)."""
    n = np.arange(start, start + count, dtype=np.int64)
    t = n / rate
    signal = 0.15 * np.sin(2 * np.pi * TONE_HZ * t)
    earlier = {b.object_id: (b.x, b.y) for b in scene.boxes(float(t[0]) - ENGINE_LOOKBACK_S)}
    for box in scene.boxes(float(t[0])):
        if box.label in ("car", "truck") and earlier.get(box.object_id) != (box.x, box.y):  # engine running
            hum = 80.0 + 40.0 * box.object_id
            signal += 0.3 * (box.y + box.h) ** 2 * np.sin(2 * np.pi * hum * t)
    signal += 0.04 * (hash_uniform(key, n) - 0.5)
    samples = np.clip(signal * min(max(volume, 0.0), 2.0) * 32767, -32768, 32767).astype("<i2")
    if channels == 2:
        samples = np.repeat(samples, 2)
    return samples.tobytes()


class _Listener:
    def __init__(self, audio: TwinGatewayAudio) -> None:
        self.audio = audio
        self.closed = False
        self.sample = round(audio._world.env.now * audio.live.sample_rate)

    async def next_chunk(self) -> bytes:
        audio = self.audio
        if self.closed or not audio.capturing:
            raise Unavailable("capture stopped")
        rate = audio.live.sample_rate
        count = round(CHUNK_S * rate)
        due = (self.sample + count) / rate
        await audio._clock.sleep(due - audio._world.env.now, background=True)
        if self.closed or not audio.capturing:
            raise Unavailable("capture stopped")
        c = audio.live
        out = pcm(audio._key, audio._scene, self.sample, count, rate, c.channels, 0.0 if c.mute else c.volume)
        self.sample += count
        return out

    def close(self) -> None:
        self.closed = True
        if self in self.audio._listeners:
            self.audio._listeners.remove(self)


class _Talk:
    def __init__(self, audio: TwinGatewayAudio) -> None:
        self.audio = audio
        self.closed = False

    def receive(self, pcm_bytes: bytes) -> None:
        if len(pcm_bytes) % 2:
            raise InvalidInput("S16LE PCM has an even number of bytes")
        self.audio.talk_bytes += len(pcm_bytes)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.audio._talk is self:
                self.audio._talk = None


class TwinGatewayAudio:
    """The gateway's audio area over one camera; state belongs to the world's current environment."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self._world = world
        self._clock = clock
        self._id = camera_id
        self._env: simpy.Environment | None = None
        self._reset()

    def _reset(self) -> None:
        self._docs = self._world.store.collection(AUDIO_KIND)
        self.stored = self._docs.get_as(self._id, lambda doc: AudioConfig(**doc)) or AudioConfig()
        self.live = self.stored
        self.capturing = False
        self.playing = False
        self.talk_bytes = 0
        self._talk: _Talk | None = None
        self._listeners: list[_Listener] = []
        self._key = self._world.streams.key(f"{self._id}/audio")
        self._scene = scene_of(self._world, self._id)

    def _now(self) -> TwinGatewayAudio:
        if self._env is not self._world.env:
            for listener in list(getattr(self, "_listeners", [])):
                listener.close()
            self._reset()
            self._env = self._world.env
        return self

    def capture_devices(self) -> list[AudioDevice]:
        return list(CAPTURE)

    def playback_devices(self) -> list[AudioDevice]:
        return list(PLAYBACK)

    def status(self) -> AudioStatus:
        a = self._now()
        config = dataclasses.replace(a.live, playback_enabled=a.stored.playback_enabled)
        return AudioStatus(a.capturing, a.playing, config, a._talk is not None, a.talk_bytes)

    def _apply_live(self, volume: float | None, mute: bool | None) -> None:
        if volume is not None:
            self.live = dataclasses.replace(self.live, volume=volume)
        if mute is not None:
            self.live = dataclasses.replace(self.live, mute=mute)

    def set_config(self, update: AudioUpdate) -> None:
        a = self._now()
        a._apply_live(update.volume, update.mute)
        sent = {k: v for k, v in dataclasses.asdict(update).items() if (v is not None if k in _FLAGS else v)}
        a.stored = dataclasses.replace(a.stored, **sent)
        a._docs.put(a._id, dataclasses.asdict(a.stored))

    def start_capture(self, volume: float | None = None, mute: bool | None = None) -> None:
        a = self._now()
        a.capturing = True
        a._apply_live(volume, mute)

    def stop_capture(self) -> None:
        a = self._now()
        a.capturing = False
        for listener in list(a._listeners):
            listener.close()

    def start_playback(self, device: str, sample_rate: int, channels: int) -> None:
        a = self._now()
        if (device or "default") not in {d.name for d in PLAYBACK}:
            raise InternalError("Playback start failed", resource="camera")
        a.playing = True

    def stop_playback(self) -> None:
        a = self._now()
        a.playing = False

    def listen(self) -> _Listener:
        a = self._now()
        if not a.capturing:
            a.start_capture()
        listener = _Listener(a)
        a._listeners.append(listener)
        return listener

    def talk(self) -> _Talk:
        a = self._now()
        if a._talk is not None:
            raise RateLimited("another talk session is active", retry_after=1)
        a._talk = _Talk(a)
        return a._talk
