"""A deterministic synthetic scene per camera: a static background and a few moving objects.

Everything is a pure function of the camera's seed key and sim time: the same (key, t) gives the
same boxes and the same pixels, so a frame can be rendered for any instant in any order. Objects
(people and vehicles) bounce across the view along triangle waves; their boxes are the ground truth
an AI model's detections can be checked against. Coordinates are normalised to [0, 1] of the
scene's panorama (the renderer shows a window of it: PTZ moves the window, zoom shrinks it).

A scene has a kind (:data:`SCENES`), chosen per camera group (``fleet.cameras[].scene``):

- ``street``: people, cars and trucks crossing the view (the default);
- ``empty``: the background only, no objects (nothing to detect);
- ``parking``: parked cars and trucks that move to another bay now and then, and a walker;
- ``crowd``: many people walking.

:func:`scene_of` is the one place a camera's scene is made: video, detections, audio, radar and the
automation extensions all see the same objects for a camera.

Light follows the world clock: :func:`daylight` is 0 at night and 1 at noon (UTC hours), with a
short dawn and dusk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from twin.engine import Engine
from twin.rng import hash_uniform

# (label, colour BGR, width, height) as fractions of the frame.
KINDS = (
    ("person", (60, 60, 230), 0.045, 0.16),
    ("car", (230, 160, 40), 0.14, 0.10),
    ("person", (40, 200, 240), 0.045, 0.16),
    ("truck", (80, 200, 80), 0.20, 0.15),
)
PARKING_KINDS = (
    ("car", (230, 160, 40), 0.14, 0.10),
    ("car", (180, 180, 190), 0.14, 0.10),
    ("car", (40, 40, 160), 0.14, 0.10),
    ("truck", (80, 200, 80), 0.20, 0.15),
    ("car", (30, 30, 30), 0.14, 0.10),
    ("car", (200, 120, 120), 0.14, 0.10),
    ("car", (120, 200, 220), 0.14, 0.10),
    ("person", (60, 60, 230), 0.045, 0.16),
)
CROWD_COLOURS = ((60, 60, 230), (40, 200, 240), (200, 80, 160), (90, 90, 90), (230, 200, 60), (40, 140, 40))
PERSON_SIZE = (0.045, 0.16)

SCENES: dict[str, int] = {"street": len(KINDS), "empty": 0, "parking": len(PARKING_KINDS), "crowd": 24}
"""Scene kinds and how many objects each has unless the fleet says ``objects``."""
MAX_OBJECTS = 64
PARK_ROWS = (0.42, 0.72)
"""Top of each row of parking bays, as a fraction of the frame height."""
PARK_STAY_S = (1200.0, 4800.0)
"""A parked vehicle stays in a bay this long (seeded per vehicle) before it moves to the next."""
PARK_DRIVE_S = 20.0
"""How long a move from one bay to the next takes."""
_BAY_COUNTER = 1 << 32
"""Counters of the bay draws: far above the per-object draws."""


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


class _Object(Protocol):
    @property
    def object_id(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def color(self) -> tuple[int, int, int]: ...

    def box(self, t: float) -> Box: ...


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

    def box(self, t: float) -> Box:
        x = _triangle(self.phase_x + self.speed_x * t) * (1 - self.w)
        y = 0.35 + _triangle(self.phase_y + self.speed_y * t) * (0.65 - self.h)
        return Box(self.object_id, self.label, x, y, self.w, self.h)


@dataclass(frozen=True, slots=True)
class _Parked:
    """A vehicle in a bay: a new bay every ``stay`` seconds, driven to in :data:`PARK_DRIVE_S`."""

    key: int
    object_id: int
    label: str
    color: tuple[int, int, int]
    w: float
    h: float
    stay: float
    offset: float

    def _bay(self, n: int) -> tuple[float, float]:
        base = _BAY_COUNTER + (n * MAX_OBJECTS + self.object_id) * 2
        u = hash_uniform(self.key, [base, base + 1])
        row = PARK_ROWS[int(u[1] * len(PARK_ROWS))]
        return float(u[0]) * (1 - self.w), min(row, 1 - self.h)

    def box(self, t: float) -> Box:
        since = t + self.offset
        n = math.floor(since / self.stay)
        x, y = self._bay(n)
        moving = since - n * self.stay
        if moving < PARK_DRIVE_S:
            x0, y0 = self._bay(n - 1)
            f = moving / PARK_DRIVE_S
            x, y = x0 + (x - x0) * f, y0 + (y - y0) * f
        return Box(self.object_id, self.label, x, y, self.w, self.h)


def daylight(unix_time: float) -> float:
    """Daylight 0..1 at a world instant: sun up from 06:00 to 18:00 UTC, full from mid-morning."""
    hour = (unix_time % 86400) / 3600
    return min(1.0, max(0.0, 1.6 * math.sin(math.pi * (hour - 6.0) / 12.0) + 0.1))


def _triangle(u: float) -> float:
    """0 → 1 → 0 over each unit of ``u``."""
    frac = u % 1.0
    return 2 * frac if frac < 0.5 else 2 * (1 - frac)


def _street(i: int, r: np.ndarray) -> _Mover:
    label, color, w, h = KINDS[i % len(KINDS)]
    return _Mover(
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


def _walker(i: int, r: np.ndarray, color: tuple[int, int, int]) -> _Mover:
    """A person at walking pace, a little smaller or larger than the street's."""
    size = 0.8 + 0.4 * float(r[4])
    return _Mover(
        i,
        "person",
        color,
        PERSON_SIZE[0] * size,
        PERSON_SIZE[1] * size,
        phase_x=float(r[0]),
        phase_y=float(r[1]),
        speed_x=0.008 + 0.025 * float(r[2]),
        speed_y=0.003 + 0.012 * float(r[3]),
    )


def _parking(key: int, i: int, r: np.ndarray) -> _Object:
    label, color, w, h = PARKING_KINDS[i % len(PARKING_KINDS)]
    if label == "person":
        return _walker(i, r, color)
    stay = PARK_STAY_S[0] + (PARK_STAY_S[1] - PARK_STAY_S[0]) * float(r[2])
    return _Parked(key, i, label, color, w, h, stay, offset=float(r[3]) * stay)


class Scene:
    """The scene of one camera, seeded by its stream key (``world.streams.key(f"{camera}/scene")``):
    ``objects`` of the ``kind``'s mix (its :data:`SCENES` count when ``None``)."""

    def __init__(self, key: int, objects: int | None = None, kind: str = "street") -> None:
        if kind not in SCENES:
            raise ValueError(f"unknown scene {kind!r}; known: {', '.join(SCENES)}")
        objects = SCENES[kind] if objects is None else objects
        if not 0 <= objects <= MAX_OBJECTS:
            raise ValueError(f"objects must be between 0 and {MAX_OBJECTS}")
        self.key = key
        self.kind = kind
        u = hash_uniform(key, np.arange(8 * objects + 8))
        self.movers: list[_Object] = []
        for i in range(objects):
            r = u[8 * i : 8 * i + 8]
            if kind == "parking":
                self.movers.append(_parking(key, i, r))
            elif kind == "crowd":
                self.movers.append(_walker(i, r, CROWD_COLOURS[i % len(CROWD_COLOURS)]))
            else:
                self.movers.append(_street(i, r))
        tail = u[8 * objects :]
        self.hue = float(tail[0])
        self.shapes = [(float(tail[1 + 2 * j]), float(tail[2 + 2 * j])) for j in range(3)]

    def boxes(self, t: float) -> list[Box]:
        """Ground truth at sim time ``t``: every object's box, inside the frame."""
        return [m.box(t) for m in self.movers]

    def color_of(self, object_id: int) -> tuple[int, int, int]:
        return self.movers[object_id].color


class SceneWorld(Engine, Protocol):
    """What a scene needs of the world: the engine, whose config has each camera's group (its scene kind)."""


@lru_cache(maxsize=256)
def _scene(key: int, objects: int | None, kind: str) -> Scene:
    return Scene(key, objects, kind)


def scene_of(world: SceneWorld, camera_id: str) -> Scene:
    """The scene ``camera_id`` sees in ``world``: the fleet's scene kind and object count, seeded by
    the camera's ``{camera_id}/scene`` stream. Every consumer of a camera's scene asks here."""
    spec = world.config.spec_by_camera().get(camera_id, world.config.cameras)
    return _scene(world.streams.key(f"{camera_id}/scene"), spec.objects, spec.scene)
