"""One metric of one device as a time series: procedural (a simulated sensor, computed on demand
with numpy, never stored), stored (pushed samples in SQLite), or both merged.

Every series answers on inclusive windows ``lo <= ts <= hi`` (Unix seconds): ``count``, ``page``
(newest first, skipping the newest ``offset``) and ``chunks`` (oldest first, numeric values with NaN
for non-numbers, in bounded blocks so a 30-day window at 1 Hz never materialises at once).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from twin.signals import evaluate, metric_key

if TYPE_CHECKING:
    from twin.sensors import SensorFleet
    from twin.store import Store

CHUNK = 1 << 18
Page = tuple[np.ndarray, list[Any], list[float | None]]
"""(timestamps newest first, values, qualities)."""


class MetricSeries(Protocol):
    def count(self, lo: float, hi: float) -> int: ...

    def page(self, lo: float, hi: float, offset: int, limit: int) -> Page: ...

    def chunks(self, lo: float, hi: float) -> Iterator[tuple[np.ndarray, np.ndarray]]: ...


class ProceduralSeries:
    """Samples at sim t = k·period from the oldest of the world's past (:mod:`twin.past`) up to
    ``upto`` (Unix seconds), none before ``since`` (the retention window: simulated history is cut
    as stored samples are deleted), none inside the device's gaps, and spikes added where the device
    had them."""

    def __init__(
        self, fleet: SensorFleet, device_id: str, metric: str, upto: float, since: float | None = None
    ) -> None:
        world = fleet.world
        index = next(i for i, m in enumerate(fleet.group.metrics) if m.name == metric)
        self.spec = fleet.group.metrics[index].signal
        keys = np.array([world.streams.key(device_id)], dtype=np.uint64)
        self.key = metric_key(keys, index)
        self.epoch = world.epoch
        self.period = fleet.group.period
        self.k_max = math.floor((upto - self.epoch) / self.period + 1e-9)
        oldest = fleet.first_tick
        cut = oldest if since is None else math.ceil((since - self.epoch) / self.period - 1e-9)
        self.k_min = max(oldest, cut)
        self.gaps = sorted(
            (
                math.ceil(start / self.period - 1e-9),
                self.k_max if end is None else math.ceil(end / self.period - 1e-9) - 1,
            )
            for start, end in fleet.gaps_of(device_id)
        )
        """Inclusive ranges of sample numbers the device did not report, in order."""
        self.spikes = fleet.spikes_of(device_id, metric)

    def _range(self, lo: float, hi: float) -> tuple[int, int]:
        k0 = max(self.k_min, math.ceil((lo - self.epoch) / self.period - 1e-9))
        k1 = min(self.k_max, math.floor((hi - self.epoch) / self.period + 1e-9))
        if self.epoch + k1 * self.period > hi:  # guard the tolerance above on exclusive cursors
            k1 -= 1
        return k0, k1

    def _segments(self, k0: int, k1: int) -> list[tuple[int, int]]:
        """``[k0, k1]`` without the gaps: inclusive runs of reported sample numbers, oldest first."""
        runs, at = [], k0
        for a, b in self.gaps:
            if b < at or a > k1:
                continue
            if a > at:
                runs.append((at, a - 1))
            at = max(at, b + 1)
        if at <= k1:
            runs.append((at, k1))
        return runs

    def _at(self, ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = ks * self.period
        values = evaluate(self.spec, self.key, t, self.epoch)
        for w in self.spikes:
            hit = (t >= w.start) if w.end is None else (t >= w.start) & (t < w.end)
            if hit.any():
                values = np.where(hit, np.round(values + w.delta, self.spec.decimals), values)
        return self.epoch + t, values

    def count(self, lo: float, hi: float) -> int:
        return sum(b - a + 1 for a, b in self._segments(*self._range(lo, hi)))

    def page(self, lo: float, hi: float, offset: int, limit: int) -> Page:
        parts, skip, want = [], offset, limit
        for a, b in reversed(self._segments(*self._range(lo, hi))):
            if want <= 0:
                break
            n = b - a + 1
            if skip >= n:
                skip -= n
                continue
            top = b - skip
            bottom = max(a, top - want + 1)
            parts.append(np.arange(top, bottom - 1, -1, dtype=np.float64))
            want -= top - bottom + 1
            skip = 0
        ks = np.concatenate(parts) if parts else np.empty(0)
        ts, values = self._at(ks)
        return ts, values.tolist(), [1.0] * len(ks)

    def chunks(self, lo: float, hi: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for k0, k1 in self._segments(*self._range(lo, hi)):
            for start in range(k0, k1 + 1, CHUNK):
                yield self._at(np.arange(start, min(k1, start + CHUNK - 1) + 1, dtype=np.float64))


class StoredSeries:
    def __init__(self, store: Store, device_id: str, metric: str) -> None:
        self.store, self.device_id, self.metric = store, device_id, metric

    def count(self, lo: float, hi: float) -> int:
        return self.store.sample_count(self.device_id, self.metric, lo, hi)

    def page(self, lo: float, hi: float, offset: int, limit: int) -> Page:
        rows = self.store.sample_page(self.device_id, self.metric, lo, hi, offset, limit)
        return (
            np.array([r[0] for r in rows], dtype=np.float64),
            [r[1] for r in rows],
            [r[2] for r in rows],
        )

    def chunks(self, lo: float, hi: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        rows = self.store.sample_numbers(self.device_id, self.metric, lo, hi)
        if rows:
            ts = np.array([r[0] for r in rows], dtype=np.float64)
            vals = np.array([r[1] if r[1] is not None else np.nan for r in rows], dtype=np.float64)
            yield ts, vals


class MergedSeries:
    """A simulated sensor that also received pushed samples for the same metric (rare)."""

    def __init__(self, a: MetricSeries, b: MetricSeries) -> None:
        self.a, self.b = a, b

    def count(self, lo: float, hi: float) -> int:
        return self.a.count(lo, hi) + self.b.count(lo, hi)

    def page(self, lo: float, hi: float, offset: int, limit: int) -> Page:
        ta, va, qa = self.a.page(lo, hi, 0, offset + limit)
        tb, vb, qb = self.b.page(lo, hi, 0, offset + limit)
        ts = np.concatenate([ta, tb])
        order = np.argsort(-ts, kind="stable")[offset : offset + limit]
        values, quality = va + vb, qa + qb
        return ts[order], [values[i] for i in order], [quality[i] for i in order]

    def chunks(self, lo: float, hi: float) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        parts = [*self.a.chunks(lo, hi), *self.b.chunks(lo, hi)]
        if parts:
            ts = np.concatenate([p[0] for p in parts])
            vals = np.concatenate([p[1] for p in parts])
            order = np.argsort(ts, kind="stable")
            yield ts[order], vals[order]


# Reductions ---------------------------------------------------------------------------------
def _partials(ids: np.ndarray, ts: np.ndarray, vals: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-run reductions of consecutive equal ``ids``: (id, last ts, last value, min, max, sum, n)."""
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)] - 1
    numeric = ~np.isnan(vals)
    zeroed = np.where(numeric, vals, 0.0)
    with np.errstate(invalid="ignore"):
        mins = np.fmin.reduceat(vals, starts)
        maxs = np.fmax.reduceat(vals, starts)
    return (
        ids[starts],
        ts[ends],
        vals[ends],
        mins,
        maxs,
        np.add.reduceat(zeroed, starts),
        np.add.reduceat(numeric.astype(np.int64), starts),
    )


def reduce(chunks: Iterator[tuple[np.ndarray, np.ndarray]], bucket: float | None, origin: float):
    """Reduce a series to buckets of ``bucket`` seconds from ``origin`` (one bucket when ``None``).

    Returns arrays (last ts, last value, min, max, sum, count) per non-empty bucket, oldest first;
    ``count`` counts numeric values only.
    """
    parts = []
    for ts, vals in chunks:
        if not len(ts):
            continue
        ids = np.zeros(len(ts), dtype=np.int64) if bucket is None else ((ts - origin) // bucket)
        parts.append(_partials(ids.astype(np.int64), ts, vals))
    if not parts:
        empty = np.empty(0)
        return empty, empty, empty, empty, empty, np.empty(0, dtype=np.int64)
    ids, last_ts, last_v, mins, maxs, sums, counts = (np.concatenate(col) for col in zip(*parts, strict=True))
    # Runs split across chunk boundaries share an id: fold them (ids are ascending).
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], len(ids)] - 1
    with np.errstate(invalid="ignore"):
        return (
            last_ts[ends],
            last_v[ends],
            np.fmin.reduceat(mins, starts),
            np.fmax.reduceat(maxs, starts),
            np.add.reduceat(sums, starts),
            np.add.reduceat(counts, starts),
        )


def aggregate_values(fn: str, last, mins, maxs, sums, counts) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "avg": sums / np.where(counts > 0, counts, np.nan),
            "min": mins,
            "max": maxs,
            "sum": sums,
            "last": last,
            "count": counts.astype(np.float64),
        }[fn]
