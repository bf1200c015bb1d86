"""Real members declared in a scenario file: a camera group ``{real: URL, username, password_env}``
served through the twin's layers beside simulated cameras, the secrets read from the environment,
and what the file may ask of a real member (transport and API faults, wall time) checked with the
rest of the file. The "real" camera is a second twin on loopback."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from hardware.ports.errors import Conflict
from tests.conftest import SCENARIOS
from tests.standin import standin_process
from twin.cli import main
from twin.scenario import ScenarioError, load_scenario
from twin.scenario.catalog import ACTIONS
from twin.scenario.expectations import Outcome
from twin.scenario.live import LiveScenarios
from twin.scenario.model import parse_scenario
from twin.scenario.reach import REACH, Reach
from twin.scenario.runner import RealMemberRefused, RunOptions, run
from twin.serve import build
from twin.settings import LOOPBACK, RealMemberError, Settings

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "cameras.py"
PASSWORD_ENV = "TWIN_TEST_CAM1_PASSWORD"
DEVICE_PASSWORD = "password"
"""The upstream twin's camera keeps the device's documented default login (admin / password)."""
KEY_ENV = "TWIN_TEST_AUTOMATION_KEY"
API_KEY = "nmk_" + "ab" * 16
"""The "real" automation server's key (its ``NEOMIND_API_KEY``)."""

MIXED = """\
name: mixed
clock: {{mode: realtime}}
fleet:
  sensors:
    - {{type: env_sensor, count: 1, metrics: {{temperature: {{kind: sine, mean: 20}}}}}}
  cameras:
    - real: {url}
      username: admin
      password_env: {env}
    - count: 1
servers: {{mqtt: false}}
timeline:
  - at: 0
    do: rate_limit_storm
    params: {{server: cam-01, limit: 3}}
    for: 600
  - at: 0
    do: rate_limit_storm
    params: {{server: cam-02, limit: 3}}
    for: 600
expectations:
  - {{expect: honours_retry_after, server: cam-01}}
  - {{expect: honours_retry_after, server: cam-02}}
stop: {{at: 600, wall_timeout: 120}}
"""
"""One real camera (cam-01), one simulated (cam-02), a rate-limit storm on both."""


@pytest.fixture
async def upstream(tmp_path: Path):
    """A second twin process on loopback whose camera and automation server play the real ones."""
    async with standin_process(tmp_path, API_KEY) as up:
        yield up


@pytest.fixture
def device(upstream) -> str:
    """The base URL of the "real" camera's gateway."""
    return upstream.url("cam-01/http")


def mixed(tmp_path: Path, url: str, **replace: str) -> Path:
    text = MIXED.format(url=url, env=PASSWORD_ENV)
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "mixed.yaml"
    path.write_text(text)
    return path


def problems(text: str, environ: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml", environ={PASSWORD_ENV: "x"} if environ is None else environ)
    return err.value.problems


@pytest.mark.socket
@pytest.mark.parametrize(("flag", "outcome"), [("", Outcome.PASSED), ("--naive", Outcome.FAILED)])
async def test_a_storm_reads_alike_on_a_real_and_a_simulated_camera(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str, outcome: Outcome
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, DEVICE_PASSWORD)
    result = await run(mixed(tmp_path, device), RunOptions(client=f"{sys.executable} {CLIENT} {flag}"))
    assert result.mode == "realtime" and not result.errors, result.client_output
    assert result.client_verdict is not None and result.client_verdict.passed, result.client_output
    real, simulated = result.verdicts
    assert (real.outcome, simulated.outcome) == (outcome, outcome), (real.message, simulated.message)
    limited = {e.server: e for e in result.record.journal if e.status == 429}
    assert set(limited) == {"cam-01", "cam-02"}
    assert all(e.retry_after and e.retry_after.isdigit() for e in limited.values())
    logins = [e for e in result.record.journal if e.route == "/api/login"]
    assert {(e.server, e.status) for e in logins} == {("cam-01", 200), ("cam-02", 200)}
    assert DEVICE_PASSWORD not in "\n".join(result.trace)


@pytest.mark.socket
async def test_a_wrong_credential_stops_the_run_at_start(
    device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    with pytest.raises(RealMemberRefused, match=r"real cam-01 refused the twin's login \(HTTP 401\)") as err:
        await run(mixed(tmp_path, device), RunOptions(client=f"{sys.executable} {CLIENT}"))
    assert "not-the-password" not in str(err.value)


@pytest.mark.socket
async def test_a_real_automation_server_is_checked_with_the_key_the_file_names(
    upstream, device: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, DEVICE_PASSWORD)
    monkeypatch.setenv(KEY_ENV, "nmk_" + "00" * 16)
    automation = f"{{real: '{upstream.url('automation')}', api_key_env: {KEY_ENV}}}"
    path = mixed(
        tmp_path, device, **{"servers: {mqtt: false}": f"servers: {{mqtt: false, automation: {automation}}}"}
    )
    with pytest.raises(RealMemberRefused, match=r"^real automation refused the twin's API key \(HTTP 401\)$"):
        await run(path, RunOptions(client=f"{sys.executable} {CLIENT}"))
    monkeypatch.setenv(KEY_ENV, API_KEY)
    result = await run(path, RunOptions(client=f"{sys.executable} {CLIENT}"))
    assert [v.outcome for v in result.verdicts] == [Outcome.PASSED, Outcome.PASSED], result.client_output


def with_steps(steps: str, **replace: str) -> str:
    """The mixed scenario (its real camera never reached) with more timeline ``steps``."""
    text = MIXED.format(url="https://192.168.1.101", env=PASSWORD_ENV).replace(
        "expectations:", steps + "expectations:"
    )
    for old, new in replace.items():
        text = text.replace(old, new)
    return text


def line_of(text: str, snippet: str) -> int:
    return text[: text.index(snippet)].count("\n") + 1


def test_an_action_on_the_simulated_world_is_refused_on_a_real_member_with_its_line() -> None:
    text = with_steps(
        "  - at: 5\n    do: partition_fill\n    params: {camera: cam-01}\n"
        "  - at: 6\n    do: partition_fill\n    params: {camera: cam-02}\n"
        "  - at: 7\n    do: latency\n    params: {server: cam-01, seconds: 1}\n"
        "  - at: 8\n    do: ota_failure\n    params: {stage: extract}\n"
        "  - at: 9\n    do: http_errors\n    params: {server: cam-01, count: 2}\n"
    )
    first, second = problems(text)
    assert first.startswith(
        f"s.yaml:{line_of(text, '{camera: cam-01}')}: timeline.2.params.camera: "
        "partition_fill cannot target camera cam-01, a real member: it changes the simulated camera"
    )
    assert "only transport and API faults reach a real member (rate_limit_storm, latency" in first
    assert second.startswith(  # camera cam-01 is the action's default
        f"s.yaml:{line_of(text, 'do: ota_failure')}: timeline.5.do: ota_failure cannot target camera cam-01"
    )


def test_what_reaches_the_automation_server_when_it_is_real() -> None:
    text = with_steps(
        "  - {at: 5, do: telemetry_gap, params: {device: env_sensor-0001}}\n"
        "  - {at: 6, do: token_expiry}\n"
        "  - {at: 7, do: rate_limit_storm}\n"
        "  - {at: 8, do: clock_speed, params: {speed: 2}}\n"
        "  - {at: 9, do: mqtt_broker_outage}\n",
        **{"servers: {mqtt: false}": "servers: {mqtt: false, automation: {real: 'http://10.0.0.2:9375'}}"},
    )
    found = problems(text)
    assert [p.split(": ")[1] for p in found] == ["timeline.2.do", "timeline.5.do"], found
    assert "telemetry_gap cannot target the automation server" in found[0]
    assert (
        "clock_speed cannot run beside a real member (the automation server, camera cam-01 is real)"
        in found[1]
    )


def test_secrets_never_in_the_file_and_their_variables_must_be_set() -> None:
    base = MIXED.format(url="https://192.168.1.101", env=PASSWORD_ENV)
    literal = base.replace("      username: admin\n", "      username: admin\n      password: hunter2\n")
    (found,) = problems(literal)
    assert found.startswith("s.yaml:9: fleet.cameras.0.password: ") and "password_env" in found
    assert "hunter2" not in found
    (found,) = problems(base, environ={})
    assert found.startswith("s.yaml:9: fleet.cameras.0.password_env: ")
    assert f"the environment variable {PASSWORD_ENV} is not set" in found
    key = base.replace(
        "servers: {mqtt: false}", "servers: {automation: {real: 'http://h:1', api_key: nmk_x}}"
    )
    (found,) = problems(key)
    assert "servers.automation.api_key: " in found and "api_key_env" in found and "nmk_x" not in found
    for bad, where in (
        (
            "real: https://192.168.1.101/api",
            "fleet.cameras.0.real: Value error, a real endpoint's URL has no path",
        ),
        (
            "real: ftp://192.168.1.101",
            "fleet.cameras.0.real: Value error, expected an http:// or https:// URL",
        ),
        ("- count: 1", "- {count: 1, insecure: true}"),
    ):
        if where.startswith("- "):
            (found,) = problems(base.replace(bad, where))
            assert "'insecure' applies to a real camera only" in found
        else:
            (found,) = problems(base.replace("real: https://192.168.1.101", bad))
            assert where in found, found
    (found,) = problems(base.replace("      username: admin\n", "      username: admin\n      count: 2\n"))
    assert "a real camera group is one camera" in found
    (found,) = problems(
        base.replace("      username: admin\n", "      scene: parking\n      username: admin\n")
    )
    assert "'scene' applies to simulated cameras only" in found


def test_a_real_member_keeps_wall_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = MIXED.format(url="https://192.168.1.101", env=PASSWORD_ENV)
    (found,) = problems(base.replace("clock: {mode: realtime}", "clock: {mode: step}"))
    assert found == (
        "s.yaml:2: clock.mode: mode 'step' cannot be used with a real member (camera cam-01 is real): "
        "it runs on wall time"
    )
    (found,) = problems(base.replace("clock: {mode: realtime}", "clock: {speed: 60}"))
    assert found.startswith(
        "s.yaml:2: clock.speed: speed must be 1 with a real member (camera cam-01 is real)"
    )

    monkeypatch.setenv(PASSWORD_ENV, "x")
    path = tmp_path / "mixed.yaml"
    path.write_text(base)
    with pytest.raises(
        ScenarioError, match=re.escape("--step cannot be used with a real member (camera cam-01 is real)")
    ):
        asyncio.run(run(path, RunOptions(step=True)))
    with pytest.raises(
        RealMemberError, match=re.escape("--speed must be 1 with a real member (camera cam-01 is real)")
    ):
        build(Settings(scenario=path, speed=60, **LOOPBACK))
    with pytest.raises(RealMemberError, match="camera 'cam-01' is real in the scenario already"):
        build(Settings(scenario=path, real_cameras=("cam-01=http://127.0.0.1:9",), **LOOPBACK))
    twin = build(Settings(scenario=path, real_cameras=("http://127.0.0.1:9",), **LOOPBACK))
    assert set(twin.real) == {"cam-01", "cam-02"}  # the command line's camera takes the next one
    assert twin.members["cam-01"].login == ("admin", "x") and "'x'" not in repr(twin.members["cam-01"])


def test_the_example_validates_and_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    path = SCENARIOS / "mixed_fleet.yaml"
    scenario = load_scenario(path, environ={})
    assert scenario.real_names() == ("cam-01",) and scenario.clock.mode == "realtime"
    assert main(["scenario", "validate", str(path)]) == 0
    assert main(["scenario", "list"]) == 0
    assert "mixed_fleet.yaml" in capsys.readouterr().out


def test_every_action_says_what_it_reaches() -> None:
    assert set(REACH) == set(ACTIONS)
    layer = {name for name, reach in REACH.items() if reach is Reach.LAYER}
    assert {
        "rate_limit_storm",
        "latency",
        "http_errors",
        "drop_streams",
        "token_expiry",
        "session_drop",
    } <= layer
    assert not layer & {"partition_fill", "ota_failure", "model_errors", "telemetry_gap", "clock_speed"}


def test_a_live_run_from_the_console_refuses_a_scenario_with_real_members() -> None:
    twin = build(Settings(scenario=SCENARIOS / "test.yaml", step=True))
    live = LiveScenarios(twin.control)
    live.load(text="name: mixed\nfleet:\n  cameras: {real: 'https://192.168.1.101'}\n", filename="m.yaml")
    with pytest.raises(Conflict, match=re.escape("mixed has real members (camera cam-01): run it with")):
        live.start()
    assert live.run is None
