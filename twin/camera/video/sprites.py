"""Side-view sprites of the scene's objects: people walking, bikes with their riders, cars, trucks.

A sprite is drawn once per (label, look, stride frame, size, light) with OpenCV's anti-aliased
primitives into a BGR picture and an alpha mask, then cached: objects move along lanes at fixed
depths, so the same few sizes come back frame after frame and a frame costs only the blits. Shapes are
laid out in metres, feet at the bottom centre, facing right; a sprite facing left is the mirror image.

Looks (shirt, trousers, body paint) are picked from small palettes by the object's ``variant``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import cv2
import numpy as np

from twin.camera.video.scene import SIZES

STRIDE_FRAMES = 8
"""Frames of a walking or pedalling cycle."""
CACHE_BYTES = 48 * 1024 * 1024
"""What one renderer's sprites may hold; the least recently used go first beyond it."""
SHIRTS = (
    (40, 40, 200),
    (200, 120, 30),
    (60, 160, 60),
    (230, 230, 230),
    (40, 40, 40),
    (0, 140, 230),
    (140, 60, 140),
)
TROUSERS = ((60, 40, 30), (40, 40, 40), (130, 110, 90), (90, 60, 40), (150, 140, 130))
SKINS = ((140, 170, 225), (90, 125, 185), (60, 85, 130), (120, 150, 200))
HAIR = ((20, 20, 25), (30, 60, 100), (40, 40, 40), (90, 140, 180))
PAINTS = (
    (30, 30, 180),
    (200, 200, 205),
    (40, 40, 40),
    (150, 90, 20),
    (235, 235, 240),
    (110, 110, 115),
    (30, 90, 30),
)
CARGO = ((225, 225, 225), (200, 210, 215), (60, 120, 200), (190, 190, 190))


@dataclass(frozen=True, slots=True)
class Sprite:
    """A drawn object: BGR pixels and the weights to blend them (``alpha``, ``1 - alpha``)."""

    bgr: np.ndarray
    alpha: np.ndarray
    rest: np.ndarray


class _Pen:
    """Draws the same shape into a picture and its mask; takes metres (x right, y up from the feet)."""

    def __init__(self, w_px: int, h_px: int, w_m: float, h_m: float) -> None:
        self.img = np.zeros((h_px, w_px, 3), np.uint8)
        self.mask = np.zeros((h_px, w_px), np.uint8)
        self.glow = np.zeros((h_px, w_px), np.uint8)
        """Where the object's own lights shine (they keep their brightness in the dark)."""
        self.sx, self.sy = w_px / w_m, h_px / h_m
        self.w_m, self.h_m = w_m, h_m

    def pt(self, x: float, y: float) -> tuple[int, int]:
        return round((x + self.w_m / 2) * self.sx * 16), round((self.h_m - y) * self.sy * 16)

    def poly(self, points: list[tuple[float, float]], color: tuple[int, ...]) -> None:
        pts = np.array([self.pt(x, y) for x, y in points], np.int32)
        cv2.fillPoly(self.img, [pts], color, cv2.LINE_AA, 4)
        cv2.fillPoly(self.mask, [pts], 255, cv2.LINE_AA, 4)

    def lamp(self, points: list[tuple[float, float]], color: tuple[int, ...], lit: bool) -> None:
        """A light of the object's own: a shape that keeps its brightness after dark when ``lit``."""
        self.poly(points, color)
        if lit:
            pts = np.array([self.pt(x, y) for x, y in points], np.int32)
            cv2.fillPoly(self.glow, [pts], 255, cv2.LINE_8, 4)

    def line(
        self, a: tuple[float, float], b: tuple[float, float], width_m: float, color: tuple[int, ...]
    ) -> None:
        t = max(1, round(width_m * self.sy))
        cv2.line(self.img, self.pt(*a), self.pt(*b), color, t, cv2.LINE_AA, 4)
        cv2.line(self.mask, self.pt(*a), self.pt(*b), 255, t, cv2.LINE_AA, 4)

    def disc(self, c: tuple[float, float], r_m: float, color: tuple[int, ...], ring_m: float = 0.0) -> None:
        r = max(16, round(r_m * self.sy * 16))
        if ring_m:
            t = max(1, round(ring_m * self.sy))
            cv2.circle(self.img, self.pt(*c), r, color, t, cv2.LINE_AA, 4)
            cv2.circle(self.mask, self.pt(*c), r, 255, t, cv2.LINE_AA, 4)
            return
        cv2.circle(self.img, self.pt(*c), r, color, -1, cv2.LINE_AA, 4)
        cv2.circle(self.mask, self.pt(*c), r, 255, -1, cv2.LINE_AA, 4)


def _pick(palette: tuple, variant: int, salt: int) -> tuple[int, int, int]:
    return palette[(variant * 7 + salt * 13 + variant // 5) % len(palette)]


def _limb(hip: tuple[float, float], angle: float, bend: float, length: float) -> tuple[tuple, tuple]:
    """Knee and foot of a leg (or elbow and hand of an arm) swung ``angle`` radians from straight down."""
    knee = (hip[0] + length * math.sin(angle), hip[1] - length * math.cos(angle))
    a2 = angle - bend
    foot = (knee[0] + length * math.sin(a2), knee[1] - length * math.cos(a2))
    return knee, foot


def _person(pen: _Pen, variant: int, step: float) -> None:
    shirt, trousers = _pick(SHIRTS, variant, 1), _pick(TROUSERS, variant, 2)
    skin, hair = _pick(SKINS, variant, 3), _pick(HAIR, variant, 4)
    swing = math.radians(22) * math.sin(2 * math.pi * step)
    hip, shoulder = (0.0, 0.92), (0.03, 1.42)
    back = tuple(int(c * 0.7) for c in trousers)
    for sign, color in ((-1, back), (1, trousers)):  # the far leg first, a little darker
        a = sign * swing
        knee, foot = _limb(hip, a, -max(0.0, -a) * 1.2 - 0.05, 0.45)
        pen.line(hip, knee, 0.15, color)
        pen.line(knee, foot, 0.12, color)
        fx, fy = foot
        shoe = [(fx - 0.07, fy + 0.05), (fx + 0.15, fy + 0.02), (fx + 0.15, fy - 0.04), (fx - 0.08, fy)]
        pen.poly(shoe, (25, 25, 30))
    far_arm = tuple(int(c * 0.75) for c in shirt)
    elbow, hand = _limb(shoulder, swing, 0.25, 0.3)
    pen.line(shoulder, elbow, 0.1, far_arm)
    pen.line(elbow, hand, 0.08, far_arm)
    pen.poly([(-0.13, 0.88), (0.13, 0.88), (0.16, 1.44), (0.0, 1.5), (-0.12, 1.44)], shirt)
    pen.line((0.03, 1.46), (0.05, 1.52), 0.08, skin)
    pen.disc((0.06, 1.62), 0.115, skin)
    pen.poly([(-0.07, 1.62), (-0.02, 1.74), (0.1, 1.745), (0.17, 1.68), (0.12, 1.66), (0.02, 1.6)], hair)
    elbow, hand = _limb(shoulder, -swing, 0.25, 0.3)
    pen.line(shoulder, elbow, 0.1, shirt)
    pen.line(elbow, hand, 0.08, shirt)
    pen.disc(hand, 0.05, skin)


def _bicycle(pen: _Pen, variant: int, step: float) -> None:
    frame = _pick(PAINTS, variant, 5)
    shirt, trousers, skin = _pick(SHIRTS, variant, 6), _pick(TROUSERS, variant, 7), _pick(SKINS, variant, 8)
    rear, front, crank = (-0.55, 0.34), (0.55, 0.34), (-0.05, 0.32)
    seat, head = (-0.2, 0.92), (0.38, 0.95)
    for c in (rear, front):
        pen.disc(c, 0.32, (25, 25, 25), ring_m=0.05)
        pen.line((c[0] - 0.3, c[1]), (c[0] + 0.3, c[1]), 0.01, (120, 120, 120))
    for a, b in ((rear, crank), (crank, seat), (seat, head), (crank, head), (rear, seat), (head, front)):
        pen.line(a, b, 0.05, frame)
    pen.line((0.35, 1.05), (0.48, 1.07), 0.04, (30, 30, 30))
    pen.line((-0.3, 0.97), (-0.08, 0.97), 0.06, (30, 30, 30))
    hip, shoulder = (-0.18, 1.0), (0.15, 1.48)
    for k, color in ((0.5, tuple(int(c * 0.7) for c in trousers)), (0.0, trousers)):
        ang = 2 * math.pi * (step + k)
        pedal = (crank[0] + 0.17 * math.cos(ang), crank[1] + 0.17 * math.sin(ang))
        dx, dy = pedal[0] - hip[0], pedal[1] - hip[1]
        dist = min(0.88, math.hypot(dx, dy))
        lift = math.sqrt(max(0.0, 0.44**2 - (dist / 2) ** 2))
        knee = (hip[0] + dx / 2 + lift * 0.9, hip[1] + dy / 2 + lift * 0.4)
        pen.line(hip, knee, 0.14, color)
        pen.line(knee, pedal, 0.11, color)
    pen.poly([(-0.3, 0.95), (-0.05, 1.0), (0.25, 1.5), (0.05, 1.55)], shirt)
    pen.line(shoulder, (0.42, 1.07), 0.08, shirt)
    pen.disc((0.26, 1.65), 0.11, skin)
    pen.poly([(0.12, 1.66), (0.2, 1.79), (0.36, 1.78), (0.4, 1.68)], frame)  # helmet


def _car(pen: _Pen, variant: int, lit: bool) -> None:
    paint = _pick(PAINTS, variant, 9)
    dark = tuple(int(c * 0.6) for c in paint)
    pen.poly([(-2.2, 0.3), (2.2, 0.3), (2.2, 0.62), (2.05, 0.78), (1.0, 0.86), (0.35, 1.42), (-1.15, 1.45),
              (-1.75, 0.92), (-2.18, 0.86)], paint)  # fmt: skip
    glass = (70, 55, 45)
    pen.poly([(0.25, 1.35), (0.85, 0.86), (-0.35, 0.86), (-0.35, 1.35)], glass)
    pen.poly([(-0.5, 1.35), (-0.5, 0.86), (-1.6, 0.86), (-1.08, 1.36)], glass)
    pen.line((-0.42, 0.4), (-0.42, 1.38), 0.04, dark)
    pen.line((0.6, 0.45), (0.75, 0.86), 0.03, dark)  # the front door's edge
    pen.line((-2.2, 0.42), (2.2, 0.42), 0.08, dark)
    pen.line((0.2, 0.78), (0.45, 0.78), 0.05, dark)  # door handles
    pen.line((-0.95, 0.78), (-0.7, 0.78), 0.05, dark)
    pen.poly([(0.85, 0.9), (1.05, 0.9), (1.0, 1.02), (0.85, 1.0)], dark)  # the mirror
    for x in (-1.35, 1.35):
        pen.disc((x, 0.33), 0.34, (20, 20, 22))
        pen.disc((x, 0.33), 0.17, (150, 150, 155))
    pen.lamp(
        [(2.05, 0.66), (2.2, 0.66), (2.2, 0.76), (2.0, 0.76)],
        (200, 240, 255) if lit else (170, 200, 210),
        lit,
    )
    pen.lamp(
        [(-2.2, 0.66), (-2.06, 0.66), (-2.06, 0.8), (-2.18, 0.8)],
        (40, 40, 255) if lit else (30, 30, 160),
        lit,
    )


def _truck(pen: _Pen, variant: int, lit: bool) -> None:
    cab, cargo = _pick(PAINTS, variant, 10), _pick(CARGO, variant, 11)
    pen.poly([(-3.8, 0.55), (3.8, 0.55), (3.8, 0.8), (-3.8, 0.8)], (35, 35, 38))
    pen.poly([(-3.8, 0.75), (2.05, 0.75), (2.05, 3.3), (-3.8, 3.3)], cargo)
    pen.line((-3.7, 1.1), (1.95, 1.1), 0.12, tuple(int(c * 0.75) for c in cargo))
    pen.poly([(2.2, 0.55), (3.8, 0.55), (3.8, 1.9), (3.4, 2.7), (2.2, 2.75)], cab)
    pen.poly([(2.95, 1.75), (3.62, 1.75), (3.3, 2.5), (2.95, 2.52)], (70, 55, 45))
    for x in (-2.8, -1.75, 2.95):
        pen.disc((x, 0.48), 0.48, (20, 20, 22))
        pen.disc((x, 0.48), 0.22, (140, 140, 145))
    pen.lamp(
        [(3.65, 0.9), (3.8, 0.9), (3.8, 1.1), (3.65, 1.1)], (200, 240, 255) if lit else (170, 200, 210), lit
    )
    pen.lamp(
        [(-3.8, 0.9), (-3.68, 0.9), (-3.68, 1.2), (-3.8, 1.2)], (40, 40, 255) if lit else (30, 30, 160), lit
    )


def draw(
    label: str, variant: int, frame: int, w_px: int, h_px: int, lit: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``label`` sprite (facing right) of ``w_px`` x ``h_px``: BGR, its 0..255 mask, and where its
    lights shine when ``lit`` (headlights and tail lights after dark)."""
    w_m, h_m, _ = SIZES[label]
    pen = _Pen(w_px, h_px, w_m, h_m)
    step = frame / STRIDE_FRAMES
    if label == "person":
        _person(pen, variant, step)
    elif label == "bicycle":
        _bicycle(pen, variant, step)
    elif label == "truck":
        _truck(pen, variant, lit)
    else:
        _car(pen, variant, lit)
    return pen.img, pen.mask, pen.glow


class Sprites:
    """Sprites as the renderer blends them, cached by everything that shapes their pixels; ``shade``
    turns a drawn BGR sprite into its look in the current light and weather (a per-pixel colour map),
    except where its lights shine when ``lit``."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple, Sprite] = OrderedDict()
        self.bytes = 0

    def get(
        self,
        label: str,
        variant: int,
        step: float,
        facing: int,
        size: tuple[int, int],
        lit: bool,
        shade: tuple,
    ) -> Sprite:
        """``shade`` is ``(key, function)``: the key names the colour map in the cache."""
        moving = label in ("person", "bicycle")
        frame = int(step * STRIDE_FRAMES) % STRIDE_FRAMES if moving else 0
        key = (label, variant % 97, frame, facing, size, lit, shade[0])
        sprite = self._cache.get(key)
        if sprite is not None:
            self._cache.move_to_end(key)
            return sprite
        img, mask, glow = draw(label, variant, frame, size[0], size[1], lit)
        if facing < 0:
            img, mask, glow = img[:, ::-1], mask[:, ::-1], glow[:, ::-1]
        alpha = mask.astype(np.float32) / 255
        shaded = np.ascontiguousarray(shade[1](img))
        np.copyto(shaded, img, where=glow[:, :, None] > 0)  # lights stay bright
        sprite = Sprite(shaded, np.ascontiguousarray(alpha), 1.0 - alpha)
        self._cache[key] = sprite
        self.bytes += _size(sprite)
        while self.bytes > CACHE_BYTES and len(self._cache) > 1:
            self.bytes -= _size(self._cache.popitem(last=False)[1])
        return sprite


def _size(sprite: Sprite) -> int:
    return sprite.bgr.nbytes + sprite.alpha.nbytes + sprite.rest.nbytes


def blit(img: np.ndarray, sprite: Sprite, x: int, y: int) -> None:
    """Blend ``sprite`` into ``img`` with its top-left corner at (x, y), cut at the frame's edges."""
    h, w = sprite.alpha.shape
    H, W = img.shape[:2]
    x0, y0, x1, y1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if x1 <= x0 or y1 <= y0:
        return
    sx, sy = x0 - x, y0 - y
    part = (slice(sy, sy + y1 - y0), slice(sx, sx + x1 - x0))
    roi = img[y0:y1, x0:x1]
    roi[:] = cv2.blendLinear(sprite.bgr[part], roi, sprite.alpha[part], sprite.rest[part])


def shadow(img: np.ndarray, cx: int, cy: int, rx: int, ry: int, strength: float) -> None:
    """Darken a soft ellipse on the ground around (cx, cy): an object's shadow."""
    if strength <= 0.02 or rx < 1 or ry < 1:
        return
    H, W = img.shape[:2]
    x0, y0, x1, y1 = max(0, cx - rx), max(0, cy - ry), min(W, cx + rx + 1), min(H, cy + ry + 1)
    if x1 <= x0 or y1 <= y0:
        return
    yy, xx = np.ogrid[y0 - cy : y1 - cy, x0 - cx : x1 - cx]
    d = (xx / rx) ** 2 + (yy / ry) ** 2
    keep = (1.0 - strength * np.clip(1.3 - d, 0.0, 1.0)).astype(np.float32)
    roi = img[y0:y1, x0:x1]
    roi[:] = (roi * keep[:, :, None]).astype(np.uint8)
