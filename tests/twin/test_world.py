"""Pure-world tests: no servers, the clock is ``env.run``."""

from __future__ import annotations

import dataclasses

import numpy as np

from hardware.ports.events import EventKind
from twin.camera.wing import cameras_of
from twin.fleet import CameraSpec, WorldConfig, default_sensor_group
from twin.sensors import sensors_of
from twin.wings import KINDS
from twin.world import World


def trace(config: WorldConfig, until: float = 600.0) -> list[str]:
    world = World(config, record_trace=True, kinds=KINDS)
    world.env.run(until=until)
    return world.trace


def test_same_seed_gives_identical_traces(world_config: WorldConfig) -> None:
    first, second = trace(world_config), trace(world_config)
    assert len(first) > 200
    assert first == second


def test_another_seed_gives_a_different_trace(world_config: WorldConfig) -> None:
    assert trace(world_config) != trace(dataclasses.replace(world_config, seed=world_config.seed + 1))


def test_adding_a_device_changes_no_other_device(world_config: WorldConfig) -> None:
    bigger = dataclasses.replace(world_config, sensors=(default_sensor_group(9),))
    small, large = World(world_config, kinds=KINDS), World(bigger, kinds=KINDS)
    for device_id in sensors_of(small).by_device:
        assert sensors_of(small).by_device[device_id].current(device_id) == sensors_of(large).by_device[
            device_id
        ].current(device_id)


def test_telemetry_falls_on_the_sampling_period(world: World) -> None:
    sub = world.bus.subscribe({EventKind.DEVICE_TELEMETRY}, maxlen=10_000)
    world.env.run(until=35)
    times = sorted({e.at for e in iter(sub.get_nowait, None)})
    assert times == [0.0, 10.0, 20.0, 30.0]


def test_signals_are_random_access(world: World) -> None:
    fleet = sensors_of(world).groups["env_sensor"]
    late = fleet.values(86_400.0 * 30)
    fresh = World(world.config, kinds=KINDS)
    assert all(
        np.array_equal(late[m], sensors_of(fresh).groups["env_sensor"].values(86_400.0 * 30)[m]) for m in late
    )


def test_bus_queues_are_bounded_and_count_drops(world: World) -> None:
    sub = world.bus.subscribe({EventKind.DEVICE_TELEMETRY}, maxlen=5)
    world.env.run(until=25)  # 3 samples x 4 sensors = 12 events
    assert len(sub) == 5
    assert sub.dropped == 7
    assert world.bus.dropped == 7
    newest = sub.get_nowait()
    assert newest is not None and newest.at == 10.0


def test_reset_rebuilds_from_the_constructor(world: World) -> None:
    world.env.run(until=100)
    world.store.collection("users").put("u", {"x": 1})
    world.reset()
    assert world.env.now == 0
    assert len(world.store.collection("users")) == 0
    assert set(cameras_of(world)) == {"cam-01"}
    world.env.run(until=1)
    assert any("world.reset" in line for line in world.trace)


def test_snapshot_restore_continues_the_same_trace(world: World) -> None:
    world.env.run(until=45)
    world.store.collection("things").put("a", {"v": 1})
    snap = world.snapshot()
    world.env.run(until=200)
    expected = [line for line in world.trace if float(line.split()[0]) >= 45]

    world.reset()
    world.restore(snap)
    assert world.env.now == 45
    assert world.store.collection("things").get("a") == {"v": 1}
    world.trace.clear()
    world.env.run(until=200)
    assert [line for line in world.trace if "camera.booted" not in line] == expected


def test_rng_streams_are_per_entity_and_restorable() -> None:
    world = World(WorldConfig(seed=3, cameras=CameraSpec(0)), kinds=KINDS)
    a = world.streams.get("a").random(3)
    state = world.streams.state()
    b1 = world.streams.get("a").random(3)
    world.streams.set_state(state)
    assert np.array_equal(world.streams.get("a").random(3), b1)
    other = World(WorldConfig(seed=3, cameras=CameraSpec(0)), kinds=KINDS)
    other.streams.get("zzz").random(10)  # another entity draws first: a's numbers do not move
    assert np.array_equal(other.streams.get("a").random(3), a)
