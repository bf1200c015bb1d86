"""How a world is split into shards, and the options that ask for it (no Ray needed)."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from twin import settings as settings_mod
from twin.cli import main
from twin.cluster.plan import SplitError, runs, split
from twin.fleet import CameraSpec, FleetSlice, WorldConfig, default_sensor_group


def config(cameras: int, sensors: int = 10) -> WorldConfig:
    return WorldConfig(cameras=CameraSpec(count=cameras), sensors=(default_sensor_group(sensors),))


def test_runs_are_contiguous_and_cover_everything() -> None:
    assert runs(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert runs(0, 2) == [(0, 0), (0, 0)]


def test_shard_zero_holds_the_automation_server_and_cameras_spread_over_all() -> None:
    specs = split(config(5), 2)
    assert [s.name for s in specs] == ["shard-0", "shard-1"]
    assert specs[0].slice.automation and not specs[1].slice.automation
    assert specs[0].slice.cameras == ("cam-01", "cam-02", "cam-03")
    assert specs[1].slice.cameras == ("cam-04", "cam-05")
    assert all(s.slice.sensors == (0, 0) for s in specs)  # nothing published: nothing to split


def test_published_sensors_are_split_over_every_shard() -> None:
    specs = split(config(0, sensors=1000), 4, publishing=True)
    assert [s.slice.sensors for s in specs] == [(0, 250), (250, 500), (500, 750), (750, 1000)]


def test_a_slice_keeps_the_fleets_numbers() -> None:
    whole = WorldConfig(
        sensors=(default_sensor_group(6), dataclasses.replace(default_sensor_group(4), device_type="b"))
    )
    part = dataclasses.replace(whole, slice=FleetSlice(sensors=(4, 8)))
    groups = part.sensor_groups()
    assert [g.device_ids() for g in groups] == [
        ["env_sensor-0005", "env_sensor-0006"],
        ["b-0001", "b-0002"],
    ]
    cams = dataclasses.replace(config(4), slice=FleetSlice(cameras=("cam-03",)))
    assert cams.held_cameras() == [(3, "cam-03")]
    held = dataclasses.replace(whole, slice=FleetSlice(automation=True, sensors=(0, 2)))
    assert held.sensor_groups() == whole.sensors  # the automation server samples every sensor


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_shard_count_that_is_not_a_positive_integer_is_refused(bad) -> None:
    with pytest.raises(SplitError, match="positive integer"):
        split(config(4), bad)


def test_a_fleet_too_small_for_its_shards_says_what_would_work() -> None:
    with pytest.raises(SplitError) as err:
        split(config(2), 4)
    assert "shard-2, shard-3 would hold nothing" in str(err.value)
    assert "--shards 2 or fewer" in str(err.value)


@pytest.mark.parametrize("value", ["0", "-3", "two", "1.5", ""])
def test_twin_run_refuses_a_bad_shard_count(value: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        settings_mod.parse(["run", "--shards", value])
    assert exit_.value.code == 2
    assert "positive integer number of shards" in capsys.readouterr().err


def test_cluster_needs_a_shard_count(capsys) -> None:
    with pytest.raises(SystemExit):
        settings_mod.parse(["run", "--cluster", "127.0.0.1:6380"])
    assert "--cluster needs --shards N" in capsys.readouterr().err
    assert settings_mod.parse(["run", "--shards", "3"])[1].shards == 3


def test_scenario_run_refuses_bad_shard_options(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["scenario", "run", "scenarios/site_shards.yaml", "--shards", "0"])
    assert exit_.value.code == 2
    assert main(["scenario", "run", "scenarios/site_shards.yaml", "--cluster", "127.0.0.1:1"]) == 2
    assert "--cluster needs --shards N" in capsys.readouterr().err


def test_a_fleet_that_cannot_be_split_exits_2_before_anything_starts(capsys) -> None:
    assert main(["scenario", "run", "scenarios/camera_reboot.yaml", "--shards", "3"]) == 2
    assert "cannot be split into 3 shards" in capsys.readouterr().err


def test_an_unreachable_cluster_exits_4_at_once(capsys) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    status = main(
        ["scenario", "run", "scenarios/site_shards.yaml", "--shards", "2", "--cluster", f"127.0.0.1:{port}"]
    )
    assert status == 4
    assert "no Ray head answers there" in capsys.readouterr().err


def test_twin_run_refuses_real_members_on_shards(capsys) -> None:
    status = main(["run", "--shards", "2", "--real-camera", "http://127.0.0.1:1", "--port", "0"])
    assert status == 2
    assert "served by one process" in capsys.readouterr().err
