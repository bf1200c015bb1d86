"""The ``step`` and ``random_walk`` signal kinds: pure, vectorised functions of (device key, t)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from tests.conftest import SCENARIOS
from twin.fleet import SignalKind, SignalSpec
from twin.rng import stream_key
from twin.scenario import ScenarioError, load_scenario
from twin.scenario.model import parse_scenario
from twin.sensors import sensors_of
from twin.signals import evaluate, metric_key, walk_scales, wander
from twin.wings import KINDS
from twin.world import World

EPOCH = 1_767_225_600.0
STEP = SignalSpec(SignalKind.STEP, mean=20.0, steps=((3600.0, 35.0), (7200.0, 20.5)))
WALK = SignalSpec(SignalKind.RANDOM_WALK, mean=50.0, amplitude=10.0, period=3600.0, step_s=30.0, decimals=9)


def keys(n: int, seed: int = 3) -> np.ndarray:
    devices = np.array([stream_key(seed, f"probe-{i:05d}") for i in range(n)], dtype=np.uint64)
    return metric_key(devices, 0)


@pytest.mark.parametrize("spec", [STEP, WALK], ids=["step", "random_walk"])
def test_same_keys_and_times_give_the_same_values(spec: SignalSpec) -> None:
    t = np.arange(0.0, 20_000.0, 7.0)
    first = evaluate(spec, keys(5)[None, :], t[:, None], EPOCH)
    again = evaluate(dataclasses.replace(spec), keys(5)[None, :], t[:, None], EPOCH)
    assert np.array_equal(first, again)
    other_seed = evaluate(spec, keys(5, seed=4)[None, :], t[:, None], EPOCH)
    assert spec.kind is SignalKind.STEP or not np.array_equal(first, other_seed)


@pytest.mark.parametrize(
    "spec",
    [
        STEP,
        dataclasses.replace(STEP, noise=0.3, spread=0.1, drift_per_day=1.5, decimals=4),
        WALK,
        dataclasses.replace(WALK, noise=0.2, spread=0.2, lo=35.0, hi=65.0, step_s=None),
    ],
    ids=["step", "step-noisy", "walk", "walk-noisy-clamped"],
)
def test_a_block_agrees_exactly_with_single_points(spec: SignalSpec) -> None:
    """Like ``SensorFleet.block``: t of shape (chunk, 1) against keys of shape (1, devices)."""
    k = keys(40)
    times = 3590.0 + 5.0 * np.arange(64, dtype=np.float64)
    block = evaluate(spec, k[None, :], times[:, None], EPOCH)
    assert block.shape == (64, 40)
    for j in (0, 2, 3, 63):
        assert np.array_equal(block[j], evaluate(spec, k, times[j], EPOCH))  # one instant, whole fleet
    for i in (0, 17, 39):
        one = evaluate(spec, k[i : i + 1], times, EPOCH)  # one device's history, as the telemetry API asks
        assert np.array_equal(block[:, i], one)
        assert block[5, i] == evaluate(spec, k[i : i + 1], float(times[5]), EPOCH)[0]


def test_random_walk_shared_knot_tables_give_bit_identical_values() -> None:
    """Blocks and histories gather knots from a per-device table; single instants hash each point."""
    k = keys(60)
    t = np.sort(np.random.default_rng(5).uniform(-50_000.0, 40 * 86_400.0, 120))
    points = np.stack([wander(WALK, k, float(x)) for x in t])
    assert np.array_equal(wander(WALK, k[None, :], t[:, None]), points)
    assert np.array_equal(np.stack([wander(WALK, k[i : i + 1], t) for i in range(60)], axis=1), points)
    dense = np.arange(0.0, 86_400.0, 10.0)
    history = wander(WALK, k[:1], dense)
    assert np.array_equal(history[::97], np.array([wander(WALK, k[:1], float(x))[0] for x in dense[::97]]))


def test_step_levels_before_at_and_after_each_boundary() -> None:
    t = np.array([0.0, 3599.999, 3600.0, 3600.001, 7199.0, 7200.0, 1e7])
    values = evaluate(STEP, keys(3)[None, :], t[:, None], EPOCH)
    assert values.tolist() == [[v] * 3 for v in (20.0, 20.0, 35.0, 35.0, 35.0, 20.5, 20.5)]


def test_step_spread_scales_each_device_level_like_its_mean() -> None:
    spec = dataclasses.replace(STEP, spread=0.1, decimals=9)
    k = keys(200)
    before, during = evaluate(spec, k, 0.0, EPOCH), evaluate(spec, k, 5000.0, EPOCH)
    assert np.allclose(during / before, 35.0 / 20.0)
    assert before.min() >= 18.0 and before.max() <= 22.0 and before.std() > 0.5


def test_step_takes_noise_drift_and_limits_like_the_other_kinds() -> None:
    spec = dataclasses.replace(STEP, drift_per_day=-10.0, hi=30.0, decimals=3)
    at = evaluate(spec, keys(2), np.array([[0.0], [43_200.0], [4000.0]]), EPOCH)
    assert at[0].tolist() == [20.0, 20.0]
    assert at[1].tolist() == [15.5, 15.5]  # 20.5 after the last step, less half a day of drift
    assert at[2].tolist() == [30.0, 30.0]  # 35 minus a little drift, held at hi
    noisy = evaluate(dataclasses.replace(STEP, noise=0.5), keys(1000), 100.0, EPOCH)
    assert 0.4 < noisy.std() < 0.6 and abs(noisy.mean() - 20.0) < 0.1


def test_random_walk_increments_grow_with_the_lag_up_to_the_period() -> None:
    """Over many devices: the variance of x(t + Δ) - x(t) grows about linearly with Δ between the
    finest scale and the period, then levels off at twice the variance of the wander."""
    k = keys(3000)[None, :]
    t0 = np.array([[1234.5]])
    start = evaluate(WALK, k, t0, EPOCH) - WALK.mean
    lags = [60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 3600.0, 36_000.0, 360_000.0]
    var = {lag: float(np.mean((evaluate(WALK, k, t0 + lag, EPOCH) - WALK.mean - start) ** 2)) for lag in lags}
    for short, long in itertools.pairwise(lags[:6]):  # doubling the lag about doubles it
        assert 1.6 < var[long] / var[short] < 2.5, (short, long, var)
    assert var[1920.0] < var[3600.0]
    amp2 = WALK.amplitude**2
    assert 1.5 * amp2 < var[36_000.0] < 2.5 * amp2 and 1.5 * amp2 < var[360_000.0] < 2.5 * amp2
    assert var[60.0] < 0.1 * amp2


def test_random_walk_stays_near_its_mean_with_about_amplitude_spread() -> None:
    k = keys(500)[None, :]
    t = np.arange(0.0, 30 * 86_400.0, 3_607.0)[:, None]  # a month, hourly-ish
    values = evaluate(WALK, k, t, EPOCH)
    assert abs(values.mean() - 50.0) < 1.0
    assert 8.5 < values.std() < 11.5
    assert np.abs(values - 50.0).max() < 7 * WALK.amplitude
    raw = wander(WALK, k, t)
    assert np.isfinite(raw).all() and 0.85 < raw.std() < 1.15


def test_random_walk_moves_smoothly_and_devices_differ() -> None:
    k = keys(50)
    t = np.arange(0.0, 7200.0, 5.0)
    series = evaluate(WALK, k[None, :], t[:, None], EPOCH)
    steps = np.abs(np.diff(series, axis=0))
    assert steps.max() < 3.0  # 5 s apart: a wander, not white noise
    assert series.std(axis=0).min() > 0.5  # every device moves
    corr = np.corrcoef(series.T)
    assert np.abs(corr[np.triu_indices(50, 1)]).mean() < 0.5  # and not in lock-step


def test_random_walk_scales_are_bounded_in_number_and_end_at_the_period() -> None:
    default = walk_scales(dataclasses.replace(WALK, step_s=None))
    assert len(default) == 11 and default[-1] == 3600.0 and default[0] == pytest.approx(3600.0 / 1024)
    assert len(walk_scales(dataclasses.replace(WALK, step_s=0.001))) == 12
    assert walk_scales(dataclasses.replace(WALK, step_s=1e6)).tolist() == [3600.0]
    assert walk_scales(WALK)[0] == pytest.approx(3600.0 / 128)  # 30 s rounds to period / 2**7


def test_random_walk_amplitude_zero_and_spread() -> None:
    flat = evaluate(dataclasses.replace(WALK, amplitude=0.0), keys(4), np.arange(5.0)[:, None], EPOCH)
    assert (flat == 50.0).all()
    wide = dataclasses.replace(WALK, spread=0.5)
    k = keys(400)[None, :]
    t = np.arange(0.0, 20 * 3600.0, 600.0)[:, None]
    per_device = evaluate(wide, k, t, EPOCH).std(axis=0)
    assert per_device.max() / per_device.min() > 1.5


def fleet(metrics: str) -> str:
    return f"name: x\nfleet:\n  sensors:\n    - type: t\n      count: 2\n      metrics:\n{metrics}"


def test_yaml_step_and_random_walk_parse_into_specs() -> None:
    text = fleet(
        "        setpoint: {kind: step, mean: 20, steps: [[3600, 35], [7200, 20]], noise: 0.1, min: 0}\n"
        "        level: {kind: random_walk, mean: 50, amplitude: 10, period: 3600, step_s: 30}\n"
        "        walk: {kind: random_walk, amplitude: 1}\n"
    )
    metrics = parse_scenario(text, "s.yaml").world_config().sensors[0].metrics
    setpoint, level, walk = (m.signal for m in metrics)
    assert setpoint.kind is SignalKind.STEP and setpoint.steps == ((3600.0, 35.0), (7200.0, 20.0))
    assert setpoint.noise == 0.1 and setpoint.lo == 0.0
    assert level.kind is SignalKind.RANDOM_WALK and level.step_s == 30.0 and level.period == 3600.0
    assert walk.step_s is None and walk.steps == ()
    hash(setpoint), hash(level)  # specs stay hashable


@pytest.mark.parametrize(
    ("metric", "key", "message"),
    [
        ("{kind: step, mean: 20}", "", "Value error, kind 'step' needs 'steps'"),
        ("{kind: step, steps: []}", "", "Value error, kind 'step' needs 'steps'"),
        (
            "{kind: step, steps: [[7200, 1], [3600, 2]]}",
            "",
            "'steps' times must strictly increase: 3600 comes",
        ),
        (
            "{kind: step, steps: [[60, 1], [60, 2]]}",
            "",
            "'steps' times must strictly increase: 60 comes after 60",
        ),
        ("{kind: step, steps: [[60, 1, 2]]}", ".steps.0", "Tuple should have at most 2 items"),
        ("{kind: step, steps: [[60]]}", ".steps.0.1", "Field required"),
        ("{kind: step, steps: [[-5, 1]]}", ".steps.0.0", "Input should be greater than or equal to 0"),
        ("{kind: step, steps: [[.inf, 1]]}", ".steps.0.0", "Input should be a finite number"),
        ("{kind: step, steps: [[60, hot]]}", ".steps.0.1", "Input should be a valid number"),
        ("{kind: step, steps: 35}", ".steps", "Input should be a valid list"),
        ("{kind: sine, steps: [[60, 1]]}", "", "'steps' applies to kind 'step' only, not 'sine'"),
        (
            "{kind: step, steps: [[60, 1]], step_s: 3}",
            "",
            "'step_s' applies to kind 'random_walk' only, not 'step'",
        ),
        ("{kind: random_walk, step_s: 0}", ".step_s", "Input should be greater than 0"),
        ("{kind: random_walk, period: 0}", ".period", "Input should be greater than 0"),
        ("{kind: random_walks}", ".kind", "'step' or 'random_walk'"),
    ],
)
def test_yaml_bad_signals_name_the_line_and_key(metric: str, key: str, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(fleet(f"        m: {metric}\n"), "s.yaml")
    assert f"s.yaml:7: fleet.sensors.0.metrics.m{key}" in str(err.value)
    assert message in str(err.value)


def test_the_library_file_switches_its_set_point_and_wanders_per_sensor() -> None:
    world = World(load_scenario(SCENARIOS / "signals.yaml").world_config(), kinds=KINDS)
    sensors = sensors_of(world).groups["process_sensor"]
    at = sensors.block(np.array([0.0, 115.0, 120.0, 295.0, 300.0, 600.0]))
    setpoint = at["setpoint"]
    assert np.allclose(setpoint[1] * 35.0 / 20.0, setpoint[2], atol=0.02)  # both rounded to 0.01
    assert np.array_equal(setpoint[0], setpoint[1]) and np.array_equal(setpoint[2], setpoint[3])
    assert np.array_equal(setpoint[4], setpoint[0]) and np.array_equal(setpoint[5], setpoint[0])
    assert setpoint[0].min() >= 19.0 and setpoint[0].max() <= 21.0 and len(set(setpoint[0].tolist())) > 1
    level = at["level"]
    assert len(set(level[5].tolist())) > 15 and level[5].std() > 3.0 and ((level >= 0) & (level <= 100)).all()
    again = World(load_scenario(SCENARIOS / "signals.yaml").world_config(), kinds=KINDS)
    assert sensors_of(again).groups["process_sensor"].values_of("process_sensor-0007", 600.0) == {
        "setpoint": float(setpoint[5, 6]),
        "level": float(level[5, 6]),
    }
