"""Telemetry in the world, no HTTP: procedural history, stored samples, paging, merges, buckets."""

from __future__ import annotations

import numpy as np
import pytest

from hardware.ports.devices import SourceQuery, TelemetryQuery
from hardware.ports.errors import InvalidInput
from hardware.ports.events import EventKind
from twin.automation.server import automation_of
from twin.automation.telemetry import bucket_size
from twin.fleet import MetricSpec, SensorGroup, SignalSpec, WorldConfig
from twin.store import Store
from twin.wings import KINDS
from twin.world import World


def test_procedural_history_matches_the_live_samples(world: World) -> None:
    sub = world.bus.subscribe({EventKind.DEVICE_TELEMETRY}, maxlen=10_000)
    world.env.run(until=95)
    live = [e for e in iter(sub.get_nowait, None) if e.source == "env_sensor-0002"]
    query = TelemetryQuery(metric="humidity", start=world.epoch)  # from t=0: what was live
    page = automation_of(world).telemetry.query("env_sensor-0002", query)
    (series,) = page.series
    assert list(series.timestamps) == [e.data["timestamp"] for e in reversed(live)]
    assert list(series.values) == [e.data["metrics"]["humidity"] for e in reversed(live)]


def test_every_point_once_across_metrics_with_different_clocks(world: World) -> None:
    automation_of(world).devices.create("env_sensor", "lab", "webhook", {}, "lab", None)
    t0 = world.now()
    world.store.put_samples("lab", [("temperature", t0 - i, float(i), None) for i in range(12_000)])
    world.store.put_samples("lab", [("humidity", t0 - 0.5 - 3 * i, float(i), None) for i in range(3000)])
    seen: dict[str, list[float]] = {"temperature": [], "humidity": []}
    cursor = None
    while True:
        page = automation_of(world).telemetry.query("lab", TelemetryQuery(limit=700, cursor=cursor))
        for s in page.series:
            seen.setdefault(s.metric, []).extend(s.timestamps)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen["temperature"] == sorted({t0 - i for i in range(12_000)}, reverse=True)
    assert seen["humidity"] == sorted({t0 - 0.5 - 3 * i for i in range(3000)}, reverse=True)
    assert seen["battery"] == []


def test_pushed_samples_merge_with_a_simulated_history(world: World) -> None:
    world.env.run(until=50)
    automation_of(world).ingest.push_metric("env_sensor-0001", "temperature", 99.0, world.now() - 5)
    query = TelemetryQuery(metric="temperature", start=world.epoch)
    page = automation_of(world).telemetry.query("env_sensor-0001", query)
    stamps = list(page.series[0].timestamps)
    assert stamps[:3] == [world.now(), world.now() - 5, world.now() - 10]
    assert page.series[0].values[1] == 99.0 and page.total == 7


def test_aggregates_skip_non_numbers(world: World) -> None:
    automation_of(world).devices.create("env_sensor", "lab", "webhook", {}, "lab", None)
    now = world.now()
    world.store.put_samples("lab", [("x", now - 2, 1, None), ("x", now - 1, "on", None), ("x", now, 3, None)])
    (s,) = automation_of(world).telemetry.query("lab", TelemetryQuery(metric="x", aggregate="avg")).series
    assert s.values == [2.0] and s.counts == [2] and s.sums == [4.0]
    raw = automation_of(world).telemetry.query("lab", TelemetryQuery(metric="x")).series[0]
    assert raw.values == [3, "on", 1] and raw.mins == [3, None, 1]


def test_limits_are_domain_errors(world: World) -> None:
    for query in (
        TelemetryQuery(limit=0),
        TelemetryQuery(limit=5001),
        TelemetryQuery(hours=721),
        TelemetryQuery(aggregate="median"),
        TelemetryQuery(offset=-1),
    ):
        with pytest.raises(InvalidInput):
            automation_of(world).telemetry.query("env_sensor-0001", query)
    with pytest.raises(InvalidInput):
        automation_of(world).telemetry.query_source(
            SourceQuery("env_sensor-0001", "humidity", aggregate="median")
        )


@pytest.mark.parametrize(
    ("span", "limit"), [(86_400, 1), (86_400, 100), (3600, 5000), (2_592_000, 7), (95, 3)]
)
def test_bucket_count_never_exceeds_limit(span: float, limit: int) -> None:
    size = bucket_size(span, limit)
    assert np.floor(span / size) + 1 <= limit


def test_thirty_days_at_one_hertz_buckets_in_chunks() -> None:
    group = SensorGroup("probe", 1, (MetricSpec("v", SignalSpec(mean=1.0)),), 1.0)
    fast = World(
        WorldConfig(sensors=(group,)), initial_time=30 * 86_400, kinds=KINDS
    )  # history: computed on demand
    page = automation_of(fast).telemetry.query(
        "probe-0001", TelemetryQuery(hours=720, bucketed=True, limit=30)
    )
    (s,) = page.series
    assert len(s) <= 30 and sum(s.counts) == page.total == 30 * 86_400 + 1


def test_samples_survive_dump_and_load() -> None:
    store = Store()
    store.put_samples("d", [("m", 1.0, 2.5, 0.9), ("m", 2.0, {"a": 1}, None)])
    data = store.dump()
    store.put_samples("d", [("m", 3.0, 1, None)])
    store.load(data)
    assert store.sample_page("d", "m", 0, 10, 0, 10) == [(2.0, {"a": 1}, None), (1.0, 2.5, 0.9)]
    store.clear()
    assert store.sample_metrics("d") == []
