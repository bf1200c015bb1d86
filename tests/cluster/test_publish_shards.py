"""The fleet published by its shards into an outside broker: each shard publishes its share of
the sensors, together every sensor once per tick, none twice."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter

import paho.mqtt.client as paho
import pytest

from api.realtime.broker import EmbeddedBroker
from tests.cluster.local import LocalCoordinator
from tests.cluster.test_shards import SITE
from tests.sockets import until
from twin.cluster.plan import split
from twin.scenario.model import load_scenario
from twin.scenario.runner import RunOptions, runner_settings
from twin.serve import world_config
from twin.settings import FleetPublishing

pytestmark = pytest.mark.socket
TICKS = (10.0, 20.0, 30.0)
"""After the tick at t=0, which each shard's publisher sends once it has connected."""


async def test_three_shards_publish_every_sensor_once_a_tick() -> None:
    broker = EmbeddedBroker("127.0.0.1", 0)
    await broker.start()
    url = f"mqtt://127.0.0.1:{broker.port}"
    seen: Counter[str] = Counter()
    sub = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="counter")
    sub.on_message = lambda _c, _u, msg: seen.update([msg.topic.split("/")[2]])
    sub.connect("127.0.0.1", broker.port)
    sub.subscribe("device/+/+/uplink", qos=1)
    sub.loop_start()
    settings = dataclasses.replace(
        runner_settings(SITE, RunOptions(step=True)), publish_fleet=FleetPublishing(url)
    )
    config, _, _ = world_config(settings, load_scenario(SITE))
    specs = split(config, 3, publishing=True)
    assert [s.slice.sensors for s in specs] == [(0, 14), (14, 27), (27, 40)]
    coordinator = LocalCoordinator(settings, specs)
    await coordinator.start()
    try:
        await until(lambda: all(s.publisher()["connected"] for s in coordinator.shards.values()))
        for t in TICKS:
            coordinator.run_to(t)
            await asyncio.sleep(0)
        ticks = 1 + len(TICKS)
        await until(lambda: sum(seen.values()) >= 40 * ticks)
        await asyncio.sleep(0.3)  # anything more would arrive now
        assert sorted(seen) == [f"env_sensor-{i:04d}" for i in range(1, 41)]
        assert set(seen.values()) == {ticks}  # every sensor once a tick, none twice
        produced = {name: s.publisher()["produced"] for name, s in coordinator.shards.items()}
        assert produced == {"shard-0": 14 * ticks, "shard-1": 13 * ticks, "shard-2": 13 * ticks}
    finally:
        await coordinator.stop()
        sub.loop_stop()
        sub.disconnect()
        await broker.stop()
