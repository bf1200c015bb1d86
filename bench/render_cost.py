"""``python -m bench.render_cost``: what drawing the demo scene costs, without encoding or sending.

One camera's two watched streams are rendered as a live camera renders them: a 1280x720 and a
640x360 frame every 1/25 s of wall time, each from the world's street scene at that instant, with
the AI overlay's detections drawn. The figure is the process's CPU time per wall second while it does
that (cores), against the budget of :data:`TARGET_CORES`. Measured in each light and weather the scene
has (clear day, dusk, IR night, rain, fog, glare), each after a warm-up that fills the sprite and
background caches (what a stream has after its first second). Also reported: the mean wall time of
one 720p and one 360p render (longer than its CPU time on a loaded machine) and the frame rate kept
(a case that falls behind 95 % of it misses, since its CPU figure would then be too low).

Part of the camera bench (``python -m bench --only camera`` runs it first); alone, it takes 30 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from twin.camera.detections import Detector
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import Scene, daylight, sun_side
from twin.camera.video.weather import Weather, visibility

FPS = 25
SIZES = ((1280, 720), (640, 360))
TARGET_CORES = 0.3
MIDNIGHT = 1_767_225_600.0
"""2026-01-01T00:00:00Z: the hours of :data:`CASES` are UTC hours of that day."""
CASES: dict[str, tuple[float, bool, Weather]] = {
    "day": (11.0, False, Weather()),
    "dusk": (17.6, False, Weather()),
    "night (IR)": (23.0, True, Weather()),
    "rain": (14.0, False, Weather("rain", 0.8)),
    "fog": (10.0, False, Weather("fog", 0.6)),
    "glare": (8.0, False, Weather("glare", 0.7)),
}


def view(hour: float, night: bool, weather: Weather, t: float, scene: Scene, detector: Detector) -> View:
    u = MIDNIGHT + hour * 3600 + t
    light = daylight(u)
    seen = visibility(weather, light, night, 100, 0)
    return View(
        u,
        "cam-01",
        daylight=light,
        night=night,
        ir_led=100 if night else 0,
        weather=weather,
        sun=sun_side(u),
        detections=detector.detect(scene, t, visibility=seen),
    )


def measure(hour: float, night: bool, weather: Weather, seconds: float, warmup: float) -> dict[str, Any]:
    """Render both sizes at :data:`FPS` for ``seconds`` of wall time; CPU cores and per-frame ms."""
    scene, detector = Scene(42), Detector(7)
    renderers = [Renderer(scene, w, h, "cam-01") for w, h in SIZES]
    spent: list[list[float]] = [[] for _ in SIZES]
    frame = 0
    start = time.perf_counter()
    measuring = False
    cpu0 = wall0 = 0.0
    while True:
        due = start + frame / FPS
        now = time.perf_counter()
        if not measuring and now - start >= warmup:
            measuring, cpu0, wall0 = True, time.process_time(), now
            spent = [[] for _ in SIZES]
        if measuring and now - wall0 >= seconds:
            break
        if due > now:
            time.sleep(due - now)
        t = 100.0 + frame / FPS
        v = view(hour, night, weather, t, scene, detector)
        for k, renderer in enumerate(renderers):
            began = time.perf_counter()
            renderer.render(t, v)
            spent[k].append((time.perf_counter() - began) * 1000)
        frame += 1
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "cpu_cores": round(cpu / wall, 3),
        "ms_720p": round(statistics.mean(spent[0]), 2),
        "ms_360p": round(statistics.mean(spent[1]), 2),
        "fps": round(len(spent[0]) / wall, 2),
    }


def run(seconds: float, warmup: float) -> dict[str, dict[str, Any]]:
    return {name: measure(*case, seconds, warmup) for name, case in CASES.items()}


def report(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"render cost: the street scene at 1280x720 + 640x360, {FPS} fps each, AI overlay on; "
        f"CPU time of this process per wall second",
        "",
        f"{'scene':<12}{'CPU cores':>11}{'ms 720p':>10}{'ms 360p':>10}{'fps':>8}",
    ]
    for name, r in results.items():
        lines.append(
            f"{name:<12}{r['cpu_cores']:>11.3f}{r['ms_720p']:>10.2f}{r['ms_360p']:>10.2f}{r['fps']:>8.1f}"
        )
    worst = max(r["cpu_cores"] for r in results.values())
    kept_up = all(r["fps"] >= 0.95 * FPS for r in results.values())
    verdict = "PASS" if worst <= TARGET_CORES and kept_up else "MISS"
    lines += ["", f"render cost, the costliest case: {worst:.3f} cores, want ≤ {TARGET_CORES}: {verdict}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.render_cost",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--seconds", type=float, default=4.0, help="measured seconds per case (default 4)")
    p.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per case (default 1)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    results = run(args.seconds, args.warmup)
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps({"render": results, "target_cores": TARGET_CORES}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
