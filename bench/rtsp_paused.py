"""``python -m bench.rtsp_paused``: a stock RTSP client of a paused world, black-box.

The twin runs in step mode with the clock paused, at full size (main is 1920x1080). A client in a
process of its own opens ``rtsp://.../main`` as a stock client does (PyAV's ``av.open(url)``:
FFmpeg's default probing, no options) and times how long its first decoded frame takes; several
runs, the median. The same with the picture not repeated (the baseline, what the server did
before it repeated a still world's picture: the client waits for frames until FFmpeg gives up on
probing, if ever; ``--no-baseline`` leaves it out). Then one client keeps decoding the paused stream for
``--seconds`` and the twin's CPU (this process: the client is outside it) is read over that window,
against the same window with no viewer.

With FFmpeg's defaults (no ``timeout``) the baseline's client waits on and on: each of its runs
is cut at ``--limit`` (20 s), so the part takes about two minutes with the defaults.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from api.gateway.rtsp import repeat
from twin.camera.video import stream as video_stream
from twin.serve import build, start, stop
from twin.settings import LOOPBACK, Settings

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "test.yaml"
CLIENT = """
import sys, time, av
url, hold = sys.argv[1], float(sys.argv[2])
started = time.perf_counter()
with av.open(url) as container:
    frames = container.decode(video=0)
    frame = next(frames)
    print(f"{time.perf_counter() - started:.3f} {frame.width}x{frame.height}", flush=True)
    end = time.perf_counter() + hold
    while time.perf_counter() < end:
        next(frames)
"""


def cpu() -> float:
    return time.process_time()


async def client(url: str, hold: float, limit: float) -> tuple[float | None, str]:
    """(seconds to the first frame, its size) of one stock client; None if it got none."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLIENT, url, str(hold), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), limit)  # type: ignore[union-attr]
    except TimeoutError:
        line = b""
    if not line:
        proc.kill()
        await proc.wait()
        return None, "-"
    seconds, size = line.decode().split()
    await proc.wait()
    return float(seconds), size


async def run(runs: int, seconds: float, baseline: bool, limit: float) -> dict[str, Any]:
    video_stream.RESOLUTION_SCALE = 1.0
    twin = build(Settings(scenario=SCENARIO, step=True, **LOOPBACK))
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-rtsp-") as certs:
        running = await start(twin, Path(certs))
        try:
            url = twin.rtsp["cam-01"].url("main")
            cases: list[tuple[str, Callable[[bytes, bytes], repeat.Syntax | None]]] = [
                ("repeated", repeat.syntax)
            ]
            if baseline:
                cases.append(("not repeated (before)", lambda _sps, _pps: None))
            original = repeat.syntax
            for name, syntax in cases:
                repeat.syntax = syntax  # type: ignore[assignment]  # the baseline: nothing followed
                try:
                    got = [await client(url, 0, limit) for _ in range(runs)]
                finally:
                    repeat.syntax = original
                times = [t for t, _ in got if t is not None]
                sizes = sorted({s for _, s in got})
                median = statistics.median(times) if times else None
                out[name] = {"first_frame_s": times, "median_s": median, "sizes": sizes}
                shown = " ".join(f"{t:.2f}" for t in times)
                print(
                    f"{name:>22}: first frame {shown} s, median {median} s, {sizes},",
                    f"none in {limit:.0f} s: {runs - len(times)}",
                )
            idle0, wall0 = cpu(), time.perf_counter()
            await asyncio.sleep(seconds)
            idle = (cpu() - idle0) / (time.perf_counter() - wall0)
            task = asyncio.ensure_future(client(url, seconds + 3, 60.0))
            await asyncio.sleep(3)
            busy0, wall0 = cpu(), time.perf_counter()
            await asyncio.sleep(seconds)
            busy = (cpu() - busy0) / (time.perf_counter() - wall0)
            await task
            out["cpu"] = {"idle_cores": round(idle, 4), "paused_viewer_cores": round(busy, 4)}
            print(f"twin CPU: {busy:.3f} core with a paused 1080p viewer, {idle:.3f} core with none")
        finally:
            await stop(running)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.rtsp_paused", description=__doc__)
    p.add_argument("--runs", type=int, default=5, help="clients timed per case (default 5)")
    p.add_argument("--seconds", type=float, default=10.0, help="CPU window (default 10)")
    p.add_argument("--no-baseline", action="store_true", help="skip the case without repeats")
    p.add_argument(
        "--limit", type=float, default=20.0, help="seconds a client waits for its first frame (20)"
    )
    p.add_argument("--json", type=Path, metavar="PATH")
    args = p.parse_args(argv)
    if args.runs < 1 or args.seconds <= 0 or args.limit <= 0:
        p.error("--runs must be >= 1, --seconds and --limit > 0")
    result = asyncio.run(run(args.runs, args.seconds, not args.no_baseline, args.limit))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    ok = result["repeated"]["median_s"] is not None
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
