"""The weather a camera sees: clear, rain, fog or glare, at an intensity 0..1.

Set by the scenario actions ``weather_rain``, ``weather_fog``, ``weather_glare`` and ``weather_clear``
(:mod:`twin.camera.actions`); kept in the world's store (collection :data:`KIND`, one document per
camera), so a snapshot, a restore and a reset carry it like the rest of the world. It changes the
picture (:mod:`twin.camera.video.render`: rain streaks and a darker, duller street; fog thickening with
distance; the sun's glare and lens flare) and what the AI model sees (:func:`visibility`).

The overlays are drawn once per output size and view and cached: a frame costs one saturating add.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np

from twin.rng import hash_uniform
from twin.store import Store

KIND = "camera_weather"
KINDS = ("clear", "rain", "fog", "glare")
RAIN_LAYERS = 4
"""Precomputed rain layers, cycled :data:`RAIN_HZ` times per second of world time."""
RAIN_HZ = 12


@dataclass(frozen=True, slots=True)
class Weather:
    kind: str = "clear"
    intensity: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown weather {self.kind!r}; known: {', '.join(KINDS)}")
        if not 0.0 <= self.intensity <= 1.0:
            raise ValueError("intensity must be between 0 and 1")

    def of(self, kind: str) -> float:
        """This weather's intensity if it is ``kind``, else 0."""
        return self.intensity if self.kind == kind else 0.0


CLEAR = Weather()


class _Stored(Protocol):
    @property
    def store(self) -> Store: ...


def weather_of(world: _Stored, camera_id: str) -> Weather:
    doc = world.store.collection(KIND).get(camera_id)
    return CLEAR if doc is None else Weather(str(doc["kind"]), float(doc["intensity"]))


def set_weather(world: _Stored, camera_id: str, weather: Weather) -> None:
    docs = world.store.collection(KIND)
    if weather.kind == "clear":
        docs.delete(camera_id)
    else:
        docs.put(camera_id, {"kind": weather.kind, "intensity": weather.intensity})


def visibility(weather: Weather, daylight: float, night: bool, ir_led: int, light: int) -> float:
    """How well the AI model sees, 0..1: 1 in clear daylight; less in the dark without IR, and in rain,
    fog or glare."""
    if night:
        light_q = 0.7 + 0.25 * ir_led / 100
    else:
        light_q = min(1.0, 0.35 + 0.65 * min(1.0, daylight / 0.5) + 0.4 * light / 100)
    return (
        light_q
        * (1 - 0.3 * weather.of("rain"))
        * (1 - 0.55 * weather.of("fog"))
        * (1 - 0.35 * weather.of("glare"))
    )


def fog_factor(depth: float, intensity: float) -> float:
    """How much of a thing ``depth`` metres away fog hides (0..1)."""
    if intensity <= 0:
        return 0.0
    return 1.0 - math.exp(-depth * intensity / 24.0)


def rain_layers(key: int, width: int, height: int, intensity: float) -> list[np.ndarray]:
    """:data:`RAIN_LAYERS` pictures of falling streaks (BGR, added to a frame), seeded by ``key``."""
    count = int(width * height / 900 * intensity) + 1
    layers = []
    for n in range(RAIN_LAYERS):
        u = hash_uniform(key, np.arange(4 * count) + n * 4 * count + (1 << 36)).reshape(count, 4)
        layer = np.zeros((height, width, 3), np.uint8)
        length = u[:, 2] * height * 0.05 + height * 0.015
        x0, y0 = u[:, 0] * width, u[:, 1] * height
        for (x, y), ln, lv in zip(np.stack([x0, y0], 1), length, u[:, 3], strict=True):
            level = int(40 + 60 * lv)
            end = (int(x - 0.12 * ln), int(y + ln))
            cv2.line(layer, (int(x), int(y)), end, (level, level, level), 1, cv2.LINE_AA)
        layers.append(layer)
    return layers


def glare_layer(width: int, height: int, sun_x: float, intensity: float) -> np.ndarray:
    """The sun low in the view at ``sun_x`` (fraction of the width): a bright bloom, a veil over the
    whole picture and a row of lens-flare rings across the centre (BGR, added to a frame)."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    sx, sy = sun_x * width, 0.12 * height
    r = np.hypot(xx - sx, yy - sy) / max(width, height)
    bloom = 255 * intensity * (np.exp(-((r / 0.12) ** 2)) + 0.35 * np.exp(-r / 0.45) + 0.12)
    layer = np.repeat(bloom[:, :, None], 3, axis=2)
    layer[:, :, 0] *= 0.85  # warm
    cx, cy = width / 2, height / 2
    for k, (size, tint) in enumerate(
        ((0.05, (0.6, 0.9, 1.0)), (0.09, (1.0, 0.7, 0.5)), (0.03, (0.7, 1.0, 0.7)))
    ):
        f = 0.6 + 0.55 * k
        px, py = sx + (cx - sx) * 2 * f, sy + (cy - sy) * 2 * f
        ring = np.exp(-((np.hypot(xx - px, yy - py) / (size * width)) ** 4)) * 90 * intensity
        for c in range(3):
            layer[:, :, c] += ring * tint[c]
    return np.clip(layer, 0, 255).astype(np.uint8)
