"""Wire shapes of telemetry: the per-device history and the cross-device query (release 0.9.24)."""

from __future__ import annotations

from typing import Any

from hardware.ports.devices import CurrentMetric, Series, SourceSeries, TelemetryPage


def _seconds(t: float | None) -> float | int | None:
    if t is None:
        return None
    return int(t) if float(t).is_integer() else t


def rows(s: Series, quality: Any = None) -> list[dict[str, Any]]:
    """One dict per point: ``value`` follows the aggregate; ``min/max/sum/count`` always present."""
    if quality is None:
        return [
            {"timestamp": t, "value": v, "min": lo, "max": hi, "sum": total, "count": n}
            for t, v, lo, hi, total, n in zip(
                s.timestamps, s.values, s.mins, s.maxs, s.sums, s.counts, strict=True
            )
        ]
    return [
        {"timestamp": t, "value": v, "quality": q, "min": lo, "max": hi, "sum": total, "count": n}
        for t, v, q, lo, hi, total, n in zip(
            s.timestamps, s.values, quality, s.mins, s.maxs, s.sums, s.counts, strict=True
        )
    ]


def telemetry_page(p: TelemetryPage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "device_id": p.device_id,
        "metrics": list(p.metrics),
        "data": {s.metric: rows(s) for s in p.series},
        "start": _seconds(p.start),
        "end": _seconds(p.end),
    }
    if not p.metrics:
        return body
    body["aggregated"] = p.aggregated
    body["pagination"] = {
        "offset": p.offset,
        "limit": p.limit,
        "total": p.total,
        "next_cursor": _seconds(p.next_cursor),
    }
    return body


def source_series(s: SourceSeries) -> dict[str, Any]:
    head = {
        "source_id": s.source_id,
        "source": s.source,
        "metric": s.metric,
        "start": _seconds(s.start),
        "end": _seconds(s.end),
    }
    if s.aggregation is not None:
        return {
            **head,
            "aggregation": s.aggregation,
            "value": s.value,
            "count": s.total_count,
            "total_count": s.total_count,
        }
    return {
        **head,
        "count": len(s.series),
        "total_count": s.total_count,
        "data": rows(s.series, s.quality),
    }


def metric_summary(metric: CurrentMetric, newest: Series | None, totals: Series | None) -> dict[str, Any]:
    """One metric of ``GET /devices/:id/telemetry/summary``; no aggregates for non-numeric metrics."""
    latest = newest if newest is not None and len(newest) > 0 else None
    counted = totals if totals is not None and len(totals) > 0 and totals.counts[0] > 0 else None
    return {
        "display_name": metric.display_name,
        "unit": metric.unit,
        "data_type": metric.data_type,
        "is_virtual": metric.is_virtual,
        "current": latest.values[0] if latest is not None else metric.value,
        "current_timestamp": _seconds(latest.timestamps[0]) if latest is not None else None,
        "avg": counted.values[0] if counted is not None else None,
        "min": counted.mins[0] if counted is not None else None,
        "max": counted.maxs[0] if counted is not None else None,
        "count": (
            int(counted.counts[0]) if counted is not None else newest.total if newest is not None else 0
        ),
    }
