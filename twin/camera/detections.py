"""The camera's AI model: detections derived from the scene's ground truth.

At each detection tick (:data:`TICK_HZ` per second of world time) every object in view is detected
unless a seeded draw misses it; its box is the ground truth, jittered by a few percent, with a seeded
confidence. How well the model sees an object (its *quality*, 0..1) is the view's ``visibility``
(light and weather, :func:`twin.camera.video.weather.visibility`) times how big the object looks
(under :data:`SMALL` of the view's height it fades) times how much of it nearer objects leave in
sight. An object is missed with probability ``1 - (1 - miss_rate) * quality`` (:data:`MISS_RATE`
for a big, unhidden object in clear daylight), and its
confidence falls with its quality too. Now and then a false positive appears (:data:`FALSE_RATE` per
tick, more when visibility is poor). Everything is a pure function of (camera key, tick, view), so
the same seed gives the same detections whichever frame asks, and the AI overlay matches what the
event bus reports.
"""

from __future__ import annotations

from hardware.ports.camera_hw import Detection
from twin.camera.video.render import window_fractions
from twin.camera.video.scene import Box, Scene
from twin.rng import hash_uniform

TICK_HZ = 5
MISS_RATE = 0.08
FALSE_RATE = 0.03
MIN_VISIBLE = 0.4
"""Fraction of a box that must be in view for the model to see it."""
JITTER = 0.03
SMALL = 0.06
"""Objects shorter than this fraction of the view's height are harder to see, the smaller the harder."""


def _hidden(box: Box, boxes: list[Box]) -> float:
    """How much of ``box`` nearer objects cover (0..1; overlaps of the nearer ones counted once each)."""
    covered = 0.0
    for other in boxes:
        if other.depth < box.depth:
            w = min(box.x + box.w, other.x + other.w) - max(box.x, other.x)
            h = min(box.y + box.h, other.y + other.h) - max(box.y, other.y)
            if w > 0 and h > 0:
                covered += w * h / (box.w * box.h)
    return min(1.0, covered)


class Detector:
    def __init__(self, key: int, miss_rate: float = MISS_RATE, false_rate: float = FALSE_RATE) -> None:
        self.key = key
        self.miss_rate = miss_rate
        self.false_rate = false_rate

    def detect(
        self,
        scene: Scene,
        t: float,
        zoom: float = 1.0,
        pan: float = 0.0,
        tilt: float = 0.0,
        visibility: float = 1.0,
    ) -> tuple[Detection, ...]:
        """Detections at sim time ``t`` for a view at ``zoom``/``pan``/``tilt`` seeing as well as
        ``visibility`` (1: clear daylight); boxes in view fractions."""
        tick = int(t * TICK_HZ)
        wx, wy, ww, wh = window_fractions(zoom, pan, tilt)
        out = []
        boxes = scene.boxes(tick / TICK_HZ)
        for box in boxes:
            # the first eight objects keep their draws; more (crowds) draw from their own counters
            base = (
                tick * 64 + box.object_id * 8
                if box.object_id < 8
                else (1 << 40) + (tick * 64 + box.object_id) * 8
            )
            u = hash_uniform(self.key, [base, base + 1, base + 2, base + 3, base + 4])
            quality = visibility * min(1.0, box.h / wh / SMALL) * (1.0 - _hidden(box, boxes))
            if u[0] >= (1 - self.miss_rate) * quality:
                continue
            x0 = max(box.x, wx)
            y0 = max(box.y, wy)
            x1 = min(box.x + box.w, wx + ww)
            y1 = min(box.y + box.h, wy + wh)
            if x1 <= x0 or y1 <= y0 or (x1 - x0) * (y1 - y0) < MIN_VISIBLE * box.w * box.h:
                continue
            jx, jy = (float(u[1]) - 0.5) * JITTER * box.w, (float(u[2]) - 0.5) * JITTER * box.h
            out.append(
                Detection(
                    box.label,
                    round(0.35 + quality * (0.2 + 0.44 * float(u[3])), 3),
                    round((x0 + jx - wx) / ww, 4),
                    round((y0 + jy - wy) / wh, 4),
                    round((x1 - x0) / ww, 4),
                    round((y1 - y0) / wh, 4),
                    box.object_id,
                )
            )
        f = hash_uniform(self.key, [tick * 64 + 60, tick * 64 + 61, tick * 64 + 62, tick * 64 + 63])
        if scene.movers and f[0] < self.false_rate * (
            2 - visibility
        ):  # an empty scene has no clutter to mistake
            out.append(
                Detection(
                    "person",
                    round(0.5 + 0.2 * float(f[3]), 3),
                    round(0.9 * float(f[1]), 4),
                    round(0.4 + 0.4 * float(f[2]), 4),
                    0.05,
                    0.15,
                )
            )
        return tuple(out)
