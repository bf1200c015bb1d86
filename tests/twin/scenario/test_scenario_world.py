from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SCENARIOS
from twin.fleet import SignalKind
from twin.scenario import ScenarioError, load_scenario
from twin.scenario.model import parse_scenario


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_scenarios_parse(path: Path) -> None:
    scenario = load_scenario(path)
    config = scenario.world_config(wall_now=1_800_000_000.5)
    assert config.cameras.count >= 1 and config.sensors


def test_default_scenario_is_a_live_world() -> None:
    scenario = load_scenario(SCENARIOS / "default.yaml")
    config = scenario.world_config(wall_now=1_800_000_000.5)
    assert scenario.clock.mode == "realtime" and config.epoch == 1_800_000_000
    assert config.sensors[0].count == 5 and config.sensors[0].metrics[0].signal.kind is SignalKind.DIURNAL


def test_unknown_key_names_file_line_and_path() -> None:
    text = (
        "name: x\nfleet:\n  sensors:\n    - type: t\n      count: 1\n"
        "      metrics: {a: {kind: sine}}\n      colour: red\n"
    )
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml")
    assert "s.yaml:7: fleet.sensors.0.colour: unknown key" in str(err.value)


def test_bad_value_names_its_path() -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario("name: x\nclock:\n  speed: -2\n", "s.yaml")
    assert "s.yaml:3: clock.speed:" in str(err.value)


@pytest.mark.parametrize("text", ["", "- a\n- b\n", "name: [unclosed\n"])
def test_not_a_scenario(text: str) -> None:
    with pytest.raises(ScenarioError):
        parse_scenario(text, "s.yaml")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "nope.yaml")


def test_signal_shorthands_map_onto_the_procedural_kinds() -> None:
    text = (
        "name: x\nfleet:\n  sensors:\n    - type: t\n      count: 1\n      metrics:\n"
        "        battery: {kind: battery_drain}\n"
        "        slow: {kind: drift, mean: 5, drift_per_day: 2}\n"
        "        hum: {kind: noise, mean: 40, noise: 1}\n"
    )
    battery, slow, hum = (m.signal for m in parse_scenario(text, "s.yaml").world_config().sensors[0].metrics)
    assert battery.kind is SignalKind.CONSTANT and battery.mean == 100 and battery.drift_per_day == -1
    assert (battery.lo, battery.hi) == (0, 100)
    assert slow.drift_per_day == 2 and slow.mean == 5 and hum.noise == 1 and hum.kind is SignalKind.CONSTANT
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text.replace("battery_drain", "random_jump"), "s.yaml")
    assert "s.yaml:7: fleet.sensors.0.metrics.battery.kind" in str(err.value)
