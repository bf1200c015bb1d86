"""Scenario runs end to end: real servers on free ports, the reference clients as subprocesses,
verdicts, reports and golden traces."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from tests.conftest import SCENARIOS
from twin.cli import main
from twin.scenario import report
from twin.scenario.runner import RunOptions, run
from twin.testing import ClientContext, run_scenario

ROOT = SCENARIOS.parent
CLIENTS = ROOT / "tests" / "clients"
GOLDEN = Path(__file__).resolve().parent / "golden"
ROUNDS = "10"


def client(name: str) -> str:
    return f"{sys.executable} {CLIENTS / name}.py"


@pytest.fixture(autouse=True)
def _short_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWIN_CLIENT_ROUNDS", ROUNDS)


def test_rate_limit_storm_cli_fails_the_naive_client_and_passes_the_careful_one() -> None:
    env = {**os.environ, "TWIN_CLIENT_ROUNDS": ROUNDS}
    path = str(SCENARIOS / "rate_limit_storm.yaml")
    cmd = [sys.executable, "-m", "twin.cli", "scenario", "run", path, "--step"]
    naive = subprocess.run([*cmd, "--client", client("naive")], env=env, capture_output=True, text=True)
    assert naive.returncode == 1, naive.stdout + naive.stderr
    assert "expectation failed: honours_retry_after" in naive.stderr, naive.stdout + naive.stderr
    assert "PASS  client exit status: " in naive.stdout
    careful = subprocess.run([*cmd, "--client", client("careful")], env=env, capture_output=True, text=True)
    assert careful.returncode == 0, careful.stdout + careful.stderr
    assert "PASS  honours_retry_after: waited out every Retry-After" in careful.stdout


@pytest.mark.parametrize(
    ("scenario", "failed", "args"),
    [
        ("delete_mid_poll", "handles_deleted_device", ""),
        ("session_expiry", "relogin_after_sessions_dropped", ""),
        ("cursor_paging", "stops_paging_at_null_cursor", ""),
        ("ota_failure", "polls_ota_to_terminal", " --ota"),
        ("ota_power_loss", "polls_ota_to_terminal", " --ota"),
        ("event_bus_down", "reconnects_stream", " --stream"),
        ("camera_reboot", "event stream back after the reboot", " --stream"),
        ("stream_drop", "reconnects_stream", " --stream"),
        ("sse_drop", "reconnects_stream", " --sse"),
        ("os_upgrade_rollback", "polls_os_upgrade_to_terminal", " --os-upgrade"),
        ("broker_outage", "mqtt session back after the outage", " --mqtt"),
    ],
)
def test_naive_fails_what_it_should_and_careful_passes(
    scenario: str, failed: str, args: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(SCENARIOS / f"{scenario}.yaml")
    assert main(["scenario", "run", path, "--step", "--client", client("naive") + args, "--quiet"]) == 1
    assert f"expectation failed: {failed}" in capsys.readouterr().err
    assert main(["scenario", "run", path, "--step", "--client", client("careful") + args, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"PASS  {failed}" in out and "not exercised" not in out.split(failed)[1].splitlines()[0]


def _trace(name: str) -> list[str]:
    result = asyncio.run(run(SCENARIOS / f"{name}.yaml", RunOptions(step=True, client=client("careful"))))
    assert result.passed, report.summary(result)
    return result.trace


@pytest.mark.parametrize("name", ["rate_limit_storm", "delete_mid_poll", "flaky_network"])
def test_golden_trace(name: str) -> None:
    """Same file, seed and client: the same trace, line for line, as the stored golden one.
    ``TWIN_UPDATE_GOLDEN=1`` rewrites the stored trace after an intended change."""
    first, second = _trace(name), _trace(name)
    assert first == second
    golden = GOLDEN / f"{name}.trace"
    text = "\n".join(first) + "\n"
    if os.environ.get("TWIN_UPDATE_GOLDEN") or not golden.exists():
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert text == golden.read_text()
    assert any(" action #" in line for line in first) and any(" request " in line for line in first)


def test_reports_are_written(tmp_path: Path) -> None:
    assert (
        main(
            [
                "scenario",
                "run",
                str(SCENARIOS / "rate_limit_storm.yaml"),
                "--step",
                "--client",
                client("naive"),
                "--report",
                str(tmp_path),
                "--quiet",
            ]
        )
        == 1
    )
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    failure = suite.find("testcase[@name='honours_retry_after']/failure")
    assert failure is not None and "Retry-After" in failure.get("message", "")
    page = (tmp_path / "report.html").read_text()
    assert "<svg" in page and "FAILED" in page and "http://" not in page.replace("http://www.w3.org", "")
    assert "env_sensor-0001.temperature" in page
    assert (tmp_path / "trace.txt").read_text().count(" request ") > 10


def test_a_failing_action_is_reported_not_ignored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "gone.yaml"
    path.write_text(
        "name: gone\nclock: {mode: step}\ntimeline:\n  - at: 5\n    do: device_delete\n"
        "    params: {device: nope-0001}\nstop: {at: 20}\n"
    )
    assert main(["scenario", "run", str(path), "--quiet"]) == 1
    assert "t=5 device_delete: Device nope-0001 not found" in capsys.readouterr().err


def test_after_steps_fire_on_their_event(tmp_path: Path) -> None:
    path = tmp_path / "after.yaml"
    path.write_text(
        "name: after\nclock: {mode: step}\ntimeline:\n"
        "  - {at: 10, do: camera_restart}\n"
        "  - after: {event: camera.power_up, source: cam-01, delay: 5}\n"
        "    do: ntp_jump\n    params: {seconds: 60}\nstop: {at: 200}\n"
    )
    result = asyncio.run(run(path))
    assert result.passed, report.summary(result)
    times = {e.kind.value: e.at for e in result.record.events}
    assert times["camera.time_set"] == times["camera.power_up"] + 5


async def test_broker_switch_takes_the_broker_down_and_back_on_its_port() -> None:
    from types import SimpleNamespace

    from api.realtime.broker import EmbeddedBroker
    from twin.scenario.broker_switch import BrokerSwitch

    broker = EmbeddedBroker("127.0.0.1", 0)
    await broker.start()
    settings = SimpleNamespace(mqtt_host="127.0.0.1")
    running = SimpleNamespace(broker=broker, twin=SimpleNamespace(settings=settings))
    switch = BrokerSwitch(running)
    port = switch.port

    async def reachable() -> bool:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return False
        writer.close()
        return True

    assert await reachable()
    switch.down()
    await switch.settle()
    assert not await reachable()
    switch.up()
    await switch.settle()
    assert await reachable() and running.broker is not broker
    await running.broker.stop()


class _OneLogin:
    def required(self) -> bool:
        return True

    def check(self, username: str | None, password: str | None) -> bool:
        return (username, password) == ("plant", "pw-1234")


async def _connack(port: int, login: tuple[str, str] | None = None) -> int | None:
    """The return code of the broker's CONNACK to an MQTT 3.1.1 CONNECT; ``None``: it closed."""
    field = lambda text: len(text).to_bytes(2, "big") + text.encode()  # noqa: E731
    flags, payload = 0x02, field("probe")
    if login is not None:
        flags, payload = flags | 0xC0, payload + field(login[0]) + field(login[1])
    body = b"\x00\x04MQTT\x04" + bytes([flags]) + b"\x00\x3c" + payload
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(bytes([0x10, len(body)]) + body)
        return (await reader.readexactly(4))[3]
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    finally:
        writer.close()


async def test_broker_switch_brings_the_broker_back_as_the_api_left_it() -> None:
    """Moved to another port and with authentication on (as ``PUT /api/mqtt/broker-config`` does),
    the broker comes back from an outage there, still asking for a login."""
    from types import SimpleNamespace

    from api.realtime.broker import EmbeddedBroker
    from twin.scenario.broker_switch import BrokerSwitch

    broker = EmbeddedBroker("127.0.0.1", 0, auth=_OneLogin())
    await broker.start()
    running = SimpleNamespace(broker=broker)
    switch = BrokerSwitch(running)
    first = broker.port
    await broker.rebind("127.0.0.1", 0, None)
    moved = broker.port
    assert moved != first
    switch.down()
    switch.up()
    await switch.settle()
    try:
        assert running.broker is not broker and running.broker.port == moved
        assert await _connack(moved) != 0
        assert await _connack(moved, ("plant", "pw-1234")) == 0
    finally:
        await running.broker.stop()


async def test_twin_run_puts_the_timeline_on_the_clock(tmp_path: Path) -> None:
    from tests.sockets import socket_settings
    from twin.scenario import load_scenario
    from twin.scenario.runner import attach
    from twin.serve import build, start, stop

    path = tmp_path / "timeline.yaml"
    path.write_text(
        "name: timeline\nclock: {mode: step}\nfleet:\n  sensors:\n    - type: env_sensor\n      count: 1\n"
        "      metrics: {t: {kind: constant, mean: 1}}\ntimeline:\n"
        "  - {at: 10, do: rate_limit_storm, params: {limit: 2}, for: 20}\n"
        "  - {at: 15, do: device_delete, params: {device: nope}}\n"
    )
    twin = build(socket_settings(scenario=path))
    running = await start(twin, tmp_path)
    try:
        errors = attach(running, load_scenario(path))
        assert twin.control.broker is not None
        twin.clock.advance(12)
        assert twin.control.actions_run[0][2] == "rate_limit_storm" and twin.control.active_actions()
        twin.clock.advance(20)
        assert not twin.control.active_actions()
        assert errors == ["t=15 device_delete: Device nope not found"]
    finally:
        await stop(running)


def test_a_sleep_held_at_the_stop_answers_when_the_run_ends(capfd: pytest.CaptureFixture[str]) -> None:
    """A client that sleeps on the world clock past the stop is held there; once it is stopped its
    sleep is answered, not cancelled by the servers' shutdown (no traceback, no grace wait)."""

    def sleeper(ctx: ClientContext) -> None:
        while ctx.sleep(5):
            pass

    result = run_scenario(SCENARIOS / "delete_mid_poll.yaml", sleeper, step=True)
    assert result.record.end == result.scenario.stop.at
    assert "Traceback" not in capfd.readouterr().err
