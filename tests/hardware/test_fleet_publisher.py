"""The simulated fleet published to an outside broker (``twin run --publish-fleet-to``): a real amqtt
broker on a loopback port stands in for the outside one, and a second twin process on that broker (``twin
run --mqtt-url``, no sensors of its own) for the real automation server, read only over its HTTP API. The
devices appear there as drafts, their telemetry is stored after approval; the broker goes away and comes
back on the same port, and the counters say exactly what was acknowledged, dropped and undelivered."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import httpx
import pytest

from api.realtime.broker import EmbeddedBroker
from hardware.adapters.mqtt_fleet import FleetPublisher
from tests.sockets import mqtt_packet, socket_settings, until
from tests.standin import StandIn, standin_process
from twin.fleet import FleetSlice
from twin.sensors import sensors_of
from twin.serve import Running, Twin, build, start, stop
from twin.settings import FleetPublishing, parse

pytestmark = pytest.mark.socket

EPOCH = 1767225600  # scenarios/test.yaml
SENSORS = ("env_sensor-0001", "env_sensor-0002", "env_sensor-0003")
BUFFER = 4
API_KEY = "nmk_" + "cd" * 16
"""The server process's key (its ``NEOMIND_API_KEY``); the test signs in as its administrator."""
PROCESS = 1500
"""Polls (20 ms apart) for what the server process does on its own time: connect, take messages in."""


def balanced(publisher: FleetPublisher) -> bool:
    s = publisher.status()
    accounted = s["acknowledged"] + s["in_flight"] + s["undelivered"] + s["buffered"] + s["dropped"]
    return s["produced"] == accounted


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedBroker, StandIn, Twin, Running, str]]:
    """The outside broker; the automation server process on it (with an admin token); the fleet
    publishing to it."""
    broker = EmbeddedBroker("127.0.0.1", 0)
    await broker.start()
    url = f"mqtt://127.0.0.1:{broker.port}"
    try:
        async with standin_process(tmp_path, API_KEY, "--sensors", "0", "--mqtt-url", url) as server:
            fleet = build(socket_settings(publish_fleet=FleetPublishing(url, buffer=BUFFER)))
            fleet.publisher.backoff = (0.05, 0.4)
            (tmp_path / "f").mkdir()
            fleet_up = await start(fleet, tmp_path / "f")
            try:
                async with httpx.AsyncClient(base_url=server.url("automation")) as http:
                    body = {"username": "admin", "password": "secret123"}
                    token = (await http.post("/api/setup/initialize", json=body)).json()["token"]
                    http.headers["Authorization"] = f"Bearer {token}"
                    await until(lambda: connected(http), PROCESS)
                    await until(lambda: fleet.publisher.connected)
                yield broker, server, fleet, fleet_up, token
            finally:
                await stop(fleet_up)
    finally:
        with contextlib.suppress(Exception):
            await broker.stop()


async def connected(http: httpx.AsyncClient) -> bool:
    """The server's own MQTT client is on the broker, as its ``/api/mqtt/status`` says."""
    resp = await http.get("/api/mqtt/status")
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["status"]["connected"]


async def drafted(http: httpx.AsyncClient) -> int:
    """Messages the server took in from devices it does not know yet: its drafts' samples."""
    resp = await http.get("/api/devices/drafts")
    assert resp.status_code == 200, resp.text
    return sum(d["sample_count"] for d in resp.json()["data"]["items"])


async def telemetry(http: httpx.AsyncClient, device_id: str, end: int) -> dict[int, float]:
    params = {"metric": "temperature", "start": EPOCH, "end": end, "limit": 100}
    resp = await http.get(f"/api/devices/{device_id}/telemetry", params=params)
    assert resp.status_code == 200, resp.text
    return {p["timestamp"]: p["value"] for p in resp.json()["data"]["data"]["temperature"]}


async def stored_at(http: httpx.AsyncClient, at: int) -> int:
    """The approved devices' samples the server stored for time ``at`` (whatever else arrives)."""
    return sum([at in await telemetry(http, device_id, at) for device_id in SENSORS])


async def stored(http: httpx.AsyncClient, end: int) -> int:
    """Messages the server took in from the approved devices: their stored samples up to ``end``."""
    return sum([len(await telemetry(http, device_id, end)) for device_id in SENSORS])


async def equals(count: Awaitable[int], expected: int) -> bool:
    return await count == expected


async def test_the_fleet_appears_on_a_real_server_and_survives_a_broker_outage(pair) -> None:
    broker, server, fleet, fleet_up, token = pair
    publisher = fleet.publisher
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=server.url("automation"), headers=auth) as http:
        # Two ticks of three devices: six messages, each acknowledged; three drafts on the server.
        for sent, t in ((3, 0), (6, 10)):  # one tick at a time: a tick (3) fits the buffer (4)
            fleet.clock.run_to(t)
            await until(lambda: publisher.acknowledged == sent)  # noqa: B023
            await until(lambda: equals(drafted(http), sent), PROCESS)  # noqa: B023
        drafts = (await http.get("/api/devices/drafts")).json()["data"]["items"]
        assert sorted((d["device_id"], d["source"], d["original_topic"]) for d in drafts) == [
            (d, "mqtt", f"device/env_sensor/{d}/uplink") for d in SENSORS
        ]
        for device_id in SENSORS:
            resp = await http.post(f"/api/devices/drafts/{device_id}/approve", json={})
            assert resp.status_code == 200, resp.text

        # Approved, the devices' next samples are stored as the fleet produced them.
        fleet.clock.advance(10)
        await until(lambda: publisher.acknowledged == 9)
        await until(lambda: equals(stored(http, EPOCH + 20), 9), PROCESS)
        fleet_sensors = sensors_of(fleet.world).by_device["env_sensor-0002"]
        assert await telemetry(http, "env_sensor-0002", EPOCH + 20) == {
            EPOCH + t: fleet_sensors.values_of("env_sensor-0002", float(t))["temperature"]
            for t in (0, 10, 20)
        }
        assert publisher.status() | {"last_error": None} == {
            "broker": f"mqtt://127.0.0.1:{broker.port}", "connected": True, "produced": 9,
            "published": 9, "acknowledged": 9, "in_flight": 0, "undelivered": 0, "buffered": 0,
            "buffer_size": BUFFER, "dropped": 0, "reconnects": 0, "last_error": None,
        }  # fmt: skip

        # The broker goes away: three ticks (nine messages) while it is down, four kept, five dropped.
        port = broker.port
        await broker.stop()
        await until(lambda: not publisher.connected)
        fleet.clock.advance(30)
        await until(lambda: publisher.produced == 18)
        s = publisher.status()
        assert (s["published"], s["acknowledged"], s["buffered"], s["dropped"]) == (9, 9, BUFFER, 5)
        assert s["undelivered"] == 0 and s["in_flight"] == 0 and not s["connected"] and balanced(publisher)

        # Back on the same port: the publisher reconnects by itself and sends what it kept.
        broker = EmbeddedBroker("127.0.0.1", port)
        await broker.start()
        try:
            await until(lambda: publisher.connected and publisher.acknowledged == 13)
            s = publisher.status()
            assert (s["reconnects"], s["published"], s["buffered"], s["dropped"]) == (1, 13, 0, 5)
            assert balanced(publisher)

            # The server's own client is back too; new samples are stored again.
            await until(lambda: connected(http), PROCESS)
            fleet.clock.advance(10)
            await until(lambda: publisher.acknowledged == 16)
            await until(lambda: equals(stored_at(http, EPOCH + 60), len(SENSORS)), PROCESS)
            kept = await telemetry(http, "env_sensor-0002", EPOCH + 60)
            assert EPOCH + 60 in kept and EPOCH + 30 not in kept  # the oldest were dropped
        finally:
            await broker.stop()

    async with httpx.AsyncClient(base_url=fleet_up.url("control")) as control:
        resp = await control.get("/publisher")
        assert resp.status_code == 200
        assert resp.json() == publisher.status() | {"connected": resp.json()["connected"]}
    async with httpx.AsyncClient(base_url=server.url("control")) as control:
        resp = await control.get("/publisher")  # the server twin publishes nothing
        assert resp.status_code == 404
        assert resp.json()["error"]["code"] == "not_found" and "--publish-fleet-to" in resp.text


class SilentBroker:
    """Accepts the connection (``CONNACK`` 0), reads ``PUBLISH`` packets and never acknowledges
    one; hangs up after ``cut_after`` of them."""

    def __init__(self, cut_after: int) -> None:
        self.cut_after = cut_after
        self.publishes = 0
        self.connections = 0

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            if (await mqtt_packet(reader))[0] != 1:  # CONNECT
                return
            writer.write(b"\x20\x02\x00\x00")
            while self.publishes < self.cut_after:
                if (await mqtt_packet(reader))[0] == 3:  # PUBLISH
                    self.publishes += 1
        except (asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


async def test_nothing_is_acknowledged_without_a_puback(tmp_path: Path) -> None:
    broker = SilentBroker(cut_after=5)
    port = await broker.start()
    twin = build(socket_settings())  # not started: the world in step mode, no servers
    publisher = FleetPublisher(twin.automation, f"mqtt://127.0.0.1:{port}", window=5, backoff=(5.0, 5.0))
    task = asyncio.create_task(publisher.run())
    try:
        await until(lambda: publisher.connected)
        twin.clock.advance(10)  # six messages: five go out on the wire, the window is full
        await until(lambda: not publisher.connected)
        s = publisher.status()
        assert broker.publishes == 5
        assert (s["produced"], s["published"], s["acknowledged"], s["undelivered"]) == (6, 5, 0, 5)
        assert (s["in_flight"], s["buffered"], s["dropped"], s["reconnects"]) == (0, 1, 0, 0)
        assert balanced(publisher)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        broker.server.close()
        await broker.server.wait_closed()
        twin.world.store.close()


async def test_a_broker_that_is_not_there_is_retried_with_growing_seeded_backoff() -> None:
    twin = build(socket_settings())
    one, two = (FleetPublisher(twin.automation, "mqtt://127.0.0.1:1", seed=7) for _ in range(2))
    delays = [one._delay(n) for n in range(1, 10)]
    assert delays == [two._delay(n) for n in range(1, 10)]  # the jitter's stream is seeded
    assert all(
        step / 2 <= d <= step for d, step in zip(delays, (0.5, 1, 2, 4, 8, 16, 30, 30, 30), strict=True)
    )
    refused = FleetPublisher(twin.automation, "mqtt://127.0.0.1:1", backoff=(60.0, 60.0))
    task = asyncio.create_task(refused.run())
    try:
        await until(lambda: refused.last_error is not None)
        assert refused.last_error == "cannot connect: ConnectionRefusedError" and not refused.connected
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        twin.world.store.close()


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--publish-fleet-to", "http://h:1"], {}, "expected mqtt://host:port"),
        (["--publish-fleet-to", "mqtt://user:pw@h:1"], {}, "no credentials"),
        (["--publish-fleet-to", "mqtt://h:1/x"], {}, "no credentials, path"),
        (["--publish-fleet-to", "mqtt://h:1", "--publish-fleet-buffer", "0"], {}, "at least 1"),
        (["--publish-fleet-to", "mqtt://h:1", "--publish-fleet-buffer", "x"], {}, "invalid int"),
        (["--publish-fleet-buffer", "5"], {}, "needs --publish-fleet-to"),
        (["--publish-fleet-to", "mqtt://h:1"], {"TWIN_PUBLISH_MQTT_PASSWORD": "pw"}, "without"),
    ],
)
def test_the_command_line_refuses_a_bad_target(argv, environ, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(["run", *argv], environ)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "pw" not in err


def test_the_login_comes_from_the_environment_and_is_never_shown() -> None:
    env = {"TWIN_PUBLISH_MQTT_USERNAME": "fleet", "TWIN_PUBLISH_MQTT_PASSWORD": "s3cret-pw"}
    _, settings = parse(["run", "--publish-fleet-to", "mqtts://broker.example:8883"], env)
    assert settings.publish_fleet == FleetPublishing("mqtts://broker.example:8883", ("fleet", "s3cret-pw"))
    assert "s3cret-pw" not in repr(settings)
    twin = build(dataclasses.replace(socket_settings(), publish_fleet=settings.publish_fleet))
    try:
        status = twin.publisher.status()
        assert status["broker"] == "mqtts://broker.example:8883" and "s3cret-pw" not in str(status)
    finally:
        twin.world.store.close()


def test_each_shard_of_a_world_publishes_under_a_client_id_of_its_own() -> None:
    """A broker ends the older of two sessions with one client id: shards publishing the same world's
    fleet in parallel would take turns throwing each other off."""
    slices = [
        FleetSlice(automation=True, sensors=(0, 5)),
        FleetSlice(cameras=("cam-02",), sensors=(5, 9)),
        FleetSlice(cameras=("cam-03",), sensors=(9, 9)),
        FleetSlice(cameras=("cam-04",), sensors=(9, 9)),
    ]
    ids = [s.publisher_id for s in slices]
    assert len(set(ids)) == len(ids)
    out = FleetPublishing("mqtt://127.0.0.1:1")
    for slice, expected in (
        (None, "twin-fleet"),
        (FleetSlice(automation=True, sensors=(0, 2)), "twin-fleet-1-2"),
    ):
        twin = build(socket_settings(publish_fleet=out), slice=slice)
        try:
            assert twin.publisher.client_id == expected
        finally:
            twin.world.store.close()
