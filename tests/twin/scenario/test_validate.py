"""``twin scenario validate``: every problem of a file in one pass, one ``file:line: message`` line
each, in the order of the file: the schema, the actions and their parameters, and the names the
file refers to (cameras, servers, simulated sensors and metrics, event kinds)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from twin.scenario import ScenarioError
from twin.scenario.model import parse_scenario

MANY_PROBLEMS = """\
name: many
fleet:
  sensors:
    - type: env_sensor
      count: 2
      metrics: {temperature: {kind: sine}}
  cameras: {count: 1}
timeline:
  - at: 1
    do: explode
  - do: latency
    params: {seconds: 1, server: cam-02}
  - after: {event: camera.powerup}
    do: camera_restart
    params: {camera: cam-03}
  - at: 5
    do: telemetry_spike
    params: {device: env_sensor-0003, metric: t, delta: 1}
  - at: 5
    do: telemetry_gap
    params: {device: env_sensor-0002, secs: 1}
expectations:
  - expect: reconnects_stream
    server: cam-1
  - expect: resumes_within
    seconds: 5
    after: camera.power_on
  - expect: journal
    colour: red
client: {expect_exit: maybe}
stop: {at: -1}
watch:
  - {device: env_sensor-0001, metric: humidity}
"""


def test_every_problem_is_reported_in_one_pass_one_line_each(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(MANY_PROBLEMS)
    proc = subprocess.run(
        [sys.executable, "-m", "twin.cli", "scenario", "validate", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    lines = [line.removeprefix(f"{path}:") for line in proc.stderr.splitlines()]
    assert [line.split(": ", 2)[:2] for line in lines] == [
        ["10", "timeline.0.do"],
        ["11", "timeline.1"],
        ["12", "timeline.1.params.server"],
        ["13", "timeline.2.after.event"],
        ["15", "timeline.2.params.camera"],
        ["18", "timeline.3.params.device"],
        ["21", "timeline.4.params.secs"],
        ["24", "expectations.0.server"],
        ["27", "expectations.1.after"],
        ["29", "expectations.2.colour"],
        ["30", "client.expect_exit"],
        ["31", "stop.at"],
        ["33", "watch.0.metric"],
    ]
    text = "\n".join(lines)
    assert "unknown action 'explode'" in text and "give exactly one of 'at' and 'after'" in text
    assert "unknown server 'cam-02'; known: automation, cam-01" in text
    assert "unknown event kind 'camera.powerup'; did you mean 'camera.power_up'" in text
    assert "unknown camera 'cam-03'; known: cam-01" in text
    assert "unknown simulated sensor 'env_sensor-0003'; known: env_sensor-0001, env_sensor-0002" in text
    assert "unknown metric of env_sensor-0001: 'humidity'; known: temperature" in text
    assert "expected an exit status 0-255, 'nonzero' or 'any', not 'maybe'" in text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name: x\nfleet: {cameras: {count: 0}}\nexpectations:\n  - expect: polls_ota_to_terminal\n",
         "s.yaml:4: expectations.0: unknown server 'cam-01'; known: automation (the default of this kind)"),
        ("name: x\ntimeline:\n  - {at: 1, do: device_offline, params: {device: mine-0001}}\n",
         "s.yaml:3: timeline.0.params.device: unknown simulated sensor 'mine-0001'"),
        ("name: x\nexpectations:\n  - {expect: no_unknown_routes, optional: true}\n",
         "s.yaml:2: expectations: Value error, every expectation is optional"),
        ("name: x\nstop: {at: 1\n", "s.yaml:3: invalid YAML: "),
        ("- a\n", "s.yaml:1: a scenario is a mapping"),
    ],
)  # fmt: skip
def test_references_and_file_level_problems_name_their_line(text: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml")
    assert len(err.value.problems) == 1 and err.value.problems[0].startswith(problem), err.value.problems


def test_deleting_a_device_the_client_may_create_is_not_a_reference_problem() -> None:
    scenario = parse_scenario("name: x\ntimeline:\n  - {at: 1, do: device_delete, params: {device: mine}}\n")
    assert scenario.timeline[0].params == {"device": "mine"}
