"""The OTA-failure library file at every stage an uploaded install runs through: the careful client
polls each install to ``failed`` (the file itself fails at ``deploy``; here its stage is swapped).
``prepare`` is the first stage of an install from a path on the device, which the client does not
use: a failure armed there waits for such an install."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hardware.ports.events import EventKind
from tests.conftest import SCENARIOS
from tests.twin.scenario.test_runner import client
from twin.scenario import report
from twin.scenario.runner import RunOptions, run


@pytest.mark.parametrize("stage", ["upload", "extract", "validate", "deploy"])
def test_careful_client_polls_a_failed_install_to_its_end_at_every_stage(stage: str, tmp_path: Path) -> None:
    text = (SCENARIOS / "ota_failure.yaml").read_text()
    assert "stage: deploy" in text
    path = tmp_path / f"ota_failure_{stage}.yaml"
    path.write_text(text.replace("stage: deploy", f"stage: {stage}"))
    result = asyncio.run(run(path, RunOptions(step=True, client=client("careful") + " --ota")))
    assert result.passed, report.summary(result)
    verdict = next(v for v in result.verdicts if v.name == "polls_ota_to_terminal")
    assert verdict.message.startswith("polled to 'failed'"), verdict.message
    states = [e.data for e in result.record.events if e.kind is EventKind.CAMERA_OTA_STATE]
    assert states[-1]["status"] == "failed"
