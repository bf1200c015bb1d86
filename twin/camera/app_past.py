"""An app that has been running since the camera booted in the world's past (:mod:`twin.past`).

A scenario's preinstalled apps start at boot; when the world has a past, that boot was ``history``
seconds before sim time 0, so at t=0 the app is ``running`` (started then), its container's log
holds the newest lines its workload wrote since (bounded as the live log is), its frame counter and
its model's inference count are where that time took them, and the workload goes on from there.

Nothing is replayed: the lines are made from the same formats as the live ones, the detections of
frame ``k`` are a pure function of (seed, camera, app, k), and only the lines the bounded log keeps
are made, so a month of past costs what a minute does. Without a past, or when the start could not
have happened (image missing or broken, a volume's host folder missing, no room to unpack), the app
starts the ordinary way at t=0.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hardware.ports.errors import StorageFull
from hardware.ports.gateway_apps import LogLine
from twin.camera.ai_runtime import INFERENCE_FPS
from twin.camera.app_runtime import IDLE_LINE, TICK_S, frame_line
from twin.camera.storage import ROOT
from twin.rng import hash_uniform, stream_key

if TYPE_CHECKING:
    from twin.camera.app_runtime import App
    from twin.camera.apps import AppManager
    from twin.camera.container_records import Container

MEAN_DETECTIONS = 2.5
"""The mean of the Poisson number of detections in a frame (as the live ones, ``AiRuntime.detections``)."""


def run_since_boot(apps: AppManager, app_id: str) -> bool:
    """Put app ``app_id`` in the state the world's past left it in (running since boot); False when
    the world has no past or the start could not have happened, so the caller starts it now."""
    ticks = math.floor(apps.world.config.history / TICK_S + 1e-9)
    app = apps.apps[app_id]
    runtime = apps.containers
    image = runtime.images.get(app.manifest.image)
    if ticks <= 0 or image is None or image.broken:
        return False
    if not all(runtime.host_dir_exists(v.host) for v in app.manifest.volumes):
        return False
    try:
        runtime.unpacked_before(image)
    except StorageFull:
        return False
    container = apps.runtime.container(app)
    since = -ticks * TICK_S
    started = apps.clock.now() + since
    lines: list[tuple[str, str]] = []
    inference = apps.runtime.begin(app, container, lambda _c, level, text: lines.append((level, text)))
    _write_past(apps, app, container, since, ticks, lines, inference)
    container.started_at = app.started_at = started
    app.installed_at = container.created_at = min(app.installed_at, started)
    app.state, app.last_error = "running", ""
    runtime.resume(container, None, lambda c: apps.runtime.work(app, c, inference))
    apps.durable.save()
    return True


def _write_past(
    apps: AppManager,
    app: App,
    container: Container,
    since: float,
    ticks: int,
    start_lines: list[tuple[str, str]],
    inference: bool,
) -> None:
    """The newest lines the app wrote from ``since`` (its start lines) through ``ticks`` frames, one
    every :data:`TICK_S`, the last at t=0; the log's storage charged as the live lines are."""
    keep = container.logs.maxlen or ticks + len(start_lines)
    first = max(1, ticks - keep + 1)
    frames = np.arange(first, ticks + 1, dtype=np.int64)
    camera_service = apps.ai.camera_service_running
    if inference:
        detections = past_detections(apps.world.seed, apps.camera_id, app.id, frames)
        pairs = zip(frames.tolist(), detections.tolist(), strict=True)
        texts = [frame_line(k, d, camera_service) for k, d in pairs]
        app.frames = ticks
        sub = apps.ai.subscriptions.get(app.id)
        if sub is not None and camera_service:
            apps.ai.models[sub.model_id].inferences += ticks * int(INFERENCE_FPS)
    else:
        texts = [IDLE_LINE] * len(frames)
    epoch_ns = apps.world.epoch * 1e9
    rows = [LogLine(int(epoch_ns + since * 1e9), level, text) for level, text in start_lines]
    if first > 1:
        rows = []  # rolled out of the bounded log long ago
    rows += [
        LogLine(int(epoch_ns + (since + k * TICK_S) * 1e9), "info", text)
        for k, text in zip(frames.tolist(), texts, strict=True)
    ]
    container.logs.extend(rows)
    size = sum(len(r.message) + 64 for r in rows)
    storage = apps.containers.storage
    size = min(size, storage.free_bytes(ROOT))
    storage.charge(ROOT, f"logs:{container.id}", size)
    container.block_write += size


def past_detections(seed: int, camera_id: str, app_id: str, frames: np.ndarray) -> np.ndarray:
    """The number of detections in each of the app's past ``frames``: Poisson, a pure function of
    (seed, camera, app, frame)."""
    u = hash_uniform(stream_key(seed, f"{camera_id}/ai/{app_id}/past"), frames)
    k = np.arange(32)
    log_pmf = k * math.log(MEAN_DETECTIONS) - MEAN_DETECTIONS - np.array([math.lgamma(i + 1) for i in k])
    cdf = np.cumsum(np.exp(log_pmf))
    return np.minimum(np.searchsorted(cdf, u, side="right"), k[-1])
