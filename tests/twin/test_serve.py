"""Everything `twin run` starts, over real sockets on loopback: HTTP, HTTPS, MQTT, shutdown."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import ssl
from pathlib import Path

import httpx
import pytest
from amqtt.client import MQTTClient
from cryptography import x509

from tests.sockets import socket_settings, until
from twin.serve import banner, build, start, stop

pytestmark = pytest.mark.socket


def can_bind(host: str, port: int) -> bool:
    """Bind as a restarted server would (SO_REUSEADDR, so TIME_WAIT from closed clients is no obstacle)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


async def test_every_server_answers_and_shutdown_releases_every_port(tmp_path: Path) -> None:
    twin = build(socket_settings(state_dir=tmp_path))
    running = await start(twin, tmp_path)
    try:
        assert "automation API" in banner(running)
        async with httpx.AsyncClient() as http:
            health = await http.get(running.url("automation") + "/api/health")
            assert health.json()["status"] == "ok"
            gw = await http.get(running.url("cam-01/http") + "/api/v1/system/health")
            assert gw.json()["data"]["service"] == "platform-api"
            clock = await http.get(running.url("control") + "/clock")
            assert clock.json()["mode"] == "step"
        async with httpx.AsyncClient(verify=False) as https:
            gw = await https.get(running.url("cam-01/https") + "/api/v1/system/health")
            assert gw.json()["code"] == 0
        # The certificate is really TLS, self-signed, with the gateway's address in it.
        host, port = running.listeners["cam-01/https"].address
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        _, writer = await asyncio.open_connection(host, port, ssl=ctx)
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
        cert = x509.load_der_x509_certificate(der)
        assert cert.issuer == cert.subject
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert ipaddress.ip_address(host) in sans.get_values_for_type(x509.IPAddress)
    finally:
        addresses = [listener.address for listener in running.listeners.values()]
        broker_port = running.broker.port
        await stop(running)
    assert all(can_bind(h, p) for h, p in addresses)
    assert can_bind("127.0.0.1", broker_port)


async def test_mqtt_client_receives_sensor_telemetry(tmp_path: Path) -> None:
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    client = MQTTClient(config={"auto_reconnect": False})
    try:
        await until(lambda: twin.bridge.connected)  # the bridge connects in the background
        await client.connect(f"mqtt://127.0.0.1:{running.broker.port}")
        await client.subscribe([("device/+/+/uplink", 0)])
        twin.clock.advance(10)
        messages = []
        for _ in range(6):  # samples at t=0 and t=10 for three sensors
            msg = await client.deliver_message(timeout_duration=10)
            messages.append((msg.topic, json.loads(msg.data)))
        topics = {topic for topic, _ in messages}
        assert topics == {f"device/env_sensor/env_sensor-000{i}/uplink" for i in (1, 2, 3)}
        assert all(set(body) == {"temperature", "humidity", "timestamp"} for _, body in messages)
        assert {body["timestamp"] for _, body in messages} == {1767225600, 1767225610}
    finally:
        await client.disconnect()
        await stop(running)


async def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        twin = build(socket_settings(port=port))
        with pytest.raises(OSError, match=f"automation: cannot listen on 127.0.0.1:{port}"):
            await start(twin, tmp_path)


async def test_state_dir_keeps_users_across_restarts(tmp_path: Path) -> None:
    for attempt in range(2):
        twin = build(socket_settings(state_dir=tmp_path / "state"))
        running = await start(twin, tmp_path)
        try:
            async with httpx.AsyncClient(base_url=running.url("automation")) as http:
                if attempt == 0:
                    resp = await http.post(
                        "/api/setup/initialize", json={"username": "admin", "password": "abc12345"}
                    )
                    assert resp.status_code == 200
                else:
                    resp = await http.post(
                        "/api/auth/login", json={"username": "admin", "password": "abc12345"}
                    )
                    assert resp.status_code == 200
        finally:
            await stop(running)


async def test_mqtt_uplinks_make_drafts_and_commands_go_down(tmp_path: Path) -> None:
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    device = MQTTClient(config={"auto_reconnect": False})
    try:
        await until(lambda: twin.bridge.connected)
        await device.connect(f"mqtt://127.0.0.1:{running.broker.port}")
        await device.subscribe([("device/+/th-1/downlink", 1)])
        await device.publish(
            "device/thermo/th-1/uplink", b'{"temperature": 19.5, "timestamp": 1767225601}', qos=1
        )
        await until(lambda: twin.bridge.received >= 1)
        async with httpx.AsyncClient(base_url=running.url("automation")) as http:
            token = (
                await http.post("/api/setup/initialize", json={"username": "admin", "password": "abc12345"})
            ).json()["token"]
            auth = {"Authorization": f"Bearer {token}"}
            drafts = (await http.get("/api/devices/drafts", headers=auth)).json()["data"]
            assert [(d["device_id"], d["source"]) for d in drafts["items"]] == [("th-1", "mqtt")]

            # A device the server knows: its uplinks are telemetry, and commands reach its downlink topic.
            approved = await http.post("/api/devices/drafts/th-1/approve", json={}, headers=auth)
            assert approved.status_code == 200, approved.text
            twin.clock.advance(5)  # an uplink without a timestamp is stamped with the world's time
            await device.publish("device/thermo/th-1/uplink", b'{"temperature": 20.5}', qos=1)
            await until(lambda: twin.bridge.received >= 2)
            current = (await http.get("/api/devices/th-1/current", headers=auth)).json()["data"]
            assert current["metrics"]["temperature"]["value"] == 20.5
            command = await http.post(
                "/api/devices/th-1/command/reboot", json={"params": {"delay": 5}}, headers=auth
            )
            assert command.status_code == 200, command.text
            device_type = (await http.get("/api/devices/th-1", headers=auth)).json()["data"]["device_type"]
        message = await device.deliver_message(timeout_duration=10)
        body = json.loads(message.data)
        assert message.topic == f"device/{device_type}/th-1/downlink"
        assert body["command"] == "reboot" and body["params"] == {"delay": 5} and body["request_id"]
        # Garbage on a device topic is counted, not fatal.
        await device.publish("device/thermo/th-1/uplink", b"not json", qos=1)
        await until(lambda: twin.bridge.rejected >= 1)
        assert twin.bridge.connected
    finally:
        await device.disconnect()
        await stop(running)
