"""The street behind the objects, as a panorama in perspective, lit for the time of day.

Across the street a row of shops and houses stands on the far sidewalk; behind them a hazy skyline;
a two-lane road with a dashed centre line and a zebra crossing; a paved near sidewalk whose joints run
to the vanishing point; lamp posts and trees. Sizes follow :mod:`twin.camera.video.scene`'s ground
plane, so a lamp post far away is small and high, like the people next to it.

:func:`palette` turns daylight into the light of the hour: a blue day sky, an orange dawn or dusk,
a dark night with lit windows and street lamps. In IR night mode (:func:`panorama` with ``ir``) the
picture is what an IR-lit camera sees: gray, the sky black, the ground fading with distance from the
camera's LEDs. Fog (intensity 0..1) hides far things first; rain darkens and dulls the street.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from twin.camera.video.scene import HORIZON, depth_at, feet_y, half_width_m, image_x
from twin.camera.video.weather import Weather, fog_factor
from twin.rng import hash_uniform

FAR_WALL_M = 40.0
FAR_KERB_M = 27.0
NEAR_KERB_M = 12.5
CENTRE_M = 19.5
FACADES = ((70, 85, 150), (150, 180, 205), (120, 125, 130), (60, 100, 170), (175, 190, 200), (95, 115, 125))
AWNINGS = ((40, 40, 180), (40, 120, 40), (150, 80, 20), (30, 140, 220))


@dataclass(frozen=True, slots=True)
class Light:
    """The light of one hour: sky colours, how bright lit surfaces are, whether lamps are on."""

    sky_top: tuple[float, float, float]
    sky_low: tuple[float, float, float]
    ambient: float
    lamps: bool
    windows_lit: float


_NIGHT = Light((45, 22, 12), (70, 45, 35), 0.3, True, 0.6)
_IR = Light((6, 6, 6), (10, 10, 10), 1.0, False, 0.0)
_DUSK = Light((120, 70, 80), (90, 150, 245), 0.62, True, 0.3)
_DAY = Light((215, 160, 95), (240, 215, 185), 1.0, False, 0.0)


def palette(daylight: float) -> Light:
    """The light at ``daylight`` 0..1 (see :func:`twin.camera.video.scene.daylight`), in 21 steps."""
    d = round(max(0.0, min(1.0, daylight)) * 20) / 20
    a, b, f = (_NIGHT, _DUSK, d / 0.35) if d < 0.35 else (_DUSK, _DAY, (d - 0.35) / 0.65)

    def mix(p: tuple, q: tuple) -> tuple[float, float, float]:
        return (p[0] + (q[0] - p[0]) * f, p[1] + (q[1] - p[1]) * f, p[2] + (q[2] - p[2]) * f)

    return Light(
        mix(a.sky_top, b.sky_top),
        mix(a.sky_low, b.sky_low),
        a.ambient + (b.ambient - a.ambient) * f,
        d < 0.45,
        a.windows_lit + (b.windows_lit - a.windows_lit) * f,
    )


class _Canvas:
    def __init__(self, width: int, height: int) -> None:
        self.w, self.h = width, height
        self.img = np.zeros((height, width, 3), np.uint8)

    def y(self, depth: float) -> int:
        return round(feet_y(depth) * self.h)

    def x(self, x_m: float, depth: float) -> int:
        return round(image_x(x_m, depth) * self.w)

    def scale(self, depth: float) -> float:
        """Pixels per metre at ``depth``."""
        return 1.3 * self.h / depth

    def quad(self, x0: float, x1: float, d0: float, d1: float, color: tuple) -> None:
        """A rectangle on the ground: x0..x1 metres across, d0..d1 metres away."""
        pts = [(self.x(x0, d0), self.y(d0)), (self.x(x1, d0), self.y(d0)), (self.x(x1, d1), self.y(d1)),
               (self.x(x0, d1), self.y(d1))]  # fmt: skip
        cv2.fillPoly(self.img, [np.array(pts, np.int32)], color, cv2.LINE_AA)


def _shade(color: tuple, k: float) -> tuple[int, int, int]:
    return (min(255, int(color[0] * k)), min(255, int(color[1] * k)), min(255, int(color[2] * k)))


def _sky(c: _Canvas, light: Light) -> None:
    horizon = round(HORIZON * c.h)
    ramp = np.linspace(0.0, 1.0, horizon, dtype=np.float32)[:, None]
    column = np.array(light.sky_top, np.float32) * (1 - ramp) + np.array(light.sky_low, np.float32) * ramp
    c.img[:horizon] = column[:, None, :].astype(np.uint8)


def _skyline(c: _Canvas, u: np.ndarray, light: Light) -> None:
    horizon = round(HORIZON * c.h)
    haze = _shade(tuple((a + b) / 2 for a, b in zip(light.sky_low, (120, 120, 125), strict=True)), 0.9)
    x = 0
    for k in range(40):
        w = int((0.02 + 0.03 * u[k, 0]) * c.w)
        top = horizon - int((0.03 + 0.1 * u[k, 1]) * c.h)
        cv2.rectangle(c.img, (x, top), (x + w, horizon), haze, -1)
        x += w + int(0.004 * c.w)
        if x > c.w:
            break


def _ground(c: _Canvas, light: Light) -> None:
    a = light.ambient
    c.img[round(HORIZON * c.h) :] = _shade((120, 122, 125), a)  # far off: side streets between the houses
    top = round(feet_y(FAR_WALL_M) * c.h)
    c.img[top:] = _shade((150, 155, 160), a)  # sidewalks
    c.quad(-200, 200, FAR_KERB_M, NEAR_KERB_M, _shade((78, 80, 82), a))  # asphalt
    for d in (FAR_KERB_M, NEAR_KERB_M):
        c.quad(-200, 200, d + 0.25, d, _shade((190, 190, 195), a))  # kerb stones
    span = half_width_m(NEAR_KERB_M) + 4
    x = -span
    while x < span:  # the dashed centre line: 3 m of paint, 6 m gap
        c.quad(x, x + 3, CENTRE_M + 0.12, CENTRE_M - 0.12, _shade((215, 215, 215), a))
        x += 9
    for d in (FAR_KERB_M - 0.6, NEAR_KERB_M + 0.6):
        c.quad(-200, 200, d + 0.1, d - 0.1, _shade((200, 200, 200), a))
    d = NEAR_KERB_M + 0.8
    while d < FAR_KERB_M - 1.0:  # a zebra crossing: bars along the road, every metre of depth
        c.quad(3.0, 7.0, d + 0.5, d, _shade((225, 225, 225), a))
        d += 1.0
    joint = _shade((120, 124, 128), a)
    thin = max(1, c.h // 540)
    for d0, d1 in ((FAR_WALL_M, FAR_KERB_M + 0.25), (NEAR_KERB_M, 6.0)):
        d = d0
        while d > d1:
            cv2.line(c.img, (0, c.y(d)), (c.w, c.y(d)), joint, thin, cv2.LINE_AA)
            d -= 1.5 if d0 > 20 else 1.0
        for xm in np.arange(-60, 61, 1.5):
            cv2.line(c.img, (c.x(xm, d0), c.y(d0)), (c.x(xm, d1), c.y(d1)), joint, thin, cv2.LINE_AA)


def _buildings(c: _Canvas, u: np.ndarray, light: Light) -> None:
    d = FAR_WALL_M
    base, s = c.y(d), c.scale(d)
    x = -half_width_m(d) - 2
    k = 0
    lit, dark = (110, 200, 255), _shade((95, 85, 75), light.ambient)
    while x < half_width_m(d) + 2:
        r = u[50 + k]
        width, height = 7 + 8 * r[0], 4.5 + 6.5 * r[1]
        if r[3] < 0.2:  # a gap: a side street, the skyline behind
            x += 4 + 4 * r[0]
            k += 1
            continue
        facade = _shade(FACADES[int(r[2] * len(FACADES))], light.ambient)
        x0, x1 = c.x(x, d), c.x(x + width, d)
        top = base - int(height * s)
        cv2.rectangle(c.img, (x0, top), (x1, base), facade, -1)
        cv2.rectangle(c.img, (x0, top), (x1, top + max(1, int(0.3 * s))), _shade(facade, 0.7), -1)
        floors = int((height - 3.5) // 3)
        for f in range(floors):
            wy = base - int((4.2 + 3 * f) * s)
            for j in range(int(width // 2.4)):
                wx = x0 + int((0.7 + 2.4 * j) * s)
                on = hash_uniform(k * 977 + f * 31 + j, [0])[0] < light.windows_lit
                cv2.rectangle(
                    c.img, (wx, wy - int(1.5 * s)), (wx + int(1.2 * s), wy), lit if on else dark, -1
                )
        _shopfront(c, x0, x1, base, s, light, r)
        awning = _shade(AWNINGS[int(r[3] * len(AWNINGS))], light.ambient)
        cv2.rectangle(
            c.img,
            (x0 + int(0.4 * s), base - int(3.2 * s)),
            (x1 - int(0.4 * s), base - int(2.6 * s)),
            awning,
            -1,
        )
        cv2.line(c.img, (x1, top), (x1, base), _shade(facade, 0.6), max(1, int(0.15 * s)))
        x += width
        k += 1


def _shopfront(c: _Canvas, x0: int, x1: int, base: int, s: float, light: Light, r: np.ndarray) -> None:
    """A shop's ground floor: a window (dark glass by day with a sky reflection, lit at night), a door."""
    glass = (110, 160, 205) if light.lamps else _shade((95, 85, 70), light.ambient)
    left, right, top = x0 + int(0.6 * s), x1 - int(0.6 * s), base - int(2.6 * s)
    cv2.rectangle(c.img, (left, top), (right, base - int(0.4 * s)), glass, -1)
    if not light.lamps:  # a pale diagonal reflection across the glass
        shine = _shade((150, 140, 125), light.ambient)
        for k in (0.25, 0.32):
            a = left + int((right - left) * k)
            cv2.line(c.img, (a, base - int(0.4 * s)), (a + int(1.6 * s), top), shine, max(1, int(0.15 * s)))
    door = left + int((right - left) * (0.6 + 0.3 * r[1]))
    frame = _shade((40, 45, 50), light.ambient)
    cv2.rectangle(c.img, (door, top + int(0.3 * s)), (door + int(1.1 * s), base), frame, -1)
    cv2.rectangle(c.img, (left, base - int(0.4 * s)), (right, base), _shade((90, 95, 100), light.ambient), -1)


def _tree(c: _Canvas, x_m: float, d: float, light: Light, size: float) -> None:
    s, base, x = c.scale(d), c.y(d), c.x(x_m, d)
    cv2.line(
        c.img,
        (x, base),
        (x, base - int(2.6 * size * s)),
        _shade((40, 60, 80), light.ambient),
        max(1, int(0.3 * s)),
    )
    for dx, dy, r, k in (
        (0, 4.2, 1.9, 1.0),
        (-1.0, 3.4, 1.3, 0.85),
        (1.1, 3.6, 1.3, 0.9),
        (0.2, 5.2, 1.2, 1.1),
    ):
        green = _shade((50, 120, 60), light.ambient * k)
        center = (x + int(dx * size * s), base - int(dy * size * s))
        cv2.circle(c.img, center, max(1, int(r * size * s)), green, -1, cv2.LINE_AA)


def _lamp(c: _Canvas, x_m: float, d: float, light: Light) -> None:
    s, base, x = c.scale(d), c.y(d), c.x(x_m, d)
    pole = _shade((70, 70, 75), max(0.5, light.ambient))
    top = base - int(6 * s)
    cv2.line(c.img, (x, base), (x, top), pole, max(1, int(0.18 * s)), cv2.LINE_AA)
    cv2.line(c.img, (x, top), (x + int(1.0 * s), top), pole, max(1, int(0.12 * s)), cv2.LINE_AA)
    head = (x + int(1.0 * s), top + int(0.15 * s))
    if light.lamps:  # a pool of light on the pavement, brightest under the lamp, and a halo
        for k, weight in ((1.0, 0.18), (0.7, 0.22), (0.4, 0.25)):
            glow = c.img.copy()
            axes = (int(4.0 * k * s), int(1.0 * k * s))
            cv2.ellipse(glow, (head[0], base), axes, 0, 0, 360, (120, 190, 235), -1, cv2.LINE_AA)
            cv2.circle(glow, head, int(1.2 * k * s), (170, 230, 255), -1, cv2.LINE_AA)
            cv2.addWeighted(glow, weight, c.img, 1 - weight, 0, dst=c.img)
    cv2.circle(c.img, head, max(1, int(0.25 * s)), (200, 245, 255) if light.lamps else pole, -1, cv2.LINE_AA)


def _rows(c: _Canvas) -> np.ndarray:
    """The distance of what each row of the panorama shows: the ground, up to the far wall."""
    ys = (np.arange(c.h) + 0.5) / c.h
    return np.array([min(FAR_WALL_M, depth_at(y)) for y in ys], np.float32)


@lru_cache(maxsize=4)
def panorama(key: int, width: int, height: int, light: Light, weather: Weather, ir: bool) -> np.ndarray:
    """The background panorama (BGR) for a scene seeded by ``key``: a pure function, kept for the
    next viewer of the same picture (read-only: it is shared)."""
    u = hash_uniform(key, np.arange(400)).reshape(100, 4)
    c = _Canvas(width, height)
    scene_light = _IR if ir else light
    _sky(c, scene_light)
    _skyline(c, u, scene_light)
    _ground(c, scene_light)
    _buildings(c, u, scene_light)
    for i, x_m in enumerate((-15.0, 11.0, 26.0)):
        _tree(c, x_m + 4 * u[90 + i, 0], 29.5, scene_light, 0.9 + 0.3 * u[90 + i, 1])
    for x_m in (-22.0, -2.0, 18.0):
        _lamp(c, x_m, 28.0, scene_light)
    img: np.ndarray = c.img
    depth = _rows(c)
    if ir:  # IR LEDs light what is near; the sky stays black
        gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY).astype(np.float32)
        falloff = np.clip((14.0 / depth) ** 0.8, 0.15, 1.25)
        img = cv2.cvtColor(np.clip(gray * falloff[:, None], 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)
    rain = weather.of("rain")
    if rain:
        img = cv2.convertScaleAbs(img, alpha=1 - 0.3 * rain, beta=10 * rain)
    fog = weather.of("fog")
    if fog:
        f = np.array([fog_factor(d, fog) for d in depth], np.float32)[:, None, None]
        veil = np.array(fog_color(light, ir), np.float32)
        img = (img * (1 - f) + veil * f).astype(np.uint8)
    img.flags.writeable = False
    return img


def fog_color(light: Light, ir: bool) -> tuple[int, int, int]:
    return (60, 60, 60) if ir else _shade((205, 205, 200), max(0.3, light.ambient))
