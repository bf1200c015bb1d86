"""Verdicts for clients that know nothing of the twin, the run's notices, suites of scenario files
with one JUnit document, and the CI recipe of the README run as written.

The acceptance runs take wall time (the library files are realtime at a speed of their own, about
15 s each): they run concurrently, four processes at once, in one test."""

from __future__ import annotations

import asyncio
import html
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.conftest import SCENARIOS
from twin.cli import main
from twin.scenario import report
from twin.scenario.notices import CLIENT_VARIABLES
from twin.scenario.runner import RunOptions, run
from twin.scenario.suite import FAILED, INCONCLUSIVE, INVALID, NOT_RUN, PASSED, worst

ROOT = SCENARIOS.parent
POLLER = ROOT / "tests" / "clients" / "poller.py"
UNREACHED = "the client made no request to this run's automation server: does it read TWIN_AUTOMATION_URL?"
# A client that makes one request and exits: it never paces itself on the world clock.
ONE_REQUEST = (
    f'{sys.executable} -c "import os, urllib.request; '
    f"urllib.request.urlopen(os.environ['TWIN_AUTOMATION_URL'] + '/api/health').read(); print('one')\""
)
SLEEPER = f"{sys.executable} -c \"import time; print('zzz', flush=True); time.sleep(60)\""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_a_plain_poller_gets_real_verdicts_from_the_library_files_as_the_readme_runs_them() -> None:
    """A stdlib client using time.sleep: it passes rate_limit_storm when it waits out Retry-After
    and fails when it does not; it passes delete_mid_poll when it stops at the 404 and fails when
    it does not. Each exactly as the README shows it (no --step, no --speed)."""
    readme = (ROOT / "README.md").read_text()
    for name in ("rate_limit_storm", "delete_mid_poll"):
        assert f"twin scenario run scenarios/{name}.yaml --client" in readme
    cases = {
        ("rate_limit_storm", ""): (PASSED, "PASS  honours_retry_after: waited out every Retry-After"),
        ("rate_limit_storm", "--ignore-retry-after"): (FAILED, "FAIL  honours_retry_after: t="),
        ("delete_mid_poll", ""): (PASSED, "PASS  handles_deleted_device: stopped polling env_sensor-0001"),
        ("delete_mid_poll", "--ignore-404"): (FAILED, "FAIL  handles_deleted_device: "),
    }
    procs = {
        key: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "twin.cli",
                "scenario",
                "run",
                f"scenarios/{key[0]}.yaml",
                "--client",
                f"python3 {POLLER.relative_to(ROOT)} {key[1]}".strip(),
            ],
            cwd=ROOT,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for key in cases
    }
    for key, proc in procs.items():
        out, _ = proc.communicate(timeout=300)
        status, line = cases[key]
        assert proc.returncode == status, f"{key}: {out}"
        assert line in out and "realtime mode" in out, f"{key}: {out}"
        assert "NOTICE" not in out, out


def _scenario(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\n{body}")
    return path


STEP_WITH_A_DELETE = (
    "clock: {mode: step}\nfleet:\n  sensors:\n    - type: env_sensor\n      count: 2\n"
    "      metrics: {temperature: {kind: sine, mean: 20, amplitude: 3}}\n"
    "timeline:\n  - {at: 5, do: device_delete, params: {device: env_sensor-0001}}\n"
    "expectations:\n  - {expect: handles_deleted_device, device: env_sensor-0001}\nstop: {at: 60}\n"
)


@pytest.mark.parametrize(("flag", "remedy"), [("--step", "drop --step"), (None, "run with --speed 1")])
def test_a_step_run_whose_world_stood_still_says_so_once_naming_the_remedy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str | None, remedy: str
) -> None:
    path = _scenario(tmp_path, "stood", STEP_WITH_A_DELETE)
    args = ["scenario", "run", str(path), "--client", ONE_REQUEST, "--quiet", "--report", str(tmp_path / "r")]
    assert main([*args, *([flag] if flag else [])]) == INCONCLUSIVE
    out = capsys.readouterr().out
    notices = [line for line in out.splitlines() if line.startswith("  NOTICE ")]
    assert len(notices) == 1, out
    sentence = notices[0].removeprefix("  NOTICE ")
    assert sentence.startswith("the world clock stood still at t=0 s in step mode while 1 timeline step was")
    assert "POST /clock/sleep" in sentence and remedy in sentence and sentence.count(". ") == 0
    suite = ET.parse(tmp_path / "r" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    error = suite.find("testcase[@name='run']/error")
    assert error is not None and error.get("type") == "notice" and error.get("message") == sentence
    page = (tmp_path / "r" / "report.html").read_text()
    assert page.count("the world clock stood still") == 1


def test_a_step_run_with_a_client_that_never_paces_ends_when_the_world_stood_still(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "stall", STEP_WITH_A_DELETE)
    result = asyncio.run(run(path, RunOptions(client=SLEEPER, stall_wall_s=1.0)))
    assert result.record.client_stopped and result.record.end == 0
    assert len(result.notices) == 2 and "stood still" in result.notices[0] and result.notices[1] == UNREACHED
    assert "abandoned" not in " ".join(result.errors)


def test_a_client_that_reaches_none_of_the_run_s_servers_is_told_so(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "away", "clock: {mode: step}\nexpectations:\n  - expect: no_unknown_routes\n")
    result = asyncio.run(run(path, RunOptions(client=f"{sys.executable} -c pass")))
    assert result.notices == [UNREACHED]
    assert UNREACHED in report.summary(result) and UNREACHED in report.junit(result)
    assert report.html_report(result).count(html.escape(UNREACHED)) == 1
    assert result.outcome.value == "inconclusive"


def test_help_lists_the_client_s_variables_and_the_suite_s_exit_order(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["scenario", "run", "--help"])
    out = capsys.readouterr().out
    for name in (
        "TWIN_AUTOMATION_URL",
        "TWIN_GATEWAY_URL",
        "TWIN_GATEWAY_URLS",
        "TWIN_CONTROL_URL",
        "TWIN_MQTT_URL",
    ):
        assert f"  {name} " in out and name in CLIENT_VARIABLES
    assert "error (2, then 4) > failed (1) > inconclusive (3) > passed (0)" in out
    readme = (ROOT / "README.md").read_text()
    assert all(f"`{name}`" in readme for name in CLIENT_VARIABLES)


def test_worst_outcome_order() -> None:
    assert worst([PASSED, INCONCLUSIVE]) == INCONCLUSIVE
    assert worst([INCONCLUSIVE, FAILED, PASSED]) == FAILED
    assert worst([FAILED, NOT_RUN]) == NOT_RUN
    assert worst([NOT_RUN, INVALID, FAILED]) == INVALID
    assert worst([]) == INVALID


FAST = "clock: {mode: step}\nstop: {at: 30}\n"


def test_a_suite_runs_each_file_on_its_own_ports_and_writes_one_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    _scenario(lib, "a_routes", FAST + "expectations:\n  - expect: no_unknown_routes\n")
    _scenario(lib, "b_retry", FAST + "expectations:\n  - expect: honours_retry_after\n")
    _scenario(lib, "c_world", FAST)  # nothing to judge: listed as skipped
    junit = tmp_path / "out" / "junit.xml"
    args = ["scenario", "run", str(lib), "--client", ONE_REQUEST, "--jobs", "2", "--junit", str(junit)]
    assert main([*args, "--report", str(tmp_path / "rep")]) == INCONCLUSIVE
    out = capsys.readouterr().out
    assert "suite: 3 scenarios in " in out and "1 passed, 1 inconclusive, 1 skipped; exit status 3" in out
    root = ET.parse(junit).getroot()
    assert root.get("tests") == "5" and [s.get("name") for s in root] == ["a_routes", "b_retry", "c_world"]
    a = root.find("testsuite[@name='a_routes']")
    assert a is not None and float(a.get("time", "0")) > 0
    props = {p.get("name"): p.get("value") for p in a.iter("property")}
    assert props["seed"] == "0" or props["seed"].isdigit()
    assert props["file"] == str(lib / "a_routes.yaml") and props["outcome"] == "passed"
    client_case = a.find("testcase[@name='client exit status']")
    assert client_case is not None and float(client_case.get("time", "0")) > 0
    assert all(case.get("time") is not None for case in a.iter("testcase"))
    assert (a.findtext("system-err") or "").strip() == "one"
    assert root.find("testsuite[@name='c_world']/testcase/skipped") is not None
    assert (tmp_path / "rep" / "a_routes" / "report.html").exists()
    assert ET.parse(tmp_path / "rep" / "junit.xml").getroot().get("tests") == "5"


def test_a_suite_exits_with_its_worst_outcome_an_invalid_file_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _scenario(tmp_path, "good", FAST + "expectations:\n  - expect: no_unknown_routes\n")
    bad = _scenario(tmp_path, "bad", "clock: {mode: sideways}\n")
    junit = tmp_path / "junit.xml"
    args = ["scenario", "run", str(good), str(bad), "--client", ONE_REQUEST, "--junit", str(junit)]
    assert main(args) == INVALID
    out = capsys.readouterr().out
    assert "  INVALID       " in out and "exit status 2" in out
    error = ET.parse(junit).getroot().find("testsuite[@name='bad']/testcase/error")
    assert error is not None and error.get("type") == "invalid" and "clock.mode" in (error.text or "")


def _readme_block(lang: str, marker: str) -> str:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(rf"```{lang}\n(.*?)```", readme, re.S)
    found = [b for b in blocks if marker in b]
    assert found, f"no {lang} block with {marker!r} in the README"
    return found[0]


def test_the_readme_ci_recipe_runs_as_written(tmp_path: Path) -> None:
    """The GitHub Actions and GitLab CI jobs of the README run the same command; run it here on a
    directory of two small scenarios in place of scenarios/."""
    github = _readme_block("yaml", "runs-on:")
    gitlab = _readme_block("yaml", "artifacts:")
    commands = [
        [
            line.strip().removeprefix("- ").removeprefix("run: ")
            for line in block.splitlines()
            if "twin scenario run" in line
        ]
        for block in (github, gitlab)
    ]
    assert commands[0] == commands[1] and len(commands[0]) == 1, commands
    argv = shlex.split(commands[0][0])
    assert argv[:3] == ["twin", "scenario", "run"] and "scenarios/" in argv and "--junit" in argv
    lib = tmp_path / "scenarios"
    lib.mkdir()
    listing = "expectations:\n  - {expect: journal, path_prefix: /api/devices, min: 1}\n"
    realtime = "clock: {mode: realtime, speed: 5}\nstop: {at: 100}\n"  # 20 s of wall time
    _scenario(lib, "lists_devices", realtime + listing)
    _scenario(lib, "routes", realtime + "expectations:\n  - expect: no_unknown_routes\n")
    (tmp_path / "tests" / "clients").mkdir(parents=True)
    (tmp_path / "tests" / "clients" / "poller.py").write_text(POLLER.read_text())
    cmd = [sys.executable, "-m", "twin.cli", *argv[1:]]
    proc = subprocess.run(cmd, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == PASSED, proc.stdout + proc.stderr
    junit = tmp_path / argv[argv.index("--junit") + 1]
    names = [s.get("name") for s in ET.parse(junit).getroot()]
    assert names == ["lists_devices", "routes"]
