"""The OpenCV renderer: a frame is the scene seen through the device at one instant.

The scene is a panorama :data:`PAN_W` x :data:`PAN_H` times the view's size; the lens and PTZ pick a
window of it (zoom shrinks the window, pan/tilt move it) which is scaled to the output size. Then, in
the order a camera applies them:

1. grading: IR night mode turns the picture grayscale (IR-lit), saturation mixes towards gray,
   exposure (iris x scene light, white light, IR LED) and brightness/contrast scale the levels;
2. defocus: a Gaussian blur whose sigma grows with the focus error (:meth:`twin.camera.lens.Lens.blur_sigma`);
3. sharpness (unsharp mask), transform (flip, mirror, rotation);
4. privacy masks, blacked out;
5. the AI overlay (detection boxes and labels) and the OSD (text, date/time, uploaded images).

A camera with real video (:mod:`twin.camera.video.source`) skips 1-2: its latest picture goes through 3-5.

Grading is a per-pixel colour map, so the graded background window is cached (per window and grading)
and the objects are drawn with graded colours: a frame costs one copy plus what changed.
Output is BGR ``uint8`` of shape ``(height, width, 3)``: the same inputs give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from hardware.ports.camera_hw import (
    AiOverlay,
    Detection,
    ImageSettings,
    OsdDatetime,
    OsdText,
    PrivacyRegion,
    Transform,
)
from twin.camera.video.backdrop import Light, fog_color, palette, panorama
from twin.camera.video.scene import Box, Scene
from twin.camera.video.sprites import Sprites, blit, shadow
from twin.camera.video.weather import CLEAR, RAIN_HZ, Weather, fog_factor, glare_layer, rain_layers

if TYPE_CHECKING:
    from twin.camera.video.source import MediaSource

PAN_W, PAN_H = 1.5, 1.25
FONT = cv2.FONT_HERSHEY_SIMPLEX
FONT_PX = 22.0
"""Height in pixels of OpenCV's simplex font at scale 1."""


@dataclass(frozen=True, slots=True, eq=False)
class View:
    """Everything about the device that shapes a frame, captured at one instant."""

    unix_time: float
    camera_id: str = ""
    zoom: float = 1.0
    pan: float = 0.0
    """-1 (left) .. 1 (right) of the panorama."""
    tilt: float = 0.0
    """-1 (down) .. 1 (up)."""
    blur_1280: float = 0.0
    """Defocus blur sigma in pixels at 1280 pixels of width."""
    exposure: float = 1.0
    daylight: float = 1.0
    night: bool = False
    light: int = 0
    ir_led: int = 0
    image: ImageSettings = field(default_factory=ImageSettings)
    transform: Transform = field(default_factory=Transform)
    masks: tuple[PrivacyRegion, ...] = ()
    mask_color: int = 0
    """0xRRGGBB."""
    mask_blur: int = 0
    texts: tuple[OsdText, ...] = ()
    datetimes: tuple[OsdDatetime, ...] = ()
    images: tuple[tuple[float, float, float, float, np.ndarray], ...] = field(default=())
    """Uploaded OSD images to paste: (x, y, width, height in fractions of the frame, BGR or BGRA pixels)."""
    overlay: AiOverlay = field(default_factory=AiOverlay)
    detections: tuple[Detection, ...] = ()
    weather: Weather = CLEAR
    sun: float = 0.0
    """Where the sun is across the sky (:func:`twin.camera.video.scene.sun_side`): where shadows fall."""


def default_osd(camera_id: str) -> tuple[tuple[OsdText, ...], tuple[OsdDatetime, ...]]:
    """What a fresh device shows: its name and the date and time, top left."""
    return (
        (OsdText("name", camera_id, 0.01, 0.02, 32.0),),
        (OsdDatetime("clock", 0.01, 0.07, "%Y-%m-%d %H:%M:%S", 32.0),),
    )


def window_fractions(zoom: float, pan: float, tilt: float) -> tuple[float, float, float, float]:
    """``(x0, y0, w, h)`` of the panorama a view shows, in fractions of the panorama."""
    w, h = 1 / (PAN_W * max(1.0, zoom)), 1 / (PAN_H * max(1.0, zoom))
    cx = 0.5 + max(-1.0, min(1.0, pan)) * (1 - w) / 2
    cy = 0.5 - max(-1.0, min(1.0, tilt)) * (1 - h) / 2
    return cx - w / 2, cy - h / 2, w, h


def osd_datetime(fmt: str, unix_time: float) -> str:
    """``fmt`` (strftime) applied to the world's UTC time."""
    try:
        return datetime.fromtimestamp(int(unix_time // 1), UTC).strftime(fmt)
    except ValueError:
        return fmt


def _grade_params(view: View) -> tuple[bool, float, float, float]:
    """(grayscale, saturation mix, alpha, beta): the colour map of this view."""
    if view.night:
        illumination = 0.3 + 0.7 * view.ir_led / 100
    else:  # the scene's own light is in its palette; the white light helps only in the dark
        illumination = 1.0 + 0.8 * view.light / 100 * (1.0 - min(1.0, view.daylight / 0.6))
    gain = min(2.5, view.exposure * illumination)
    contrast = 1.0 + view.image.contrast / 100
    alpha = gain * contrast
    beta = 128.0 * gain * (1.0 - contrast) + 1.27 * view.image.brightness
    saturation = 1.0 + view.image.saturation / 100
    return view.night, saturation, alpha, beta


def _grade(img: np.ndarray, params: tuple[bool, float, float, float]) -> np.ndarray:
    gray, saturation, alpha, beta = params
    if gray:
        img = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    elif saturation != 1.0:
        mono = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
        img = cv2.addWeighted(img, saturation, mono, 1.0 - saturation, 0.0)
    if alpha != 1.0 or beta != 0.0:
        img = cv2.convertScaleAbs(img, alpha=alpha, beta=beta)
    return img


def _blur(img: np.ndarray, sigma: float) -> np.ndarray:
    if sigma < 0.4:
        return img
    if sigma < 3.0:
        return cv2.GaussianBlur(img, (0, 0), sigma)
    f = int(sigma / 1.5)
    h, w = img.shape[:2]
    small = cv2.resize(img, (max(1, w // f), max(1, h // f)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (0, 0), sigma / f)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def _bucketed(weather: Weather) -> Weather:
    """``weather`` with its intensity in steps of 0.05 (what the cached layers are drawn for)."""
    return Weather(weather.kind, round(weather.intensity * 20) / 20)


def _bgr(rgb: int) -> tuple[int, int, int]:
    return (rgb & 0xFF, (rgb >> 8) & 0xFF, (rgb >> 16) & 0xFF)


class Renderer:
    """Renders one scene at one output size; keeps the panorama and the graded window."""

    def __init__(
        self, scene: Scene, width: int, height: int, camera_id: str = "", source: MediaSource | None = None
    ) -> None:
        self.scene = scene
        self.source = source
        """Real video in place of the scene: its latest picture, then steps 3-5 as on the scene."""
        self.width = width
        self.height = height
        self.camera_id = camera_id
        self.pan_w = round(width * PAN_W)
        self.pan_h = round(height * PAN_H)
        self.sprites = Sprites()
        self._bg_key: tuple | None = None
        self._bg: np.ndarray | None = None
        self._cache_key: tuple | None = None
        self._cache: np.ndarray | None = None
        self._layers: dict[tuple, list[np.ndarray] | np.ndarray] = {}

    def window(self, view: View) -> tuple[int, int, int, int]:
        """``(x0, y0, w, h)`` of the panorama the view shows."""
        zoom = max(1.0, view.zoom)
        ww, wh = max(2, round(self.width / zoom)), max(2, round(self.height / zoom))
        cx = self.pan_w / 2 + max(-1.0, min(1.0, view.pan)) * (self.pan_w - ww) / 2
        cy = self.pan_h / 2 - max(-1.0, min(1.0, view.tilt)) * (self.pan_h - wh) / 2
        x0 = min(max(0, round(cx - ww / 2)), self.pan_w - ww)
        y0 = min(max(0, round(cy - wh / 2)), self.pan_h - wh)
        return x0, y0, ww, wh

    def to_view(self, x: float, y: float, win: tuple[int, int, int, int]) -> tuple[float, float]:
        """A panorama point (fractions) as a fraction of the view; may fall outside [0, 1]."""
        x0, y0, ww, wh = win
        return (x * self.pan_w - x0) / ww, (y * self.pan_h - y0) / wh

    def render(self, t: float, view: View) -> np.ndarray:
        """The frame at sim time ``t`` seen through ``view``."""
        W, H = self.width, self.height
        if self.source is not None:
            return self._finish(self.source.picture(W, H), view)
        win = self.window(view)
        params = _grade_params(view)
        light = palette(view.daylight)
        weather = _bucketed(view.weather)
        bg_key = (light, weather, view.night)
        if bg_key != self._bg_key:
            self._bg = panorama(self.scene.key, self.pan_w, self.pan_h, light, weather, view.night)
            self._bg_key, self._cache_key = bg_key, None
        key = (win, params)
        if key != self._cache_key:
            assert self._bg is not None
            x0, y0, ww, wh = win
            crop = self._bg[y0 : y0 + wh, x0 : x0 + ww]
            if (ww, wh) != (W, H):
                crop = cv2.resize(crop, (W, H), interpolation=cv2.INTER_LINEAR)
            self._cache = _grade(np.ascontiguousarray(crop), params)
            self._cache_key = key
        assert self._cache is not None
        img = self._cache.copy()
        for box in self.scene.placements(t):
            self._draw(img, box, win, view, light, weather, params)
        rain = weather.of("rain")
        if rain:
            layers = self._layer(("rain", rain), lambda: rain_layers(self.scene.key, W, H, rain))
            cv2.add(img, layers[int(t * RAIN_HZ) % len(layers)], dst=img)
        glare = weather.of("glare")
        if glare and not view.night:
            sun_x = 0.5 + 0.4 * (view.sun if view.sun else -0.5)
            cv2.add(
                img,
                self._layer(("glare", glare, round(sun_x, 2)), lambda: glare_layer(W, H, sun_x, glare)),
                dst=img,
            )
        return self._finish(_blur(img, view.blur_1280 * W / 1280), view)

    def _layer(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._layers:
            if len(self._layers) > 8:
                self._layers.clear()
            self._layers[key] = make()
        return self._layers[key]

    def _draw(
        self, img: np.ndarray, box: Box, win: tuple[int, int, int, int], view: View, light: Light,
        weather: Weather, params: tuple[bool, float, float, float],
    ) -> None:  # fmt: skip
        """One object: its shadow on the ground, then its sprite in the light and weather of the view."""
        W, H = self.width, self.height
        fx0, fy0 = self.to_view(box.x, box.y, win)
        fx1, fy1 = self.to_view(box.x + box.w, box.y + box.h, win)
        x0, y0, x1, y1 = round(fx0 * W), round(fy0 * H), round(fx1 * W), round(fy1 * H)
        w, h = x1 - x0, y1 - y0
        if w < 2 or h < 3 or x1 < 0 or y1 < 0 or x0 >= W or y0 >= H:
            return
        # Sizes in steps of about 2.5 %, feet kept in place: a walker drifting nearer or farther
        # reuses its sprites instead of drawing new ones every frame.
        step = max(1, h // 40)
        sh = max(3, round(h / step) * step)
        sw = max(2, round(w * sh / h))
        x0, y0 = round((x0 + x1 - sw) / 2), y1 - sh
        fog = round(fog_factor(box.depth, weather.of("fog")), 2)
        ir = round(min(1.25, max(0.15, (14.0 / box.depth) ** 0.8)), 2) if view.night else 0.0
        if not view.night:
            strength = 0.55 * min(1.0, view.daylight / 0.5) * (1 - 0.7 * weather.of("rain")) * (1 - fog)
            reach = view.sun * w * 0.5  # the shadow stretches away from the sun, from the feet
            left, right = x0 - max(0.0, reach), x1 + max(0.0, -reach)
            rx, ry = round((right - left) / 2), max(1, round(h * 0.05))
            shadow(img, round((left + right) / 2), y1, rx, ry, strength)
        veil = fog_color(light, view.night)
        ambient = light.ambient * (1 - 0.25 * weather.of("rain"))

        def shade(pixels: np.ndarray) -> np.ndarray:
            if view.night:  # IR: gray, brighter when near
                gray = cv2.cvtColor(pixels, cv2.COLOR_BGR2GRAY)
                pixels = cv2.cvtColor(cv2.convertScaleAbs(gray, alpha=ir), cv2.COLOR_GRAY2BGR)
            else:
                pixels = cv2.convertScaleAbs(pixels, alpha=ambient)
            if fog:
                pixels = cv2.addWeighted(pixels, 1 - fog, np.full_like(pixels, veil), fog, 0)
            return _grade(pixels, params)

        shade_key = (params, round(ambient, 2), ir, fog, veil)
        sprite = self.sprites.get(
            box.label,
            box.variant,
            box.step,
            box.facing,
            (sw, sh),
            light.lamps and not view.night,
            (shade_key, shade),
        )
        blit(img, sprite, x0, y0)

    def _finish(self, img: np.ndarray, view: View) -> np.ndarray:
        """Sharpness, transform, privacy masks, AI overlay and OSD on a picture of the output size."""
        if view.image.sharpness > 0:
            k = view.image.sharpness / 50
            img = cv2.addWeighted(img, 1 + k, cv2.GaussianBlur(img, (0, 0), 1.0), -k, 0)
        img = self._transform(img, view.transform)
        img = self._masks(img, view)
        if view.overlay.enabled:
            self._overlay(img, view)
        self._osd(img, view)
        return img

    def _masks(self, img: np.ndarray, view: View) -> np.ndarray:
        """Each enabled region of at least three vertices filled with the mask colour, or blurred."""
        W, H = self.width, self.height
        polygons = [
            np.array([[round(x * W), round(y * H)] for x, y in zip(m.points_x, m.points_y, strict=False)])
            for m in view.masks
            if m.enabled and min(len(m.points_x), len(m.points_y)) >= 3
        ]
        if not polygons:
            return img
        if view.mask_blur > 0:
            # Blur only the regions' bounding box widened by the kernel's reach (the pixels outside it
            # cannot reach a masked one); at the frame's edge the box is cut as the frame's border is.
            r = view.mask_blur
            x, y, w, h = cv2.boundingRect(np.concatenate(polygons).astype(np.int32))
            x0, y0, x1, y1 = max(0, x - r), max(0, y - r), min(W, x + w + r), min(H, y + h + r)
            inside = np.zeros(img.shape[:2], np.uint8)
            cv2.fillPoly(inside, polygons, 255)
            box = img[y0:y1, x0:x1]
            cv2.copyTo(cv2.blur(box, (2 * r + 1, 2 * r + 1)), inside[y0:y1, x0:x1], box)
            return img
        c = view.mask_color
        cv2.fillPoly(img, polygons, ((c & 0xFF), (c >> 8) & 0xFF, (c >> 16) & 0xFF))
        return img

    def _transform(self, img: np.ndarray, tr: Transform) -> np.ndarray:
        flip = None
        if tr.flip and tr.mirror:
            flip = -1
        elif tr.flip:
            flip = 0
        elif tr.mirror:
            flip = 1
        if flip is not None:
            img = cv2.flip(img, flip)
        if tr.grayscale:
            img = cv2.cvtColor(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
        if tr.rotation == 180:
            img = cv2.rotate(img, cv2.ROTATE_180)
        elif tr.rotation in (90, 270):
            code = cv2.ROTATE_90_CLOCKWISE if tr.rotation == 90 else cv2.ROTATE_90_COUNTERCLOCKWISE
            img = cv2.resize(cv2.rotate(img, code), (self.width, self.height), interpolation=cv2.INTER_LINEAR)
        return img

    def _overlay(self, img: np.ndarray, view: View) -> None:
        W, H = self.width, self.height
        thick = max(1, round(view.overlay.line_thickness * H / 1080))
        scale = max(0.3, 20 * H / 1080 / FONT_PX)
        for det in view.detections:
            p0 = (round(det.x * W), round(det.y * H))
            p1 = (round((det.x + det.w) * W), round((det.y + det.h) * H))
            cv2.rectangle(img, p0, p1, (0, 255, 0), thick)
            parts = [det.label] if view.overlay.show_label else []
            if view.overlay.show_confidence:
                parts.append(f"{det.confidence:.2f}")
            if parts:
                org = (p0[0], max(0, p0[1] - 3))
                cv2.putText(img, " ".join(parts), org, FONT, scale, (0, 255, 0), max(1, thick // 2))

    def _osd(self, img: np.ndarray, view: View) -> None:
        W, H = self.width, self.height
        items: list[tuple[str, float, float, float, int]] = [
            (t.text, t.x, t.y, t.font_size, t.text_color) for t in view.texts if t.enabled and t.text
        ]
        items += [
            (osd_datetime(d.format, view.unix_time), d.x, d.y, d.font_size, d.text_color)
            for d in view.datetimes
            if d.enabled
        ]
        for text, x, y, size, color in items:
            px = size * H / 1080
            scale = max(0.25, px / FONT_PX)
            thick = max(1, round(px / 12))
            org = (round(x * W), round(y * H + px))
            cv2.putText(img, text, org, FONT, scale, (0, 0, 0), thick + 2)
            cv2.putText(img, text, org, FONT, scale, _bgr(color), thick)
        for x, y, w, h, pixels in view.images:
            self._paste(img, pixels, round(x * W), round(y * H), (max(1, round(w * W)), max(1, round(h * H))))

    def _paste(self, img: np.ndarray, pixels: np.ndarray, x: int, y: int, size: tuple[int, int]) -> None:
        ph, pw = pixels.shape[:2]
        if size != (pw, ph):
            pixels = cv2.resize(pixels, size, interpolation=cv2.INTER_AREA)
        h = min(pixels.shape[0], img.shape[0] - y)
        w = min(pixels.shape[1], img.shape[1] - x)
        if h <= 0 or w <= 0 or x < 0 or y < 0:
            return
        src = pixels[:h, :w]
        dst = img[y : y + h, x : x + w]
        if src.shape[2] == 4:
            a = src[:, :, 3:4].astype(np.float32) / 255
            dst[:] = (src[:, :, :3] * a + dst * (1 - a)).astype(np.uint8)
        else:
            dst[:] = src
