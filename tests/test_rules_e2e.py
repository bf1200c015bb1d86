"""End to end over real sockets: a simulated sensor crosses a threshold → the rule fires → a notify
message is created and delivered by the running twin's delivery worker as a real HTTP POST to a
webhook channel (a local server on 127.0.0.1) → the same change is seen on MQTT (the embedded
broker's uplink topic), on WS /api/events/ws and on SSE /api/events/stream (the same envelopes)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import httpx
import pytest
from amqtt.client import MQTTClient
from websockets.asyncio.client import connect

from tests.api.automation.test_events_sse import SseReader
from tests.api.automation.test_events_ws import events_until, recv_json
from tests.receivers import HttpReceiver
from tests.sockets import socket_settings, until
from twin.automation.server import automation_of
from twin.serve import build, start, stop

pytestmark = pytest.mark.socket

SENSOR = "env_sensor-0001"
EPOCH = 1767225600
# In the test scenario this sensor's humidity falls from 37.19 at t=0; the first sample under 37.1 is
# 37.09 at t=80.
RULE = {
    "name": "Dry air",
    "trigger": {"trigger_type": "data_change"},
    "condition": {
        "condition_type": "comparison",
        "source": f"device:{SENSOR}:humidity",
        "operator": "<",
        "threshold": 37.1,
    },
    "actions": [{"type": "notify", "message": "humidity fell to ${value}", "severity": "warning"}],
}


async def test_threshold_rule_message_webhook_and_mqtt(tmp_path: Path) -> None:
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    mqtt = MQTTClient(config={"auto_reconnect": False})
    realtime = contextlib.AsyncExitStack()
    try:
        async with HttpReceiver() as hook, httpx.AsyncClient(base_url=running.url("automation")) as api:
            resp = await api.post(
                "/api/setup/initialize", json={"username": "admin", "password": "secret123"}
            )
            auth = {"Authorization": f"Bearer {resp.json()['token']}"}
            channel = {"name": "ops", "channel_type": "webhook", "url": f"{hook.url}/alerts"}
            assert (await api.post("/api/messages/channels", json=channel, headers=auth)).status_code == 200
            rule = (await api.post("/api/rules", json=RULE, headers=auth)).json()["data"]["rule"]

            await until(lambda: twin.bridge.connected)
            await mqtt.connect(f"mqtt://127.0.0.1:{running.broker.port}")
            await mqtt.subscribe([(f"device/env_sensor/{SENSOR}/uplink", 0)])

            # WS and SSE clients watching the sample, the rule and the message.
            types = "event_type=DeviceMetric&event_type=RuleTriggered&event_type=MessageCreated"
            ws_url = running.url("automation").replace("http://", "ws://") + f"/api/events/ws?{types}"
            ws = await realtime.enter_async_context(connect(ws_url))
            await ws.send(json.dumps({"type": "Auth", "token": resp.json()["token"]}))
            assert (await recv_json(ws))["type"] == "Authenticated"
            assert (await recv_json(ws))["type"] == "ping"
            token = resp.json()["token"]
            stream = api.stream("GET", f"/api/events/stream?token={token}&{types}", timeout=10)
            sse = SseReader(await realtime.enter_async_context(stream))

            twin.clock.advance(70)  # still above the threshold: nothing fires
            assert (await api.get(f"/api/rules/{rule['id']}", headers=auth)).json()["data"]["rule"][
                "trigger_count"
            ] == 0
            twin.clock.advance(10)  # t=80: the sample that crosses the threshold

            # The rule fired and created the message...
            detail = (await api.get(f"/api/rules/{rule['id']}", headers=auth)).json()["data"]
            assert detail["rule"]["trigger_count"] == 1
            assert detail["rule"]["last_triggered"] == "2026-01-01T00:01:20+00:00"
            messages = (await api.get("/api/messages", headers=auth)).json()["data"]["messages"]
            assert len(messages) == 1
            message = messages[0]
            assert message["title"] == "Dry air" and message["message"] == "humidity fell to 37.09"
            assert message["source_type"] == "rule" and message["severity"] == "warning"

            # ...which the delivery worker POSTed to the webhook channel.
            await until(lambda: len(hook.requests) == 1)
            (post,) = hook.requests
            assert post.method == "POST" and post.path == "/alerts"
            delivered = post.json()
            assert delivered["id"] == message["id"] and delivered["message"] == "humidity fell to 37.09"
            assert delivered["timestamp"] == EPOCH + 80 and delivered["channel"] == "ops"

            # The same change on MQTT: the uplink of the sample that crossed the threshold.
            seen = []
            while not seen or seen[-1]["timestamp"] < EPOCH + 80:
                msg = await mqtt.deliver_message(timeout_duration=10)
                seen.append(json.loads(bytes(msg.data)))
            assert seen[-1] == {"temperature": 18.23, "humidity": 37.09, "timestamp": EPOCH + 80}
            assert all(s["humidity"] >= 37.1 for s in seen[:-1])

            # The same change on WS and SSE: 8 samples x 3 sensors x 2 metrics above the threshold,
            # then the t=80 sample, RuleTriggered and MessageCreated; identical envelopes on both.
            on_ws = await events_until(ws, 54 + 2)
            on_sse = [envelope for _, envelope in await sse.events(54 + 2)]
            assert on_ws == on_sse
            kinds = [e["type"] for e in on_ws]
            assert kinds.count("RuleTriggered") == kinds.count("MessageCreated") == 1
            fired, noted = kinds.index("RuleTriggered"), kinds.index("MessageCreated")
            assert 54 - 6 <= fired < noted  # both in the t=80 tick, the rule's action after the rule
            metrics = [e for e in on_ws if e["type"] == "DeviceMetric" and e["data"]["device_id"] == SENSOR]
            crossing = [e for e in metrics if e["timestamp"] == EPOCH + 80]
            assert {e["data"]["metric"]: e["data"]["value"] for e in crossing} == {
                "temperature": 18.23,
                "humidity": 37.09,
            }
            triggered, created = on_ws[fired]["data"], on_ws[noted]["data"]
            assert triggered["rule_id"] == rule["id"] and triggered["trigger_value"] == 37.09
            assert triggered["actions"] == ["notify"] and on_ws[fired]["timestamp"] == EPOCH + 80
            assert on_ws.index(next(e for e in crossing if e["data"]["metric"] == "humidity")) < fired
            assert created["message_id"] == message["id"] and created["message"] == "humidity fell to 37.09"
            await until(lambda: automation_of(twin.world).messages.get_channel("ops").sent == 1)
    finally:
        with contextlib.suppress(Exception):
            await realtime.aclose()
        with contextlib.suppress(Exception):
            await mqtt.disconnect()
        await stop(running)
