"""The AI runtime's accelerator figures for ``system/stats``: a pure function of (seed, camera, t).

An idle NPU: a few percent of utilisation with noise per 5-s window, a temperature that follows
the day, and the runtime's resident memory. Loaded models will add to these when the AI area lands.
"""

from __future__ import annotations

import math

from hardware.ports.types import AcceleratorStats
from twin.rng import hash_normal, stream_key

NPU_MEMORY_BYTES = 4 * 1024**3
RUNTIME_RESIDENT_BYTES = 182 * 1024**2
IDLE_UTILIZATION_PCT = 3.0
BASE_TEMPERATURE_C = 46.0
DAILY_SWING_C = 4.0
SAMPLE_WINDOW_S = 5.0


def accelerator_stats(seed: int, camera_id: str, sim_time: float, uptime_s: float) -> AcceleratorStats:
    key = stream_key(seed, f"{camera_id}/npu")
    window = int(sim_time // SAMPLE_WINDOW_S)
    noise_u, noise_t = (float(v) for v in hash_normal(key, [window * 2, window * 2 + 1]))
    warmup = min(1.0, uptime_s / 600.0)  # the chip warms up over the first ten minutes after boot
    temperature = BASE_TEMPERATURE_C - 6.0 * (1.0 - warmup)
    temperature += DAILY_SWING_C * math.sin(2 * math.pi * (sim_time % 86400) / 86400) + 0.3 * noise_t
    utilization = max(0.0, IDLE_UTILIZATION_PCT + 0.8 * noise_u)
    return AcceleratorStats(
        device_utilization=round(utilization, 2),
        device_temperature=round(temperature, 1),
        total_memory_bytes=NPU_MEMORY_BYTES,
        used_memory_bytes=RUNTIME_RESIDENT_BYTES,
    )
