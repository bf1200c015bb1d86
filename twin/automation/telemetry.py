"""Telemetry queries over the world: per device (paged by offset or cursor, aggregated, bucketed,
archived history) and cross-device by source. Simulated history is evaluated on demand with numpy
and cut at the retention window (now - ``default_retention``; stored samples are deleted by
:mod:`twin.automation.retention`); pushed samples come from the store. Windows are inclusive,
timestamps Unix seconds, raw pages are newest first."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hardware.ports.devices import (
    AGGREGATES,
    Series,
    SourceQuery,
    SourceSeries,
    TelemetryPage,
    TelemetryQuery,
)
from hardware.ports.errors import InvalidInput
from hardware.ports.system import RetentionPolicy
from twin.automation.registry import DeviceRegistry, not_found
from twin.automation.series import (
    MergedSeries,
    MetricSeries,
    ProceduralSeries,
    StoredSeries,
    aggregate_values,
    reduce,
)

if TYPE_CHECKING:
    from twin.automation.retention import Retention
    from twin.automation.telemetry_stats import TelemetryStats
    from twin.engine import Engine
    from twin.sensors import SensorFleet

DAY = 86_400
MAX_RANGE_S = 30 * DAY
MAX_METRICS = 50
LIMIT_RANGE = (1, 5000)
HOURS_RANGE = (1, 720)
MAX_OFFSET = 100_000
SNAPS = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


@dataclass(frozen=True, slots=True)
class TelemetrySource:
    """What the telemetry query needs to know about a (live or archived) device."""

    device_id: str
    metrics: tuple[str, ...]
    fleet: SensorFleet | None
    upto: float
    """Unix seconds: no procedural sample after this (now, or the deletion time)."""


def bucket_size(span: float, limit: int) -> float:
    """The smallest snapped size strictly above ``span / limit`` (so at most ``limit`` buckets)."""
    need = span / limit
    for snap in SNAPS:
        if snap > need:
            return float(snap)
    return float(3600 * (math.floor(need / 3600) + 1))


def _stamps(ts: np.ndarray) -> list[float | int]:
    if ts.size and bool(np.all(np.mod(ts, 1.0) == 0.0)):  # the common case: whole seconds
        return ts.astype(np.int64).tolist()
    return [int(t) if t.is_integer() else t for t in ts.tolist()]


def _plain(arr: np.ndarray) -> list[Any]:
    return [None if x != x else x for x in arr.tolist()]


def _raw_series(metric: str, ts: np.ndarray, values: list[Any], total: int) -> Series:
    if all(type(v) is float for v in values):  # simulated and most pushed series
        numbers = values
    else:
        numbers = [v if isinstance(v, int | float) and not isinstance(v, bool) else None for v in values]
    return Series(metric, _stamps(ts), values, numbers, numbers, numbers, [1] * len(values), total)


def _check(name: str, value: int | None, bounds: tuple[int, int]) -> None:
    if value is not None and not bounds[0] <= value <= bounds[1]:
        raise InvalidInput(f"{name} must be between {bounds[0]} and {bounds[1]}", field=name)


class Telemetry:
    def __init__(
        self, world: Engine, *, devices: DeviceRegistry, retention: Retention, stats: TelemetryStats
    ) -> None:
        """``stats``: where clients' reads (:meth:`read`, :meth:`read_source`) are counted."""
        self.world = world
        self.devices = devices
        self.retention = retention
        self.stats = stats

    # Clients' reads ----------------------------------------------------------------------------
    def read(self, device_id: str, query: TelemetryQuery) -> TelemetryPage:
        page = self.query(device_id, query)
        self.stats.read(sum(len(s.timestamps) for s in page.series), page.start)
        return page

    def read_source(self, query: SourceQuery) -> SourceSeries:
        found = self.query_source(query)
        self.stats.read(len(found.series.timestamps), found.start)
        return found

    # Series construction ---------------------------------------------------------------------
    def _source(self, device_id: str, history: bool) -> TelemetrySource:
        """The live device, else (with ``history``) the archived one; ``NotFound`` otherwise."""
        devices = self.devices
        doc = devices.find_doc(device_id)
        fleet = devices.sensor_of.get(device_id)
        if doc is not None:
            dtype = devices.device_type_of(doc)
            metrics = tuple(m.name for m in dtype.metrics) if dtype else ()
            return TelemetrySource(device_id, metrics, fleet, self.world.now())
        archived = devices.archive.get(device_id) if history else None
        if archived is None:
            raise not_found(device_id)
        return TelemetrySource(
            device_id,
            tuple(archived["metrics"]),
            fleet if archived["simulated"] else None,
            archived["deleted_at"],
        )

    def _series(
        self, src: TelemetrySource, metric: str, stored_metrics: set[str], policy: RetentionPolicy
    ) -> MetricSeries:
        stored = StoredSeries(self.world.store, src.device_id, metric)
        fleet = src.fleet
        if fleet is None or not any(m.name == metric for m in fleet.group.metrics):
            return stored
        since = self.retention.since(metric, policy)
        proc = ProceduralSeries(fleet, src.device_id, metric, src.upto, since)
        return MergedSeries(proc, stored) if metric in stored_metrics else proc

    def _window(self, start: float | None, end: float | None, hours: int | None) -> tuple[float, float]:
        _check("hours", hours, HOURS_RANGE)
        end = self.world.now() if end is None else float(end)
        if start is None:
            start = end - (hours * 3600 if hours is not None else DAY)
        start = float(start)
        if end < start:
            raise InvalidInput("end must not be before start", field="end")
        if end - start > MAX_RANGE_S:
            raise InvalidInput("Time range too large (max 30 days)", field="start")
        return start, end

    # GET /devices/:id/telemetry --------------------------------------------------------------
    def query(self, device_id: str, q: TelemetryQuery) -> TelemetryPage:
        _check("limit", q.limit, LIMIT_RANGE)
        _check("offset", q.offset, (0, MAX_OFFSET))
        if q.aggregate is not None and q.aggregate not in AGGREGATES:
            raise InvalidInput(
                f"Invalid aggregate '{q.aggregate}': expected one of {', '.join(AGGREGATES)}",
                field="aggregate",
            )
        lo, hi = self._window(q.start, q.end, q.hours)
        src = self._source(device_id, q.history)
        stored_metrics = set(self.world.store.sample_metrics(device_id))
        if q.metric is not None:
            names: tuple[str, ...] = (q.metric,)
        else:
            extra = sorted(stored_metrics - set(src.metrics) - {"_raw"})
            names = src.metrics + tuple(extra)
            if not names and "_raw" in stored_metrics:
                names = ("_raw",)
        if len(names) > MAX_METRICS:
            raise InvalidInput(f"Too many metrics ({len(names)} > {MAX_METRICS})", field="metric")
        policy = self.retention.policy()
        series = {m: self._series(src, m, stored_metrics, policy) for m in names}
        totals = {m: s.count(lo, hi) for m, s in series.items()}
        total = totals[names[0]] if names else 0
        aggregated = q.aggregate is not None
        next_cursor = None
        if q.bucketed:
            out = tuple(
                self._bucketed(m, s, lo, hi, q.limit, q.aggregate, totals[m]) for m, s in series.items()
            )
        elif q.aggregate is not None:
            out = tuple(self._aggregate(m, s, lo, hi, q.aggregate, totals[m]) for m, s in series.items())
        else:
            out, next_cursor = self._raw(series, totals, lo, hi, q)
        return TelemetryPage(
            device_id=device_id,
            metrics=names,
            series=out,
            start=lo,
            end=hi,
            aggregated=aggregated,
            bucketed=q.bucketed,
            offset=q.offset,
            limit=q.limit,
            total=total,
            next_cursor=next_cursor,
        )

    def _raw(
        self,
        series: dict[str, MetricSeries],
        totals: dict[str, int],
        lo: float,
        hi: float,
        q: TelemetryQuery,
    ) -> tuple[tuple[Series, ...], float | None]:
        """Newest-first pages; the cursor makes the next page strictly older. With several metrics
        every page is cut at the newest of the oldest timestamps of the metrics that have more, so
        each point of each metric is returned exactly once across pages."""
        top = hi if q.cursor is None else min(hi, float(np.nextafter(float(q.cursor), -np.inf)))
        pages: dict[str, tuple[np.ndarray, list[Any]]] = {}
        cut: float | None = None
        for metric, s in series.items():
            ts, values, _ = s.page(lo, top, q.offset, q.limit)
            pages[metric] = (ts, values)
            if len(ts) and s.count(lo, top) > q.offset + len(ts):
                cut = float(ts[-1]) if cut is None else max(cut, float(ts[-1]))
        out = []
        for metric, (ts, values) in pages.items():
            if cut is not None and len(ts) and ts[-1] < cut:
                keep = int(np.searchsorted(-ts, -cut, side="right"))
                ts, values = ts[:keep], values[:keep]
            out.append(_raw_series(metric, ts, values, totals[metric]))
        return tuple(out), cut

    def _aggregate(self, metric: str, s: MetricSeries, lo: float, hi: float, fn: str, total: int) -> Series:
        last_ts, last, mins, maxs, sums, counts = reduce(s.chunks(lo, hi), None, lo)
        if not len(last_ts):
            return Series(metric, [], [], [], [], [], [], total)
        value = aggregate_values(fn, last, mins, maxs, sums, counts)
        start = int(lo) if float(lo).is_integer() else lo
        return Series(
            metric, [start], _plain(value), _plain(mins), _plain(maxs), _plain(sums), counts.tolist(), total
        )

    def _bucketed(
        self, metric: str, s: MetricSeries, lo: float, hi: float, limit: int, fn: str | None, total: int
    ) -> Series:
        """At most ``limit`` evenly spaced points, oldest first. Each bucket keeps its newest point
        (or, with an aggregate, the function over the bucket) plus min/max/sum/count."""
        if total <= limit and fn is None:
            ts, values, _ = s.page(lo, hi, 0, limit)
            return _raw_series(metric, ts[::-1], values[::-1], total)
        size = bucket_size(hi - lo, limit)
        last_ts, last, mins, maxs, sums, counts = reduce(s.chunks(lo, hi), size, lo)
        value = aggregate_values(fn or "last", last, mins, maxs, sums, counts)
        return Series(
            metric,
            _stamps(last_ts),
            _plain(value),
            _plain(mins),
            _plain(maxs),
            _plain(sums),
            counts.tolist(),
            total,
        )

    # GET /telemetry ----------------------------------------------------------------------------
    def query_source(self, q: SourceQuery) -> SourceSeries:
        if not q.source:
            raise InvalidInput("Missing required query parameter 'source'", field="source")
        if not q.metric:
            raise InvalidInput("Missing required query parameter 'metric'", field="metric")
        _check("limit", q.limit, LIMIT_RANGE)
        _check("offset", q.offset, (0, MAX_OFFSET))
        allowed = (*AGGREGATES, "count")
        if q.aggregate is not None and q.aggregate not in allowed:
            raise InvalidInput(
                f"Invalid aggregate '{q.aggregate}': expected one of {', '.join(allowed)}", field="aggregate"
            )
        parts = q.source.split(":")
        device_id = parts[1] if len(parts) >= 2 and parts[0] == "device" else q.source
        lo, hi = self._window(q.start, q.end, None)
        transform = parts[0] == "transform" and len(parts) == 2  # its outputs are stored under its id
        if transform:
            src = TelemetrySource(q.source, (), None, self.world.now())
        else:
            src = self._source(device_id, history=False)
        stored_metrics = set(self.world.store.sample_metrics(device_id))
        s = self._series(src, q.metric, stored_metrics, self.retention.policy())
        total = s.count(lo, hi)
        common: dict[str, Any] = {
            "source_id": q.source if transform else f"device:{device_id}",
            "source": q.source,
            "metric": q.metric,
            "start": lo,
            "end": hi,
            "total_count": total,
        }
        if q.aggregate is not None:
            row = self._aggregate(
                q.metric, s, lo, hi, "avg" if q.aggregate == "count" else q.aggregate, total
            )
            value = total if q.aggregate == "count" else (row.values[0] if len(row) else None)
            return SourceSeries(**common, series=row, aggregation=q.aggregate, value=value)
        ts, values, quality = s.page(lo, hi, q.offset, q.limit)
        series = _raw_series(q.metric, ts[::-1], values[::-1], total)
        return SourceSeries(**common, series=series, quality=quality[::-1])
