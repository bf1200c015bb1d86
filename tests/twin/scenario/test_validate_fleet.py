"""``twin scenario validate`` knows the fleet and the action catalogue: every action's parameters are
in ``scenarios/schema.json``; a device, sensor or camera the fleet lacks is an error in actions and
expectations alike; an unknown key, action, expectation kind, choice or id comes with the closest
names the file could have meant."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import jsonschema_rs
import pytest
import yaml

from tests.conftest import SCENARIOS
from twin.scenario import ScenarioError
from twin.scenario.catalog import ACTIONS
from twin.scenario.model import parse_scenario
from twin.scenario.schema import SCHEMA_PATH

FLEET = """\
name: x
fleet:
  sensors:
    - type: env_sensor
      count: 2
      metrics: {temperature: {kind: sine}}
  cameras: {count: 2}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml")
    return err.value.problems


def step(do: str, params: str) -> str:
    return FLEET + f"timeline:\n  - at: 1\n    do: {do}\n    params: {params}\n"


def test_the_schema_has_every_actions_parameters() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    rules = {
        r["if"]["properties"]["do"]["const"]: r["then"]["properties"]["params"]
        for r in schema["$defs"]["Step"]["allOf"]
    }
    assert set(rules) == set(ACTIONS)
    for name, action in ACTIONS.items():
        assert set(rules[name].get("properties", {})) == set(action.params.model_fields), name
        assert rules[name]["additionalProperties"] is False and rules[name]["description"] == action.doc
    assert rules["latency"]["required"] == ["seconds"] and rules["device_delete"]["required"] == ["device"]


def test_an_editor_checks_a_steps_parameters_with_the_schema() -> None:
    validator = jsonschema_rs.validator_for(json.loads(SCHEMA_PATH.read_text()))
    for path in sorted(SCENARIOS.glob("*.yaml")):
        assert validator.is_valid(yaml.safe_load(path.read_text())), path.name
    good = yaml.safe_load(step("latency", "{seconds: 1, server: cam-01}"))
    assert validator.is_valid(good)
    for params in ("{secs: 1}", "{}", "{seconds: -1}", "{seconds: 1, device: d}"):
        assert not validator.is_valid(yaml.safe_load(step("latency", params))), params
    assert not validator.is_valid(yaml.safe_load(step("device_delete", "{}")))
    assert not validator.is_valid(yaml.safe_load(step("ota_failure", "{stage: nowhere}")))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (step("device_delete", "{device: env_sensor-0003}"),
         "s.yaml:11: timeline.0.params.device: unknown simulated sensor 'env_sensor-0003'; "
         "known: env_sensor-0001, env_sensor-0002; did you mean 'env_sensor-0002' or 'env_sensor-0001'? "
         "(a device the client creates needs another id)"),
        (step("device_delete", "{device: env_sensr-0001}"),
         "s.yaml:11: timeline.0.params.device: unknown simulated sensor 'env_sensr-0001'; "
         "known: env_sensor-0001, env_sensor-0002; did you mean 'env_sensor-0001'"),
        (FLEET + "expectations:\n  - expect: handles_deleted_device\n    device: env_sensor-001\n",
         "s.yaml:10: expectations.0.device: unknown simulated sensor 'env_sensor-001'; "
         "known: env_sensor-0001, env_sensor-0002; did you mean 'env_sensor-0001'"),
        (step("device_offline", "{device: env-sensor-0001}"),
         "s.yaml:11: timeline.0.params.device: unknown simulated sensor 'env-sensor-0001'; "
         "known: env_sensor-0001, env_sensor-0002; did you mean 'env_sensor-0001'"),
        (step("camera_restart", "{camera: cam-3}"),
         "s.yaml:11: timeline.0.params.camera: unknown camera 'cam-3'; known: cam-01, cam-02; did you mean"),
        (step("latency", "{seconds: 1, server: cam-1}"),
         "s.yaml:11: timeline.0.params.server: unknown server 'cam-1'; known: automation, cam-01, cam-02; "
         "did you mean 'cam-01'"),
        (FLEET + "expectations:\n  - expect: reconnects_stream\n    server: cam-03\n",
         "s.yaml:10: expectations.0.server: unknown server 'cam-03'; known: automation, cam-01, cam-02; "
         "did you mean"),
    ],
)  # fmt: skip
def test_ids_the_fleet_lacks_are_errors_in_actions_and_expectations(text: str, problem: str) -> None:
    found = problems(text)
    assert len(found) == 1 and found[0].startswith(problem), found


def test_a_device_the_client_creates_may_be_deleted_and_followed() -> None:
    text = step("device_delete", "{device: thermostat-7}")
    text += "expectations:\n  - expect: handles_deleted_device\n    device: thermostat-7\n"
    scenario = parse_scenario(text)
    assert scenario.timeline[0].params == {"device": "thermostat-7"}
    assert scenario.expectations[0].device == "thermostat-7"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (FLEET + "stopp: {at: 10}\n", "s.yaml:8: stopp: unknown key; did you mean 'stop'?"),
        (step("latency", "{seconds: 1, jiter: 1}"),
         "s.yaml:11: timeline.0.params.jiter: unknown key; did you mean 'jitter'?"),
        (FLEET + "expectations:\n  - expect: journal\n    statsu: 200\n",
         "s.yaml:10: expectations.0.statsu: unknown key; did you mean 'status'?"),
        (FLEET.replace("kind: sine", "kind: sine, amplitde: 2"),
         "s.yaml:6: fleet.sensors.0.metrics.temperature.amplitde: unknown key; did you mean 'amplitude'?"),
        (FLEET + "colour: red\n", "s.yaml:8: colour: unknown key"),
        (FLEET + "timeline:\n  - at: 1\n    do: latncy\n",
         "s.yaml:10: timeline.0.do: unknown action 'latncy'; did you mean 'latency'?"),
        (FLEET + "expectations:\n  - expect: honours_retry_afte\n",
         "s.yaml:9: expectations.0: Input tag 'honours_retry_afte' found using 'expect' does not match any "
         "of the expected tags"),
        (FLEET + "clock: {mode: stpe}\n", "s.yaml:8: clock.mode: Input should be 'realtime' or 'step'; "
         "did you mean 'step'?"),
    ],
)  # fmt: skip
def test_did_you_mean_for_keys_actions_kinds_and_choices(text: str, problem: str) -> None:
    found = problems(text)
    assert len(found) == 1 and found[0].startswith(problem), found
    if "colour" in problem:
        assert "did you mean" not in found[0]  # nothing is close
    if "honours_retry_afte" in problem:
        assert found[0].endswith("; did you mean 'honours_retry_after'?")


def test_an_unknown_action_with_nothing_close_lists_every_action() -> None:
    (found,) = problems(FLEET + "timeline:\n  - at: 1\n    do: explode\n")
    assert found.startswith("s.yaml:10: timeline.0.do: unknown action 'explode'; known: bandwidth, ")
    assert all(name in found for name in ACTIONS)


async def test_the_control_plane_names_the_closest_action(control: httpx.AsyncClient) -> None:
    resp = await control.post("/actions/latncy", json={"params": {"seconds": 1}})
    assert resp.status_code == 400 and "unknown action 'latncy'; did you mean 'latency'?" in resp.text


def test_validate_reports_them_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        FLEET
        + "timeline:\n  - {at: 1, do: device_delete, params: {device: env_sensor-0009}}\n"
        + "expectations:\n  - {expect: handles_deleted_device, device: env_sensr-0002}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "twin.cli", "scenario", "validate", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert [line.removeprefix(f"{path}:").split(": ")[0:2] for line in proc.stderr.splitlines()] == [
        ["9", "timeline.0.params.device"],
        ["11", "expectations.0.device"],
    ]
    assert "did you mean 'env_sensor-0002'" in proc.stderr
