"""Telemetry storage statistics, as the server's storage keeps them: reads and writes counted, their
average latency and the share of reads its cache answers.

Writes are the samples the world stores or publishes (the simulated sensors' ticks and every
ingested metric); reads are the telemetry queries clients make. Latencies follow a deterministic
cost model (a fixed cost per operation plus a cost per point read), not the host's clock; a read
whose window lies within the last hour is answered from the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hardware.ports.events import Event, EventKind

if TYPE_CHECKING:
    from twin.engine import Engine
    from twin.sensors import Samples

READ_BASE_US = 350.0
READ_PER_POINT_US = 4.0
CACHED_READ_US = 40.0
WRITE_US = 60.0
CACHE_WINDOW_S = 3600.0


def tier(avg_read_ms: float) -> str:
    if avg_read_ms < 10:
        return "excellent"
    if avg_read_ms < 50:
        return "good"
    return "fair" if avg_read_ms < 200 else "poor"


def recommendations(avg_read_ms: float, hit_rate: float, reads: int) -> list[str]:
    out = []
    if avg_read_ms > 200:
        out += [
            "High read latency detected (>200ms). Consider optimizing database queries.",
            "Check if redb database file is fragmented.",
        ]
    elif avg_read_ms > 50:
        out.append("Moderate read latency (>50ms). Monitor for degradation.")
    if hit_rate < 0.5 and reads > 100:
        out.append(f"Low cache hit rate ({hit_rate * 100:.1f}%). Consider increasing cache size.")
    return out or ["Performance is within acceptable ranges."]


class TelemetryStats:
    def __init__(self, world: Engine, *, sample_observers: list) -> None:
        self.world = world
        self.reads = 0
        self.writes = 0
        self.cache_hits = 0
        self.read_us = 0.0
        world.observers.append(self._observe)
        sample_observers.append(self._observe_samples)

    def _observe(self, event: Event) -> None:
        if event.kind is EventKind.DEVICE_METRIC:
            self.writes += 1

    def _observe_samples(self, samples: Samples) -> None:
        self.writes += samples.count

    def read(self, points: int, window_start: float) -> None:
        """A telemetry query answered ``points`` points from ``window_start`` (Unix seconds) on."""
        self.reads += 1
        if window_start >= self.world.now() - CACHE_WINDOW_S:
            self.cache_hits += 1
            self.read_us += CACHED_READ_US
        else:
            self.read_us += READ_BASE_US + READ_PER_POINT_US * points

    def stats(self) -> dict[str, Any]:
        avg_read_ms = self.read_us / self.reads / 1000 if self.reads else 0.0
        avg_write_ms = WRITE_US / 1000 if self.writes else 0.0
        hit_rate = self.cache_hits / self.reads if self.reads else 0.0
        return {
            "performance": {
                "avg_read_ms": avg_read_ms,
                "avg_write_ms": avg_write_ms,
                "performance_tier": tier(avg_read_ms),
                "cache_hit_rate": hit_rate,
                "read_count": self.reads,
                "write_count": self.writes,
            },
            "health": {
                "status": "healthy" if avg_read_ms < 200 else "degraded",
                "recommendations": recommendations(avg_read_ms, hit_rate, self.reads),
            },
        }
