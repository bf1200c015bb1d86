"""A deterministic synthetic scene per camera: a street seen in perspective, with people, cars, trucks
and bikes moving on it.

Everything is a pure function of the camera's seed key and sim time: the same (key, t) gives the
same boxes and the same pixels, so a frame can be rendered for any instant in any order. Coordinates
are normalised to [0, 1] of the scene's panorama (the renderer shows a window of it: PTZ moves the
window, zoom shrinks it).

**Perspective.** The ground is a plane seen from a camera :data:`CAMERA_HEIGHT_M` up, its horizon at
:data:`HORIZON` of the panorama's height. An object ``d`` metres away stands with its feet
``FOCAL * CAMERA_HEIGHT_M / d`` below the horizon and is ``FOCAL * height_m / d`` tall: farther
objects are smaller and higher. Objects move along lanes (sidewalks, a bike lane, two road lanes) at
fixed depths, at their real speeds in metres per second, so far ones also cross the view slower.

A scene has a kind (:data:`SCENES`), chosen per camera group (``fleet.cameras[].scene``):

- ``street``: people walking on both sidewalks, bikes, cars and trucks passing both ways (the default);
- ``empty``: the street only, no objects (nothing to detect);
- ``parking``: cars parked in three rows of bays that move to another bay now and then, and a walker;
- ``crowd``: many people walking across a plaza, nearer and farther.

The boxes are the ground truth an AI model's detections are checked against; each also says how far
its object is, which way it faces and where it is in its stride (the renderer's sprites follow them).
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

HORIZON = 0.36
"""Height of the horizon, as a fraction of the panorama from its top."""
FOCAL = 1.3
"""Panorama heights per metre of object at one metre: the lens's scale."""
CAMERA_HEIGHT_M = 3.6
ASPECT = (1.5 * 16) / (1.25 * 9)
"""Panorama width over height, in pixels of a 16:9 view (see :data:`twin.camera.video.render.PAN_W`)."""

# label -> (width m, height m, speed m/s): sizes of the side views the renderer draws.
SIZES = {
    "person": (0.8, 1.75, 1.35),
    "bicycle": (1.8, 1.85, 4.5),
    "car": (4.4, 1.5, 8.0),
    "truck": (7.6, 3.3, 7.0),
}
STREET = (
    ("person", 10.0),
    ("car", 17.5),
    ("person", 28.0),
    ("truck", 22.0),
    ("bicycle", 14.0),
    ("car", 22.0),
    ("person", 11.5),
    ("person", 27.0),
    ("car", 17.5),
    ("person", 10.5),
    ("person", 29.0),
    ("bicycle", 14.5),
)
"""The street's mix: (label, lane depth in metres), cycled."""
PARKING_KINDS = ("car", "car", "car", "car", "car", "car", "car", "person")
PARK_ROWS_M = (14.0, 19.5, 25.8)
"""Depth of each row of the lot's bays, in metres."""
PARK_BAY_M = 5.2
PARK_STAY_S = (1200.0, 4800.0)
"""A parked vehicle stays in a bay this long (seeded per vehicle) before it moves to the next."""
PARK_DRIVE_S = 20.0
"""How long a move from one bay to the next takes."""
CROWD_DEPTH_M = (9.0, 30.0)

SCENES: dict[str, int] = {"street": len(STREET), "empty": 0, "parking": len(PARKING_KINDS), "crowd": 24}
"""Scene kinds and how many objects each has unless the fleet says ``objects``."""
MAX_OBJECTS = 64
MIN_IN_VIEW = 0.3
"""An object with less than this fraction of its width inside the panorama is not in it."""


def feet_y(depth: float) -> float:
    """Where on the panorama (height fraction) the ground ``depth`` metres away is."""
    return HORIZON + FOCAL * CAMERA_HEIGHT_M / depth


def depth_at(y: float) -> float:
    """The ground's distance in metres at panorama height ``y`` (infinite at and above the horizon)."""
    return math.inf if y <= HORIZON else FOCAL * CAMERA_HEIGHT_M / (y - HORIZON)


def image_x(x_m: float, depth: float) -> float:
    """Panorama x (fraction) of a point ``x_m`` metres right of the view's centre line."""
    return 0.5 + FOCAL * x_m / (depth * ASPECT)


def half_width_m(depth: float) -> float:
    """Half the panorama's width in metres at ``depth``."""
    return 0.5 * depth * ASPECT / FOCAL


@dataclass(frozen=True, slots=True)
class Box:
    """A ground-truth box: label and normalised top-left corner and size; how far the object is
    (metres), which way it faces (1 right, -1 left), its stride phase (0..1) and its look."""

    object_id: int
    label: str
    x: float
    y: float
    w: float
    h: float
    depth: float = 15.0
    facing: int = 1
    step: float = 0.0
    variant: int = 0

    def pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` in pixels of a ``width`` x ``height`` frame."""
        return (
            round(self.x * width),
            round(self.y * height),
            round((self.x + self.w) * width),
            round((self.y + self.h) * height),
        )


def placed(
    object_id: int, label: str, x_m: float, depth: float, facing: int, travelled: float, variant: int
) -> Box:
    """The box of a ``label`` whose centre is ``x_m`` metres right of centre at ``depth``."""
    w_m, h_m, _ = SIZES[label]
    h = FOCAL * h_m / depth
    w = FOCAL * w_m / (depth * ASPECT)
    stride = 1.5 if label == "person" else 2.1 * math.pi * 0.34
    step = (travelled / stride) % 1.0
    return Box(
        object_id, label, image_x(x_m, depth) - w / 2, feet_y(depth) - h, w, h, depth, facing, step, variant
    )


class _Object(Protocol):
    @property
    def object_id(self) -> int: ...
    @property
    def label(self) -> str: ...

    def box(self, t: float) -> Box | None: ...


@dataclass(frozen=True, slots=True)
class _Passer:
    """Crosses the view along a lane and comes back after a gap, as traffic does."""

    object_id: int
    label: str
    depth: float
    facing: int
    speed: float
    gap_m: float
    phase: float
    variant: int

    def box(self, t: float) -> Box | None:
        w_m = SIZES[self.label][0]
        span = 2 * (half_width_m(self.depth) + w_m)
        cycle = span + self.gap_m
        travelled = self.phase * cycle + self.speed * t
        s = travelled % cycle
        if s >= span:
            return None
        x_m = -span / 2 + s
        return placed(
            self.object_id, self.label, self.facing * x_m, self.depth, self.facing, travelled, self.variant
        )


@dataclass(frozen=True, slots=True)
class _Wanderer:
    """A walker on a plaza: back and forth across it while drifting nearer and farther."""

    object_id: int
    label: str
    phase_x: float
    phase_d: float
    speed_x: float
    """Triangle-wave cycles per second."""
    speed_d: float
    variant: int

    def box(self, t: float) -> Box:
        near, far = CROWD_DEPTH_M
        depth = near + (far - near) * _triangle(self.phase_d + self.speed_d * t)
        u = self.phase_x + self.speed_x * t
        reach = 0.96 * half_width_m(near) - SIZES[self.label][0]
        x_m = (2 * _triangle(u) - 1) * reach * depth / near
        facing = 1 if u % 1.0 < 0.5 else -1
        return placed(self.object_id, self.label, x_m, depth, facing, abs(u) * 4 * reach, self.variant)


@dataclass(frozen=True, slots=True)
class _Parked:
    """A car in one of its two bays: it moves to the other every ``stay`` seconds, driving there in
    :data:`PARK_DRIVE_S`. No two cars share a bay while the lot has two bays per car."""

    object_id: int
    label: str
    bays: tuple[tuple[float, float], tuple[float, float]]
    """(x metres, depth metres) of its two bays."""
    stay: float
    offset: float
    variant: int

    def box(self, t: float) -> Box:
        since = t + self.offset
        n = math.floor(since / self.stay)
        x, d = self.bays[n % 2]
        moving = since - n * self.stay
        facing = 1
        if moving < PARK_DRIVE_S:
            x0, d0 = self.bays[(n - 1) % 2]
            f = moving / PARK_DRIVE_S
            facing = 1 if x >= x0 else -1
            x, d = x0 + (x - x0) * f, d0 + (d - d0) * f
        return placed(self.object_id, self.label, x, d, facing, x, self.variant)


def parking_bays() -> list[tuple[float, float]]:
    """Every bay of the lot, row by row from the nearest: (x metres, depth metres)."""
    out = []
    for d in PARK_ROWS_M:
        n = int((2 * half_width_m(d) - SIZES["car"][0]) // PARK_BAY_M)
        out += [((j - (n - 1) / 2) * PARK_BAY_M, d) for j in range(n)]
    return out


def daylight(unix_time: float) -> float:
    """Daylight 0..1 at a world instant: sun up from 06:00 to 18:00 UTC, full from mid-morning."""
    hour = (unix_time % 86400) / 3600
    return min(1.0, max(0.0, 1.6 * math.sin(math.pi * (hour - 6.0) / 12.0) + 0.1))


def sun_side(unix_time: float) -> float:
    """Where the sun is across the sky: -1 rising (east, left), 0 noon, 1 setting (west, right)."""
    hour = (unix_time % 86400) / 3600
    return max(-1.0, min(1.0, (hour - 12.0) / 6.0))


def _triangle(u: float) -> float:
    """0 → 1 → 0 over each unit of ``u``."""
    frac = u % 1.0
    return 2 * frac if frac < 0.5 else 2 * (1 - frac)


def _street(i: int, r: np.ndarray) -> _Passer:
    label, depth = STREET[i % len(STREET)]
    depth *= 1.0 + 0.06 * (float(r[4]) - 0.5) if label == "person" else 1.0
    facing = 1 if depth < 20 else -1  # traffic keeps right: the near lane goes right
    if label == "person":
        facing = 1 if r[1] < 0.5 else -1
    speed = SIZES[label][2] * (0.75 + 0.5 * float(r[2]))
    gap = (6.0 if label == "person" else 8.0) * (0.5 + 2.0 * float(r[3]))
    return _Passer(i, label, depth, facing, speed, gap, float(r[0]), int(r[5] * 1000))


def _walker(i: int, r: np.ndarray) -> _Wanderer:
    return _Wanderer(
        i,
        "person",
        phase_x=float(r[0]),
        phase_d=float(r[1]),
        speed_x=0.004 + 0.012 * float(r[2]),
        speed_d=0.002 + 0.008 * float(r[3]),
        variant=int(r[5] * 1000),
    )


def _parking(i: int, r: np.ndarray, bays: list[tuple[float, float]], cars: int) -> _Object:
    label = PARKING_KINDS[i % len(PARKING_KINDS)]
    if label == "person":
        return _walker(i, r)
    car = sum(PARKING_KINDS[j % len(PARKING_KINDS)] != "person" for j in range(i))
    mine = (bays[car % len(bays)], bays[(car + cars) % len(bays)])
    stay = PARK_STAY_S[0] + (PARK_STAY_S[1] - PARK_STAY_S[0]) * float(r[2])
    return _Parked(i, label, mine, stay, offset=float(r[3]) * stay, variant=int(r[5] * 1000))


def _clip(box: Box) -> Box | None:
    """``box`` cut to the panorama, or None when too little of it is inside."""
    x0, x1 = max(0.0, box.x), min(1.0, box.x + box.w)
    if x1 - x0 < MIN_IN_VIEW * box.w:
        return None
    if x0 == box.x and x1 == box.x + box.w:
        return box
    return Box(
        box.object_id, box.label, x0, box.y, x1 - x0, box.h, box.depth, box.facing, box.step, box.variant
    )


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
        bays = parking_bays()
        order = np.argsort(hash_uniform(key, np.arange(len(bays)) + (1 << 32)))
        bays = [bays[j] for j in order]
        cars = sum(PARKING_KINDS[i % len(PARKING_KINDS)] != "person" for i in range(objects))
        for i in range(objects):
            r = u[8 * i : 8 * i + 8]
            if kind == "parking":
                self.movers.append(_parking(i, r, bays, cars))
            elif kind == "crowd":
                self.movers.append(_walker(i, r))
            else:
                self.movers.append(_street(i, r))
        self.look = float(u[8 * objects])
        """Seeds the street's look (its buildings and trees)."""

    def placements(self, t: float) -> list[Box]:
        """Every object at sim time ``t`` with its whole box (it may reach past the panorama's edge),
        nearest last: the order to draw them in."""
        boxes = [b for m in self.movers if (b := m.box(t)) is not None]
        return sorted(boxes, key=lambda b: -b.depth)

    def boxes(self, t: float) -> list[Box]:
        """Ground truth at sim time ``t``: the objects in the panorama, cut to it, in object order."""
        out = [c for m in self.movers if (b := m.box(t)) is not None and (c := _clip(b)) is not None]
        return out


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
