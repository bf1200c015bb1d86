"""The camera's audio: a microphone that hears a test tone and the scene, a speaker for two-way talk.

Captured audio is synthetic S16LE PCM, a pure function of (camera key, sample index): a 1 kHz test
tone, the hum of each moving vehicle in the scene (louder the closer it is, i.e. the lower its box), and a
little seeded noise. A listener receives :data:`CHUNK_S` of it per chunk, paced by the world clock
(in ``step`` mode chunks come as time is advanced). Only one talk session at a time: a second is
refused (the device's 4002/429).

The audio configuration is durable, as the device's is: one document per camera in the store,
written when it changes and read back by a new environment (capture and playback start stopped).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from hardware.ports.camera_hw import AudioConfig, AudioDevice, AudioStatus
from hardware.ports.errors import InvalidInput, NotFound, RateLimited, Unavailable
from twin.camera.video.scene import Scene, scene_of
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.clock import SimClock
    from twin.world import World

CHUNK_S = 0.1
ENGINE_LOOKBACK_S = 0.5
"""A vehicle that has not moved in this long is parked: its engine is off, it does not hum."""
TONE_HZ = 1000.0
RATES = (8000, 16000, 32000, 48000)
CAPTURE = (AudioDevice("mic0", "Built-in microphone", 1, RATES),)
PLAYBACK = (AudioDevice("spk0", "Built-in speaker", 1, RATES),)
AUDIO_KIND = "camera_audio"
"""Durable: one document per camera, keyed by its id: the audio configuration."""


def pcm(key: int, scene: Scene, start: int, count: int, rate: int, channels: int, volume: int) -> bytes:
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
    samples = np.clip(signal * (volume / 100) * 32767, -32768, 32767).astype("<i2")
    if channels == 2:
        samples = np.repeat(samples, 2)
    return samples.tobytes()


class _Listener:
    def __init__(self, audio: TwinGatewayAudio) -> None:
        self.audio = audio
        self.closed = False
        self.sample = round(audio._world.env.now * audio.config.sample_rate)

    async def next_chunk(self) -> bytes:
        audio = self.audio
        if self.closed or not audio.capture_running:
            raise Unavailable("capture stopped")
        rate = audio.config.sample_rate
        count = round(CHUNK_S * rate)
        due = (self.sample + count) / rate
        await audio._clock.sleep(due - audio._world.env.now, background=True)
        if self.closed or not audio.capture_running:
            raise Unavailable("capture stopped")
        c = audio.config
        out = pcm(audio._key, audio._scene, self.sample, count, rate, c.channels, c.volume)
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
        self._env = None
        self._reset()

    def _reset(self) -> None:
        self._docs = self._world.store.collection(AUDIO_KIND)
        self.config = self._docs.get_as(self._id, lambda doc: AudioConfig(**doc)) or AudioConfig()
        self.capture_running = False
        self.capture_device = ""
        self.playback_running = False
        self.playback_device = ""
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
        return AudioStatus(
            a.capture_running,
            a.capture_device,
            a.playback_running,
            a.playback_device,
            a._talk is not None,
            a.config,
            a.talk_bytes,
        )

    def set_config(self, config: AudioConfig) -> None:
        a = self._now()
        if config.sample_rate not in RATES:
            raise InvalidInput(f"sample_rate must be one of {list(RATES)}")
        if config.channels not in (1, 2):
            raise InvalidInput("channels must be 1 or 2")
        if not 0 <= config.volume <= 100:
            raise InvalidInput("volume must be between 0 and 100")
        if config.format != "S16LE":
            raise InvalidInput("format must be S16LE")
        a.config = config
        a._docs.put(a._id, dataclasses.asdict(config))
        for listener in a._listeners:
            listener.sample = round(a._world.env.now * config.sample_rate)

    def start_capture(self, device: str) -> None:
        a = self._now()
        device = device or CAPTURE[0].id
        if device not in {d.id for d in CAPTURE}:
            raise NotFound(f"capture device {device} not found")
        a.capture_running, a.capture_device = True, device

    def stop_capture(self) -> None:
        a = self._now()
        a.capture_running = False
        for listener in list(a._listeners):
            listener.close()

    def start_playback(self, device: str) -> None:
        a = self._now()
        device = device or PLAYBACK[0].id
        if device not in {d.id for d in PLAYBACK}:
            raise NotFound(f"playback device {device} not found")
        a.playback_running, a.playback_device = True, device

    def stop_playback(self) -> None:
        a = self._now()
        a.playback_running = False

    def listen(self) -> _Listener:
        a = self._now()
        if not a.capture_running:
            a.start_capture("")
        listener = _Listener(a)
        a._listeners.append(listener)
        return listener

    def talk(self) -> _Talk:
        a = self._now()
        if a._talk is not None:
            raise RateLimited("another talk session is active", retry_after=1)
        a._talk = _Talk(a)
        return a._talk
