"""The pytest plugin (``pytest_twin``, entry point ``pytest11``) as a user meets it: a fresh test
file in a directory of its own, run by pytest in a subprocess, uses the ``twin`` fixture (real
servers on free ports, the world clock, actions, the journal, the marker and indirect
parametrisation) and runs a scenario file with its own code as the client under test."""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

USER_TESTS = """
import httpx
import pytest

CREDS = {"username": "qa-client", "password": "qa-secret-123"}


def login(base):
    answer = httpx.post(base + "/api/setup/initialize", json=CREDS)
    assert answer.status_code == 200, answer.text
    return {"Authorization": "Bearer " + answer.json()["token"]}


@pytest.mark.twin(seed=5, sensors=2)
def test_fixture_serves_the_twin(twin):
    auth = login(twin.automation_url)
    devices = httpx.get(twin.automation_url + "/api/devices", headers=auth)
    assert devices.status_code == 200
    assert twin.now == 0 and twin.advance(30) == 30 and twin.sleep(5) == 35
    action = twin.action("rate_limit_storm", {"limit": 1}, for_=60)
    statuses = [httpx.get(twin.automation_url + "/api/devices", headers=auth).status_code for _ in range(3)]
    assert 429 in statuses
    assert [e.status for e in twin.journal(server="automation", route="/api/devices")] == [200, *statuses]
    assert twin.undo(action["id"]) is True
    assert httpx.get(twin.automation_url + "/api/devices", headers=auth).status_code == 200
    cam_creds = {"username": "admin", "password": "password"}
    login_cam = httpx.post(twin.gateway_url + "/api/login", json=cam_creds)
    assert login_cam.status_code == 200 and list(twin.gateway_urls) == ["cam-01"]
    assert httpx.get(twin.control_url + "/clock").json()["sim_time"] == 35
    assert twin.mqtt_url.startswith("mqtt://127.0.0.1:") and twin.env["TWIN_SEED"] == "5"
    assert twin.call(lambda: twin.running.twin.world.env.now) == 35


@pytest.mark.twin(scenario="short_delete.yaml")
def test_the_scenario_timeline_runs_on_the_fixture_clock(twin):
    auth = login(twin.automation_url)
    url = twin.automation_url + "/api/devices/env_sensor-0001"
    assert httpx.get(url, headers=auth).status_code == 200
    twin.advance(45)
    assert httpx.get(url, headers=auth).status_code == 404 and twin.errors == []


@pytest.mark.parametrize("twin", [{"seed": 1}, {"seed": 2}], indirect=True)
def test_parametrised(twin):
    assert twin.env["TWIN_SEED"] in ("1", "2")


def poller(stop_at_404):
    def client(ctx):
        auth = login(ctx.automation_url)
        while True:
            answer = httpx.get(ctx.automation_url + "/api/devices/env_sensor-0001/telemetry",
                               headers=auth, params={"metric": "temperature"})
            ctx.log("poll", answer.status_code)
            if answer.status_code == 404 and stop_at_404:
                return 0
            if not ctx.sleep(10):
                return 0
    return client


def test_a_careful_client_passes(twin):
    result = twin.assert_passed(twin.run_scenario("short_delete.yaml", client=poller(True)))
    assert result.outcome.value == "passed" and "poll 404" in result.client_output


def test_a_naive_client_fails(twin):
    twin.assert_passed(twin.run_scenario("short_delete.yaml", client=poller(False)))


async def async_client(ctx):
    async with httpx.AsyncClient() as http:
        answer = await http.get(ctx.automation_url + "/api/health")
        ctx.log("health", answer.status_code)
    raise RuntimeError("the client crashed")


def test_a_crashing_async_client_fails(twin):
    twin.assert_passed(twin.run_scenario("short_delete.yaml", client=async_client))


@pytest.mark.twin(colour="red")
def test_a_bad_marker_is_reported(twin):
    pass
"""


def _short_delete() -> str:
    """The library's delete-mid-poll scenario, stopped at 120 s, in step mode (its clients pace
    themselves through ``ctx.sleep``)."""
    text = (SCENARIOS / "delete_mid_poll.yaml").read_text()
    text, stops = re.subn(r"(?m)^stop: \{at: \d+\}$", "stop: {at: 120}", text)
    text, clocks = re.subn(r"(?m)^clock: \{mode: \w+, ", "clock: {mode: step, ", text)
    assert stops == clocks == 1
    return text


def _plugin_args() -> list[str]:
    """``-p pytest_twin`` unless the installed package's entry point loads it already."""
    installed = importlib.metadata.entry_points(group="pytest11").select(value="pytest_twin")
    return [] if installed else ["-p", "pytest_twin"]


def test_the_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"twin": "pytest_twin"}


@pytest.mark.timeout(600)
def test_a_fresh_test_file_uses_the_fixture_and_the_scenario_runner(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    (pytester.path / "short_delete.yaml").write_text(_short_delete())
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = pytester.run(
        sys.executable, "-m", "pytest", *_plugin_args(), "-p", "no:cacheprovider", "-rf", "test_user.py"
    )
    result.assert_outcomes(passed=5, failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_a_naive_client_fails*",
            "*FAIL  handles_deleted_device: * requests for env_sensor-0001 after its 404 at t=50*",
            "FAILED: handles_deleted_device",
            "the client's last output:",
            "  | poll 404",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*test_a_crashing_async_client_fails*",
            "*FAIL  client exit status: exited with status 1*",
            "*  | health 200",
            "*RuntimeError: the client crashed",
        ]
    )
    result.stdout.fnmatch_lines(["*@pytest.mark.twin: *unexpected keyword argument 'colour'*"])
