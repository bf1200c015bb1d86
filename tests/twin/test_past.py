"""The world's past: a site that has been running ``history`` seconds before sim time 0, read from the
same pure functions as the present (no HTTP here; the API's view is in the automation and gateway tests).
"""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from hardware.ports.devices import TelemetryQuery
from twin.automation.server import automation_of
from twin.fleet import CameraSpec, WorldConfig, default_sensor_group
from twin.past import DEFAULT_HISTORY_S, first_tick, parse_span
from twin.scenario.model import scenario_model
from twin.sensors import sensors_of
from twin.wings import KINDS
from twin.world import World

DAY = 86_400.0
SENSOR = "env_sensor-0002"


def day_of(world: World, device_id: str = SENSOR, metric: str = "temperature") -> tuple[list, list]:
    """The last 24 h of one metric, every point (newest first)."""
    query = TelemetryQuery(metric=metric, hours=24, limit=5000)
    stamps, values = [], []
    while True:
        page = automation_of(world).telemetry.query(device_id, query)
        stamps += page.series[0].timestamps
        values += page.series[0].values
        if page.next_cursor is None:
            return stamps, values
        query = dataclasses.replace(query, cursor=page.next_cursor)


def sensor_world(seed: int = 7, history: float = DEFAULT_HISTORY_S) -> World:
    sensors = (default_sensor_group(3),)
    config = WorldConfig(seed=seed, history=history, sensors=sensors, cameras=CameraSpec(0))
    return World(config, kinds=KINDS)


def test_a_fresh_world_has_a_full_day_behind_it() -> None:
    world = sensor_world()
    stamps, values = day_of(world)
    assert len(stamps) == 24 * 360 + 1  # one sample every 10 s, both ends included
    assert stamps[0] == world.epoch and stamps[-1] == world.epoch - DAY
    assert len(set(values)) > 100  # a signal, not a constant
    fleet = sensors_of(world).by_device[SENSOR]
    assert values[-1] == fleet.values_of(SENSOR, -DAY)["temperature"]


def test_the_past_ends_where_history_says() -> None:
    world = sensor_world(history=3600.0)
    stamps, _ = day_of(world)
    assert len(stamps) == 361 and stamps[-1] == world.epoch - 3600
    bare = sensor_world(history=0.0)
    assert day_of(bare)[0] == [bare.epoch]


def test_same_seed_same_past_another_seed_another() -> None:
    assert day_of(sensor_world(7)) == day_of(sensor_world(7))
    assert day_of(sensor_world(7))[1] != day_of(sensor_world(8))[1]


def test_the_live_samples_continue_the_past() -> None:
    world = sensor_world()
    world.env.run(until=61)
    stamps, values = day_of(world)
    fleet = sensors_of(world).by_device[SENSOR]
    assert stamps[:7] == [world.epoch + 60 - 10 * i for i in range(7)]
    assert values[6] == fleet.values_of(SENSOR, 0.0)["temperature"]


def test_devices_were_last_seen_in_the_past() -> None:
    world = sensor_world()
    devices = automation_of(world).devices
    assert devices.last_sample(SENSOR) == world.epoch
    fleet = sensors_of(world).by_device[SENSOR]
    assert fleet.last_report(SENSOR, -95.0) == -100.0  # before t=0 the device was reporting already
    assert fleet.last_report(SENSOR, -DEFAULT_HISTORY_S - 5) is None


def test_a_month_of_past_costs_nothing_at_start() -> None:
    config = WorldConfig(history=30 * DAY, sensors=(default_sensor_group(10_000),), cameras=CameraSpec(0))
    world = World(config, kinds=KINDS)
    thirty_days = TelemetryQuery(metric="humidity", start=world.epoch - 30 * DAY, end=world.epoch, limit=10)
    page = automation_of(world).telemetry.query("env_sensor-9999", thirty_days)
    assert page.total == 30 * 8640 + 1 and len(page.series[0].timestamps) == 10
    # nothing proportional to span x sensors is made: the fleet holds its first sample's number only
    assert sensors_of(world).groups["env_sensor"].first_tick == -30 * 8640


def test_the_past_survives_restore_and_reset() -> None:
    world = sensor_world()
    before = day_of(world)
    snap = world.snapshot()
    world.env.run(until=50)
    world.restore(snap)
    assert day_of(world) == before
    world.env.run(until=50)
    world.reset()
    assert day_of(world) == before


def test_history_in_a_scenario() -> None:
    model = scenario_model()
    assert model.model_validate({"name": "x"}).world_config().history == DEFAULT_HISTORY_S
    assert model.model_validate({"name": "x", "history": "30d"}).world_config().history == 30 * DAY
    assert model.model_validate({"name": "x", "history": 90}).history == 90.0
    for bad in ("7 days", "-1d", -5, True, "400d", None):
        with pytest.raises(ValidationError, match="history"):
            model.model_validate({"name": "x", "history": bad})


def test_spans_and_first_ticks() -> None:
    assert [parse_span(v) for v in ("7d", "12h", "30m", "45s", "2w", "1.5h", "90")] == [
        7 * DAY,
        12 * 3600.0,
        1800.0,
        45.0,
        14 * DAY,
        5400.0,
        90.0,
    ]
    assert parse_span(3.0) == 3.0 and parse_span("soon") == "soon"
    assert first_tick(DAY, 10.0) == -8640 and first_tick(0.0, 10.0) == 0 and first_tick(25.0, 10.0) == -2


def test_reading_one_device_again_gives_the_same_values_and_follows_new_spikes() -> None:
    world = sensor_world()
    fleet = sensors_of(world).by_device[SENSOR]
    first = fleet.values_of(SENSOR, -DAY)
    first["temperature"] = 1e9  # a caller's copy: changing it changes nothing of the fleet
    again = fleet.values_of(SENSOR, -DAY)
    assert again == fleet.values_of(SENSOR, -DAY) and again["temperature"] != 1e9
    fleet.open_window(SENSOR, -2 * DAY, None, metric="temperature", delta=5.0)
    spiked = fleet.values_of(SENSOR, -DAY)
    assert spiked["temperature"] == pytest.approx(again["temperature"] + 5.0)
    assert spiked["humidity"] == again["humidity"]
