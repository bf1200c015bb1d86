"""External MQTT brokers over HTTP: durable settings in the server's shapes, a real connection on every
save of an enabled broker (its messages feed the world), a real CONNECT/CONNACK test, the true state
of a broker that is unreachable or goes away, reconnection when the server starts again, and
refusals in the server's shapes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from api.realtime.broker import EmbeddedBroker
from tests.api.automation.test_mqtt_admin import mqtt_client, running_twin
from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from tests.receivers import closed_port
from tests.sockets import until
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

REFUSED = "I/O: Connection refused (os error 111)"


class Logins:
    """A broker's authentication: one user."""

    def required(self) -> bool:
        return True

    def check(self, username: str | None, password: str | None) -> bool:
        return (username, password) == ("plant", "pw-1234")


@pytest.fixture
async def external() -> AsyncIterator[EmbeddedBroker]:
    broker = EmbeddedBroker("127.0.0.1", 0)
    await broker.start()
    yield broker
    with contextlib.suppress(Exception):  # a test may have stopped it already
        await broker.stop()


@pytest.fixture
async def auth(automation: httpx.AsyncClient, twin: Twin) -> AsyncIterator[dict[str, str]]:
    yield {"Authorization": f"Bearer {await admin_token(automation)}"}
    await automation_of(twin.world).brokers.aclose()  # the sessions the routes opened on this loop


async def test_refusals_in_the_servers_shapes(automation: httpx.AsyncClient, auth: dict) -> None:
    for method, path in [("GET", "/api/brokers"), ("POST", "/api/brokers"), ("POST", "/api/brokers/b/test")]:
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
    post = lambda body: automation.post("/api/brokers", json=body, headers=auth)  # noqa: E731
    assert_error(await post({"broker": "127.0.0.1"}), 422, "VALIDATION_ERROR")
    assert_error(await post({"name": "n"}), 422, "VALIDATION_ERROR")
    assert_error(await post({"name": "n", "broker": "h", "port": "1883"}), 422, "VALIDATION_ERROR")
    assert_error(await post({"name": "n", "broker": "h", "port": 70000}), 422, "VALIDATION_ERROR")
    assert_error(await post({"name": "n", "broker": "h", "tls": None}), 422, "VALIDATION_ERROR")
    assert_error(await post({"name": "n", "broker": "h", "subscribe_topics": "a/#"}), 422, "VALIDATION_ERROR")
    body = {"id": "b1", "name": "n", "broker": "127.0.0.1", "enabled": False}
    assert (await post(body)).status_code == 200
    assert_error(await post(body), 400, "BAD_REQUEST", "Broker already exists: b1")
    missing = "Broker not found: nope not found"
    assert_error(await automation.get("/api/brokers/nope", headers=auth), 404, "NOT_FOUND", missing)
    put = await automation.put("/api/brokers/nope", json={"name": "n", "broker": "h"}, headers=auth)
    assert_error(put, 404, "NOT_FOUND", missing)
    assert_error(
        await automation.put("/api/brokers/b1", json={"name": "n"}, headers=auth), 422, "VALIDATION_ERROR"
    )
    assert_error(await automation.delete("/api/brokers/nope", headers=auth), 404, "NOT_FOUND", missing)
    assert_error(await automation.post("/api/brokers/nope/test", headers=auth), 404, "NOT_FOUND", missing)


async def test_a_disabled_broker_is_stored_with_its_secrets_masked_and_warnings(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    body = {
        "name": "Plant",
        "broker": "mqtt.example.com",
        "username": "plant",
        "password": "pw-1234",
        "client_key": "-----BEGIN PRIVATE KEY-----",
        "enabled": False,
        "subscribe_topics": [],
    }
    made = (await automation.post("/api/brokers", json=body, headers=auth)).json()["data"]
    broker_id = made["broker"]["id"]
    assert broker_id.startswith("broker_") and len(broker_id) == len("broker_") + 8
    assert made["message"] == "External broker created successfully"
    assert made["broker"] == {
        "id": broker_id,
        "name": "Plant",
        "broker": "mqtt.example.com",
        "port": 1883,
        "tls": False,
        "username": "plant",
        "password": "*****",
        "client_key": "*****",
        "enabled": False,
        "connected": False,
        "updated_at": 1767225600,
        "subscribe_topics": ["sensor/#", "device/#", "tele/#"],  # an empty list keeps the defaults
    }
    assert [w["level"] for w in made["security_warnings"]] == ["High", "Medium"]

    # An update keeps a password sent back masked, and drops the key when none is sent.
    update = {**body, "password": "*****", "client_key": None, "port": 8883, "subscribe_topics": ["plant/#"]}
    saved = (await automation.put(f"/api/brokers/{broker_id}", json=update, headers=auth)).json()["data"]
    assert saved["message"] == "External broker updated successfully"
    assert saved["broker"]["password"] == "*****" and "client_key" not in saved["broker"]
    assert (saved["broker"]["port"], saved["broker"]["subscribe_topics"]) == (8883, ["plant/#"])
    listed = (await automation.get("/api/brokers", headers=auth)).json()["data"]
    assert listed["count"] == 1 and listed["brokers"][0] == saved["broker"]
    gone = await automation.delete(f"/api/brokers/{broker_id}", headers=auth)
    assert gone.json()["data"] == {"message": "External broker deleted successfully"}
    assert (await automation.get("/api/brokers", headers=auth)).json()["data"] == {"brokers": [], "count": 0}


async def test_an_enabled_broker_connects_for_real_and_feeds_the_world(
    automation: httpx.AsyncClient, auth: dict, twin: Twin, external: EmbeddedBroker
) -> None:
    body = {
        "id": "ext",
        "name": "Ext",
        "broker": "127.0.0.1",
        "port": external.port,
        "subscribe_topics": ["plant/#"],
    }
    made = (await automation.post("/api/brokers", json=body, headers=auth)).json()["data"]
    assert made["message"] == "External broker created and MQTT connection established successfully"
    assert made["broker"]["connected"] is True and "last_error" not in made["broker"]
    session = automation_of(twin.world).brokers.sessions["ext"]
    async with mqtt_client(f"mqtt://127.0.0.1:{external.port}", "plant-unit") as unit:
        await unit.publish("device/boiler/b-7/uplink", json.dumps({"temp": 70.5}).encode(), qos=1)
        await unit.publish("plant/mixer-2/data", json.dumps({"data": {"rpm": 1200}}).encode(), qos=1)
        await unit.publish("plant/mixer-2/status", b"online", qos=1)  # received, not taken in
        await until(lambda: session.received >= 3)
    drafts = (await automation.get("/api/devices/drafts", headers=auth)).json()["data"]["items"]
    assert sorted((d["device_id"], d["original_topic"]) for d in drafts) == [
        ("b-7", "device/boiler/b-7/uplink"),
        ("mixer-2", "plant/mixer-2/data"),
    ]

    status = (await automation.get("/api/mqtt/status", headers=auth)).json()["data"]["status"]
    assert status["external_brokers"] == [
        {"id": "ext", "name": "Ext", "broker": "127.0.0.1", "port": external.port, "tls": False,
         "connected": True, "enabled": True},
    ]  # fmt: skip
    tested = (await automation.post("/api/brokers/ext/test", headers=auth)).json()["data"]
    assert {
        k: tested[k] for k in ("success", "message", "broker_url", "host", "port", "tls", "validation_only")
    } == {
        "success": True,
        "message": "MQTT CONNECT successful",
        "broker_url": f"127.0.0.1:{external.port}",
        "host": "127.0.0.1",
        "port": external.port,
        "tls": False,
        "validation_only": False,
    }

    # The broker goes away: the session says so, and comes back with it.
    port = external.port
    await external.stop()
    await until(lambda: not session.connected)
    broker = (await automation.get("/api/brokers/ext", headers=auth)).json()["data"]["broker"]
    assert broker["connected"] is False and broker["last_error"] == "Disconnected"
    tested = (await automation.post("/api/brokers/ext/test", headers=auth)).json()["data"]
    assert (tested["success"], tested["message"], tested["broker"]["last_error"]) == (False, REFUSED, REFUSED)
    again = EmbeddedBroker("127.0.0.1", port)
    await again.start()
    try:
        await until(lambda: session.connected, attempts=1000)  # the server's backoff: 2 s, then 4 s
        broker = (await automation.get("/api/brokers/ext", headers=auth)).json()["data"]["broker"]
        assert broker["connected"] is True and "last_error" not in broker

        # Disabled: the session ends.
        off = await automation.put(
            "/api/brokers/ext", json={**body, "port": port, "enabled": False}, headers=auth
        )
        assert off.json()["data"]["broker"]["connected"] is False
        assert "ext" not in automation_of(twin.world).brokers.sessions and not session.connected
    finally:
        await again.stop()


async def test_unreachable_and_refused_brokers_are_reported_as_the_server_reports_them(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    port = closed_port()
    body = {"id": "dead", "name": "Dead", "broker": "127.0.0.1", "port": port}
    made = (await automation.post("/api/brokers", json=body, headers=auth)).json()["data"]
    assert made["message"] == "External broker created but MQTT connection failed"
    assert made["broker"]["connected"] is False
    assert made["broker"]["last_error"] == f"MQTT connection failed: {REFUSED}"
    updated = (await automation.put("/api/brokers/dead", json=body, headers=auth)).json()["data"]
    assert updated["message"] == "External broker updated but MQTT restart failed"

    guarded = EmbeddedBroker("127.0.0.1", 0, auth=Logins())
    await guarded.start()
    try:
        wrong = {"id": "guarded", "name": "G", "broker": "127.0.0.1", "port": guarded.port, "enabled": False,
                 "username": "plant", "password": "nope"}  # fmt: skip
        assert (await automation.post("/api/brokers", json=wrong, headers=auth)).status_code == 200
        tested = (await automation.post("/api/brokers/guarded/test", headers=auth)).json()["data"]
        assert (tested["success"], tested["message"]) == (False, "CONNACK rejected: NotAuthorized")
        right = {**wrong, "password": "pw-1234", "enabled": True}
        saved = (await automation.put("/api/brokers/guarded", json=right, headers=auth)).json()["data"]
        assert saved["message"] == "External broker updated and MQTT adapter restarted successfully"
        assert saved["broker"]["connected"] is True
    finally:
        await guarded.stop()

    empty = {"id": "empty", "name": "E", "broker": "", "enabled": False}
    await automation.post("/api/brokers", json=empty, headers=auth)
    tested = (await automation.post("/api/brokers/empty/test", headers=auth)).json()["data"]
    assert tested == {
        "success": False,
        "message": "Invalid broker configuration: empty host",
        "broker_url": ":1883",
    }


@pytest.mark.socket
async def test_brokers_are_kept_and_reconnected_when_the_server_starts_again(
    tmp_path: Path, external: EmbeddedBroker
) -> None:
    state = tmp_path / "state"
    async with running_twin(tmp_path, state_dir=state) as (_, _, http):
        body = {"id": "ext", "name": "Ext", "broker": "127.0.0.1", "port": external.port}
        assert (await http.post("/api/brokers", json=body)).json()["data"]["broker"]["connected"] is True
        off = {"id": "off", "name": "Off", "broker": "127.0.0.1", "port": external.port, "enabled": False}
        await http.post("/api/brokers", json=off)
    async with running_twin(tmp_path, state_dir=state) as (twin, _, http):
        await until(
            lambda: (
                "ext" in automation_of(twin.world).brokers.sessions
                and automation_of(twin.world).brokers.sessions["ext"].connected
            )
        )
        brokers = {b["id"]: b for b in (await http.get("/api/brokers")).json()["data"]["brokers"]}
        assert (brokers["ext"]["connected"], brokers["off"]["connected"]) == (True, False)
        assert "off" not in automation_of(twin.world).brokers.sessions


async def test_brokers_survive_a_rebuild_of_the_backend_on_the_same_state(tmp_path: Path) -> None:
    settings = Settings(state_dir=tmp_path, step=True)
    first = build(settings)
    async with _client(first.automation_app, "http://a") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        body = {"id": "kept", "name": "Kept", "broker": "10.0.0.9", "enabled": False, "password": "pw"}
        await client.post("/api/brokers", json=body, headers=auth)
    first.world.store.close()
    second = build(settings)
    async with _client(second.automation_app, "http://a") as client:
        resp = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        auth = {"Authorization": f"Bearer {resp.json()['token']}"}
        kept = (await client.get("/api/brokers/kept", headers=auth)).json()["data"]["broker"]
        assert (kept["broker"], kept["password"], kept["enabled"]) == ("10.0.0.9", "*****", False)
    second.world.store.close()
