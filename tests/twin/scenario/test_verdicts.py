"""Honest verdicts: what nothing exercised is inconclusive, not passed; the client's exit status is
judged; the exit status of ``twin scenario run`` and the reports tell the outcomes apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.conftest import SCENARIOS
from twin.cli import FAILED, INCONCLUSIVE, NOT_RUN, PASSED, main
from twin.scenario.client import ClientSpec
from twin.scenario.expectations import HonoursRetryAfter, NoUnknownRoutes, Outcome, RunRecord, judge_all

Capture = pytest.CaptureFixture[str]
STORM = str(SCENARIOS / "rate_limit_storm.yaml")
CRASH = f"{sys.executable} -c 'import nonexistent'"
ONE_REQUEST = (
    f"{sys.executable} -c \"import httpx, os; httpx.get(os.environ['TWIN_AUTOMATION_URL'] + '/api/health')\""
)


def record(**kw) -> RunRecord:
    return RunRecord(journal=[], events=[], end=60, **kw)


def scenario(tmp_path: Path, body: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nclock: {mode: step}\nstop: {at: 60}\n" + body)
    return str(path)


def test_without_a_client_nothing_is_exercised() -> None:
    routes, retry = (
        NoUnknownRoutes(expect="no_unknown_routes"),
        HonoursRetryAfter(expect="honours_retry_after"),
    )
    verdicts = judge_all([routes, retry], record())
    assert [(v.outcome, v.passed, v.message) for v in verdicts] == [
        (Outcome.INCONCLUSIVE, False, "not exercised: no client ran"),
    ] * 2
    assert all(v.fails_run for v in verdicts)
    optional = NoUnknownRoutes(expect="no_unknown_routes", optional=True)
    assert not judge_all([optional], record())[0].fails_run


def test_a_client_that_sent_nothing_to_the_server_leaves_its_checks_unexercised() -> None:
    routes = NoUnknownRoutes(expect="no_unknown_routes", server="cam-01")
    (verdict,) = judge_all([routes], record(client_exit=0))
    assert verdict.inconclusive and verdict.message == "not exercised: no request to cam-01"


@pytest.mark.parametrize(
    ("expect_exit", "exit_status", "stopped", "passed", "message"),
    [
        (0, 0, False, True, "exited with status 0"),
        (0, 1, False, False, "exited with status 1 (expected 0)"),
        (0, -11, False, False, "killed by signal 11, SIGSEGV (expected 0)"),
        (0, -15, True, True, "still running at the stop time, stopped by the runner"),
        ("nonzero", 2, False, True, "exited with status 2"),
        ("nonzero", 0, False, False, "exited with status 0 (expected a non-zero status)"),
        (
            "nonzero",
            -15,
            True,
            False,
            "still running at the stop time, stopped by the runner (expected a non-zero",
        ),
        (3, 3, False, True, "exited with status 3"),
        (3, 1, False, False, "exited with status 1 (expected 3)"),
        ("any", 1, False, True, "exited with status 1 (not judged: expect_exit any)"),
    ],
)
def test_the_client_exit_status_is_judged(
    expect_exit: int | str, exit_status: int, stopped: bool, passed: bool, message: str
) -> None:
    run = record(client_exit=exit_status, client_stopped=stopped)
    verdict = ClientSpec(expect_exit=expect_exit).judge(run)
    assert verdict is not None and verdict.passed is passed and verdict.message.startswith(message)
    assert ClientSpec().judge(record()) is None


def test_a_client_that_crashes_at_import_fails_the_run_naming_its_exit_status(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "twin.cli",
            "scenario",
            "run",
            STORM,
            "--report",
            str(tmp_path),
            "--client",
            CRASH,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == FAILED, proc.stdout + proc.stderr
    assert "  FAIL  client exit status: exited with status 1 (expected 0)" in proc.stdout
    assert "  INCONCLUSIVE  honours_retry_after: not exercised" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("FAILED: client exited with status 1 (expected 0); ")
    assert "ModuleNotFoundError: No module named 'nonexistent'" in proc.stderr
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("1", "2")
    client = suite.find("testcase[@name='client exit status']/failure")
    assert client is not None and client.get("message") == "exited with status 1 (expected 0)"
    page = (tmp_path / "report.html").read_text()
    assert "<tr class='inconclusive'><td>INCONCLUSIVE</td>" in page and '<h1 class="failed">' in page


def test_without_a_client_the_run_is_inconclusive(tmp_path: Path, capsys: Capture) -> None:
    status = main(["scenario", "run", STORM, "--quiet", "--until", "30", "--report", str(tmp_path)])
    assert status == INCONCLUSIVE
    out, err = capsys.readouterr()
    assert out.count("  INCONCLUSIVE  ") == 2 and "  no client ran" in out
    assert out.splitlines()[-1] == (
        "INCONCLUSIVE: not exercised: honours_retry_after, no_unknown_routes; no client ran (--client)"
    )
    assert "twin: expectation inconclusive: honours_retry_after: not exercised: no client ran" in err
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and [suite.get(k) for k in ("tests", "failures", "errors")] == ["2", "0", "2"]
    error = suite.find("testcase[@name='honours_retry_after']/error")
    assert error is not None and error.get("type") == "inconclusive"
    assert error.get("message", "").startswith("inconclusive: not exercised: no client ran")
    assert '<h1 class="inconclusive">' in (tmp_path / "report.html").read_text()


def test_an_optional_expectation_may_go_unexercised(tmp_path: Path, capsys: Capture) -> None:
    path = scenario(
        tmp_path,
        "expectations:\n  - expect: no_unknown_routes\n  - expect: honours_retry_after\n    optional: true\n",
    )
    status = main(["scenario", "run", path, "--client", ONE_REQUEST, "--quiet", "--report", str(tmp_path)])
    assert status == PASSED
    out = capsys.readouterr().out
    assert "  PASS  no_unknown_routes: each of 1 requests matched a vendor route" in out
    assert "  INCONCLUSIVE (optional)  honours_retry_after: not exercised" in out and out.endswith("PASSED\n")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("errors"), suite.get("skipped")) == ("0", "1")
    skipped = suite.find("testcase[@name='honours_retry_after']/skipped")
    assert skipped is not None
    assert skipped.get("message", "").startswith("inconclusive (optional): not exercised")
    assert "<tr class='optional'><td>INCONCLUSIVE (optional)</td>" in (tmp_path / "report.html").read_text()


def test_a_client_expected_to_fail_passes_by_failing(tmp_path: Path, capsys: Capture) -> None:
    path = scenario(tmp_path, "client: {expect_exit: nonzero}\n")
    give_up = f"{sys.executable} -c 'raise SystemExit(3)'"
    assert main(["scenario", "run", path, "--client", give_up, "--quiet"]) == PASSED
    assert "  PASS  client exit status: exited with status 3" in capsys.readouterr().out
    assert main(["scenario", "run", path, "--client", f"{sys.executable} -c pass", "--quiet"]) == FAILED
    assert "twin: client" in capsys.readouterr().err


def test_a_client_that_cannot_start_is_not_a_run(tmp_path: Path, capsys: Capture) -> None:
    path = scenario(tmp_path, "")
    assert main(["scenario", "run", path, "--client", str(tmp_path / "no-such-client"), "--quiet"]) == NOT_RUN
    assert "cannot start the client" in capsys.readouterr().err
    assert main(["scenario", "run", path, "--client", "python 'unclosed", "--quiet"]) == NOT_RUN
    assert "cannot split the client command" in capsys.readouterr().err
