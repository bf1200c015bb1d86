"""The type checker passes: mypy, configured in pyproject.toml (``[tool.mypy]``), over the ports and
every module that implements one, with no error. ``make lint`` runs the same check."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(600)  # a first run, without mypy's cache, checks every module
def test_mypy_finds_no_error() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"mypy found errors:\n{run.stdout}{run.stderr}"
