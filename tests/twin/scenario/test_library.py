"""The scenario library: every file validates, runs in fast mode, and the schema file is current."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS
from twin.cli import main
from twin.scenario import load_scenario, report
from twin.scenario.expectations import Outcome
from twin.scenario.runner import RunOptions, run
from twin.scenario.schema import SCHEMA_PATH, schema_text

LIBRARY = sorted(SCENARIOS.glob("*.yaml"))
FAST_STOP_S = 30


def test_schema_file_is_current() -> None:
    assert SCHEMA_PATH.read_text() == schema_text(), "run: python -m twin.scenario.schema"
    schema = json.loads(SCHEMA_PATH.read_text())
    assert {"timeline", "expectations", "stop", "fleet"} <= set(schema["properties"])


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_library_file_validates_and_says_what_it_proves(path: Path) -> None:
    load_scenario(path)
    if path.name not in ("default.yaml", "test.yaml"):
        assert path.read_text().startswith("# Proves: ")


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_library_file_runs_in_fast_mode_and_without_a_client_judges_nothing(path: Path) -> None:
    if load_scenario(path).real_names():
        pytest.skip("a real member needs its device and wall time: tests/twin/scenario/test_real_members.py")
    result = asyncio.run(run(path, RunOptions(step=True, stop_at=FAST_STOP_S)))
    assert not result.errors and result.client_verdict is None, report.summary(result)
    assert result.record.end == FAST_STOP_S
    assert all(v.outcome is Outcome.INCONCLUSIVE for v in result.verdicts), report.summary(result)
    assert result.outcome is (Outcome.INCONCLUSIVE if result.verdicts else Outcome.PASSED)


def test_validate_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "validate", str(SCENARIOS / "rate_limit_storm.yaml")]) == 0
    assert main(["scenario", "list"]) == 0
    out = capsys.readouterr().out
    assert "rate_limit_storm.yaml" in out and "Retry-After" in out


def test_a_broken_file_gives_one_line_with_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(
        "name: broken\ntimeline:\n  - at: 10\n    do: latency\n    params:\n      seconds: 1\n      secs: 2\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "twin.cli", "scenario", "validate", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"{path}:7: timeline.0.params.secs: unknown key; did you mean 'seconds'?"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "name: x\ntimeline:\n  - at: 1\n    do: telemetry_spike\n    params: {device: d, delta: 1}\n",
            "s.yaml:5: timeline.0.params.metric: Field required",
        ),
        (
            "name: x\ntimeline:\n  - at: 1\n    do: explode\n",
            "s.yaml:4: timeline.0.do: unknown action 'explode'",
        ),
        (
            "name: x\ntimeline:\n  - do: latency\n    params: {seconds: 1}\n",
            "s.yaml:3: timeline.0: Value error",
        ),
        ("name: x\nexpectations:\n  - expect: journal\n    colour: 1\n", "s.yaml:4: expectations.0.colour"),
        ("name: x\nexpectations:\n  - expect: handles_deleted_device\n", "s.yaml:3: expectations.0.device"),
        (
            "name: x\nexpectations:\n  - expect: reconnects_stream\n    transport: pigeon\n",
            "s.yaml:4: expectations.0.transport",
        ),
        ("name: x\nstop: {at: -1}\n", "s.yaml:2: stop.at"),
    ],
)
def test_schema_errors_name_line_and_key(text: str, where: str) -> None:
    from twin.scenario import ScenarioError
    from twin.scenario.model import parse_scenario

    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml")
    assert where in str(err.value)


def test_cli_refuses_a_missing_file_and_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "run", str(tmp_path / "nope.yaml"), "--quiet"]) == 2
    assert "nope.yaml: cannot read" in capsys.readouterr().err
    assert main(["scenario", "validate", str(tmp_path / "nope.yaml")]) == 2
    with pytest.raises(SystemExit):
        main(["scenario", "run", str(SCENARIOS / "test.yaml"), "--speed", "2", "--step"])
