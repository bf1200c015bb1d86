"""A deterministic synthetic scene per camera: a static background and a few moving objects.

Everything is a pure function of the camera's seed key and sim time: the same (key, t) gives the
same boxes and the same pixels, so a frame can be rendered for any instant in any order. Objects
(people and vehicles) bounce across the view along triangle waves; their boxes are the ground truth
an AI model's detections can be checked against. Coordinates are normalised to [0, 1] of the
scene's panorama (the renderer shows a window of it: PTZ moves the window, zoom shrinks it).

Light follows the world clock: :func:`daylight` is 0 at night and 1 at noon (UTC hours), with a
short dawn and dusk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.rng import hash_uniform

# (label, colour BGR, width, height) as fractions of the frame.
KINDS = (
    ("person", (60, 60, 230), 0.045, 0.16),
    ("car", (230, 160, 40), 0.14, 0.10),
    ("person", (40, 200, 240), 0.045, 0.16),
    ("truck", (80, 200, 80), 0.20, 0.15),
)


@dataclass(frozen=True, slots=True)
class Box:
    """A ground-truth box: label and normalised top-left corner and size."""

    object_id: int
    label: str
    x: float
    y: float
    w: float
    h: float

    def pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` in pixels of a ``width`` x ``height`` frame."""
        return (
            round(self.x * width),
            round(self.y * height),
            round((self.x + self.w) * width),
            round((self.y + self.h) * height),
        )


@dataclass(frozen=True, slots=True)
class _Mover:
    object_id: int
    label: str
    color: tuple[int, int, int]
    w: float
    h: float
    phase_x: float
    phase_y: float
    speed_x: float
    """Triangle-wave cycles per second."""
    speed_y: float


def daylight(unix_time: float) -> float:
    """Daylight 0..1 at a world instant: sun up from 06:00 to 18:00 UTC, full from mid-morning."""
    hour = (unix_time % 86400) / 3600
    return min(1.0, max(0.0, 1.6 * math.sin(math.pi * (hour - 6.0) / 12.0) + 0.1))


def _triangle(u: float) -> float:
    """0 → 1 → 0 over each unit of ``u``."""
    frac = u % 1.0
    return 2 * frac if frac < 0.5 else 2 * (1 - frac)


class Scene:
    """The scene of one camera, seeded by its stream key (``world.streams.key(camera_id)``)."""

    def __init__(self, key: int, objects: int = len(KINDS)) -> None:
        self.key = key
        u = hash_uniform(key, np.arange(8 * objects + 8))
        self.movers: list[_Mover] = []
        for i in range(objects):
            label, color, w, h = KINDS[i % len(KINDS)]
            r = u[8 * i : 8 * i + 8]
            self.movers.append(
                _Mover(
                    i,
                    label,
                    color,
                    w,
                    h,
                    phase_x=float(r[0]),
                    phase_y=float(r[1]),
                    speed_x=0.02 + 0.06 * float(r[2]),
                    speed_y=0.005 + 0.02 * float(r[3]),
                )
            )
        tail = u[8 * objects :]
        self.hue = float(tail[0])
        self.shapes = [(float(tail[1 + 2 * j]), float(tail[2 + 2 * j])) for j in range(3)]

    def boxes(self, t: float) -> list[Box]:
        """Ground truth at sim time ``t``: every object's box, inside the frame."""
        out = []
        for m in self.movers:
            x = _triangle(m.phase_x + m.speed_x * t) * (1 - m.w)
            y = 0.35 + _triangle(m.phase_y + m.speed_y * t) * (0.65 - m.h)
            out.append(Box(m.object_id, m.label, x, y, m.w, m.h))
        return out

    def color_of(self, object_id: int) -> tuple[int, int, int]:
        return self.movers[object_id].color
