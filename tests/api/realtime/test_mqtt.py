"""MQTT end to end with a real paho client on the embedded broker's real port, and the three realtime
channels (WS, SSE, MQTT) carrying the same change."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import paho.mqtt.client as mqtt
import pytest
from websockets.asyncio.client import connect

from hardware.ports.events import EventKind
from tests.api.automation.test_events_sse import SseReader
from tests.api.automation.test_events_ws import events_until, recv_json
from tests.sockets import socket_settings, until
from twin.sensors import sensors_of
from twin.serve import Running, Twin, build, start, stop

pytestmark = pytest.mark.socket


class Paho:
    """A paho client on its own network thread; received messages land on an asyncio queue."""

    def __init__(self, port: int, client_id: str) -> None:
        self.loop = asyncio.get_running_loop()
        self.messages: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
        self.subscribed = 0
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, client, userdata, message) -> None:
        self.loop.call_soon_threadsafe(self.messages.put_nowait, (message.topic, message.payload))

    def _on_subscribe(self, *args) -> None:
        self.subscribed += 1

    async def subscribe(self, topic: str, qos: int = 1) -> None:
        wanted = self.subscribed + 1
        self.client.subscribe(topic, qos)
        await until(lambda: self.subscribed >= wanted)

    def publish(self, topic: str, body: dict | bytes, qos: int = 1) -> None:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.client.publish(topic, payload, qos=qos)  # sent by the network thread; never block the loop

    async def next(self, timeout: float = 10.0) -> tuple[str, dict]:
        topic, payload = await asyncio.wait_for(self.messages.get(), timeout)
        return topic, json.loads(payload)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[Twin, Running, str]]:
    """The whole twin on loopback ports (step clock), its MQTT bridge connected, and an admin JWT."""
    twin = build(socket_settings())
    up = await start(twin, tmp_path)
    try:
        await until(lambda: twin.bridge.connected)
        async with httpx.AsyncClient(base_url=up.url("automation")) as http:
            resp = await http.post(
                "/api/setup/initialize", json={"username": "admin", "password": "secret123"}
            )
        yield twin, up, resp.json()["token"]
    finally:
        await stop(up)


async def test_sensors_publish_uplinks_and_obey_commands_on_their_downlink(running) -> None:
    twin, up, _ = running
    results = twin.automation.bus.subscribe(frozenset({EventKind.DEVICE_COMMAND_RESULT}))
    client = Paho(up.broker.port, "qa-client")
    try:
        await client.subscribe("device/+/+/uplink", 0)
        twin.clock.advance(10)
        messages = [await client.next() for _ in range(6)]
        assert {t for t, _ in messages} == {f"device/env_sensor/env_sensor-000{i}/uplink" for i in (1, 2, 3)}
        assert {b["timestamp"] for _, b in messages} == {1767225600, 1767225610}
        fleet = sensors_of(twin.world).by_device["env_sensor-0002"]
        last = next(b for t, b in reversed(messages) if "env_sensor-0002" in t)
        assert {k: v for k, v in last.items() if k != "timestamp"} == fleet.values_of("env_sensor-0002", 10.0)

        client.publish(
            "device/env_sensor/env_sensor-0002/downlink", {"command": "reboot", "params": {"delay": 3}}
        )
        await until(lambda: twin.bridge.commands >= 1)
        event = results.get_nowait()
        assert event is not None and event.source == "env_sensor-0002"
        assert (event.data["command"], event.data["params"], event.data["status"]) == (
            "reboot",
            {"delay": 3},
            "success",
        )

        # Garbage, a missing command and an unknown device are counted, not obeyed.
        for topic, body in [
            ("device/env_sensor/env_sensor-0001/downlink", b"not json"),
            ("device/env_sensor/env_sensor-0001/downlink", {"params": {}}),
            ("device/env_sensor/env_sensor-0001/downlink", {"command": "x", "params": [1]}),
            ("device/env_sensor/nobody/downlink", {"command": "reboot"}),
        ]:
            client.publish(topic, body)
        await until(lambda: twin.bridge.rejected >= 4)
        assert twin.bridge.commands == 1 and results.get_nowait() is None and twin.bridge.connected
    finally:
        client.close()
        results.close()


async def test_a_real_device_uplink_makes_a_draft_then_feeds_its_device(running) -> None:
    twin, up, token = running
    metrics = twin.automation.bus.subscribe(frozenset({EventKind.DEVICE_METRIC}))
    device = Paho(up.broker.port, "field-unit")
    auth = {"Authorization": f"Bearer {token}"}
    try:
        await device.subscribe("device/+/pump-7/downlink")
        device.publish("device/pump/pump-7/uplink", {"pressure": 2.5, "timestamp": 1767225601})
        await until(lambda: twin.bridge.received >= 1)
        async with httpx.AsyncClient(base_url=up.url("automation"), headers=auth) as http:
            drafts = (await http.get("/api/devices/drafts")).json()["data"]["items"]
            assert [(d["device_id"], d["source"]) for d in drafts] == [("pump-7", "mqtt")]
            assert (await http.post("/api/devices/drafts/pump-7/approve", json={})).status_code == 200
            device.publish("device/pump/pump-7/uplink", {"pressure": 3.0, "timestamp": 1767225605})
            await until(lambda: twin.bridge.received >= 2)
            current = (await http.get("/api/devices/pump-7/current")).json()["data"]
            assert current["metrics"]["pressure"]["value"] == 3.0
            # A command for a real device goes out on its downlink once; the bridge does not obey it itself.
            sent = await http.post("/api/devices/pump-7/command/flush", json={"params": {}})
            assert sent.status_code == 200, sent.text
        topic, body = await device.next()
        assert topic.endswith("/pump-7/downlink") and body["command"] == "flush"
        assert twin.bridge.commands == 0
        seen = [e.data["value"] for e in iter(metrics.get_nowait, None)]
        assert seen == [2.5, 3.0]
    finally:
        device.close()
        metrics.close()


async def test_the_three_channels_carry_the_same_events_for_the_same_change(running) -> None:
    twin, up, token = running
    base = up.url("automation")
    observer = Paho(up.broker.port, "observer")
    ws = await connect(base.replace("http://", "ws://") + "/api/events/ws")
    try:
        await observer.subscribe("device/+/+/uplink", 0)
        await ws.send(json.dumps({"type": "Auth", "token": token}))
        assert (await recv_json(ws))["type"] == "Authenticated"
        assert (await recv_json(ws))["type"] == "ping"
        async with (
            httpx.AsyncClient(base_url=base, timeout=10) as http,
            http.stream("GET", f"/api/events/stream?token={token}") as sse_response,
        ):
            sse = SseReader(sse_response)

            # 1. A sensor sample: DeviceMetric on WS and SSE (same ids), the uplink on MQTT.
            twin.clock.advance(0)
            ws_events = await events_until(ws, 6)
            sse_events = [envelope for _, envelope in await sse.events(6)]
            assert ws_events == sse_events
            uplinks = dict([await observer.next() for _ in range(3)])
            for topic, body in uplinks.items():
                device_id = topic.split("/")[2]
                assert {
                    e["data"]["metric"]: e["data"]["value"]
                    for e in ws_events
                    if e["data"]["device_id"] == device_id
                } == {k: v for k, v in body.items() if k != "timestamp"}
                assert {e["timestamp"] for e in ws_events} == {body["timestamp"]}

            # 2. A command on MQTT: the sensor obeys, the result is the same event on WS and SSE.
            observer.publish("device/env_sensor/env_sensor-0003/downlink", {"command": "identify"})
            ws_result = (await events_until(ws, 1))[0]
            _, sse_result = (await sse.events(1))[0]
            assert ws_result == sse_result and ws_result["type"] == "DeviceCommandResult"
            assert (
                ws_result["data"]["device_id"] == "env_sensor-0003"
                and ws_result["data"]["command"] == "identify"
            )

            # 3. A field device's uplink on MQTT: DeviceDiscovered and DeviceMetric on WS and SSE.
            observer.publish("device/thermo/th-9/uplink", {"temperature": 19.5, "timestamp": 1767225600})
            assert (await observer.next())[0] == "device/thermo/th-9/uplink"
            ws_new = await events_until(ws, 2)
            sse_new = [envelope for _, envelope in await sse.events(2)]
            assert ws_new == sse_new
            assert [e["type"] for e in ws_new] == ["DeviceDiscovered", "DeviceMetric"]
            metric = {"device_id": "th-9", "metric": "temperature", "value": 19.5, "timestamp": 1767225600}
            assert ws_new[1]["data"] == metric | {"quality": None}
    finally:
        await ws.close()
        observer.close()
