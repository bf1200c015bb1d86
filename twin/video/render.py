"""The OpenCV renderer: a frame of a :class:`~twin.video.scene.Scene` at one instant.

The background (sky-to-ground gradient, a few static buildings) is drawn once per size and copied;
each frame then fills the objects' boxes and writes the OSD (camera id and the world's UTC time).
Output is BGR ``uint8`` of shape ``(height, width, 3)``: the same inputs give the same bytes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import cv2
import numpy as np

from twin.video.scene import Scene


def _background(scene: Scene, width: int, height: int) -> np.ndarray:
    ramp = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    top = np.array([200, 170, 120], np.float32) * (0.7 + 0.3 * scene.hue)
    bottom = np.array([70, 90, 80], np.float32)
    column = top * (1 - ramp) + bottom * ramp
    img = np.repeat(column[:, None, :], width, axis=1).reshape(height, width, 3).astype(np.uint8)
    horizon = int(height * 0.35)
    cv2.rectangle(img, (0, horizon), (width, height), (90, 95, 95), -1)
    for fx, fh in scene.shapes:
        x0 = int(fx * width * 0.8)
        top_y = int(horizon - fh * height * 0.3)
        cv2.rectangle(img, (x0, top_y), (x0 + width // 8, horizon), (110, 110, 130), -1)
    cv2.line(img, (0, int(height * 0.7)), (width, int(height * 0.7)), (200, 200, 200), max(1, height // 180))
    return img


def osd_text(camera_id: str, unix_time: float) -> str:
    """``cam-01 2026-01-01 00:00:01.033``: UTC, formatted from the given world time only."""
    whole = int(unix_time // 1)
    millis = round((unix_time - whole) * 1000) % 1000
    return f"{camera_id} {datetime.fromtimestamp(whole, UTC):%Y-%m-%d %H:%M:%S}.{millis:03d}"


class Renderer:
    """Renders one scene at one size; keeps the background."""

    def __init__(self, scene: Scene, width: int, height: int, camera_id: str) -> None:
        self.scene = scene
        self.width = width
        self.height = height
        self.camera_id = camera_id
        self._bg = _background(scene, width, height)
        self._font_scale = max(0.35, height / 720)
        self._thick = max(1, height // 360)

    def render(self, t: float, unix_time: float) -> np.ndarray:
        """The frame at sim time ``t``; ``unix_time`` is what the OSD prints (``world.now()``)."""
        img = self._bg.copy()
        for box in self.scene.boxes(t):
            x0, y0, x1, y1 = box.pixels(self.width, self.height)
            cv2.rectangle(img, (x0, y0), (x1, y1), self.scene.color_of(box.object_id), -1)
        org = (int(8 * self._font_scale), int(28 * self._font_scale))
        text = osd_text(self.camera_id, unix_time)
        cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, self._font_scale, (0, 0, 0), self._thick + 2)
        cv2.putText(img, text, org, cv2.FONT_HERSHEY_SIMPLEX, self._font_scale, (255, 255, 255), self._thick)
        return img
