from __future__ import annotations

from pathlib import Path

import pytest

from hardware.ports.types import ClockMode
from twin.serve import world_config
from twin.settings import DEFAULT_SCENARIO, parse


def test_defaults() -> None:
    command, s = parse(["run"], {})
    assert command == "run"
    assert (s.port, s.control_port, s.mqtt_port, s.gateway_http_port, s.gateway_https_port) == (
        9375,
        9380,
        1883,
        8080,
        8443,
    )
    assert s.scenario == DEFAULT_SCENARIO and s.release == "0.9.24" and s.state_dir is None


def test_neomind_port_env_and_flag_precedence() -> None:
    assert parse(["run"], {"NEOMIND_PORT": "9999"})[1].port == 9999
    assert parse(["run", "--port", "1234"], {"NEOMIND_PORT": "9999"})[1].port == 1234


def test_overrides_reach_the_world_config(tmp_path: Path) -> None:
    _, s = parse(
        [
            "run",
            "--seed",
            "5",
            "--cameras",
            "3",
            "--sensors",
            "12",
            "--step",
            "--speed",
            "30",
            "--state-dir",
            str(tmp_path),
        ],
        {},
    )
    config, mode, speed = world_config(s)
    assert config.seed == 5 and config.cameras.count == 3 and config.sensors[0].count == 12
    assert mode is ClockMode.STEP and speed == 30


def test_bad_flags_exit() -> None:
    with pytest.raises(SystemExit):
        parse(["run", "--release", "1.0"], {})
    with pytest.raises(SystemExit):
        parse(["run", "--gateway-addressing", "dns"], {})
