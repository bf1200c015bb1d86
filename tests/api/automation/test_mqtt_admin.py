"""MQTT administration over HTTP: the status and subscriptions of the broker the twin really uses, custom
subscriptions its own client really holds (their messages taken in as the server takes them), and the
embedded broker's configuration applied at runtime: authentication with credentials, a new port, TLS
with generated certificates; all kept across a restart. Refusals in the server's shapes."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from amqtt.client import MQTTClient
from amqtt.errors import ConnectError
from cryptography import x509

from tests.api.support import assert_error
from tests.receivers import closed_port
from tests.sockets import socket_settings, until
from twin.serve import Running, Twin, build, start, stop


@contextlib.asynccontextmanager
async def mqtt_client(url: str, client_id: str, cafile: Path | None = None) -> AsyncIterator[MQTTClient]:
    client = MQTTClient(client_id=client_id, config={"auto_reconnect": False, "plugins": {}})
    await client.connect(url, cafile=str(cafile) if cafile else None)
    try:
        yield client
    finally:
        with contextlib.suppress(Exception):
            await client.disconnect()


@contextlib.asynccontextmanager
async def running_twin(tmp_path: Path, **settings) -> AsyncIterator[tuple[Twin, Running, httpx.AsyncClient]]:
    """The whole twin on loopback ports, its bridge connected, and an admin's HTTP client."""
    twin = build(socket_settings(**settings))
    certs = tmp_path / "certs"
    certs.mkdir(exist_ok=True)
    up = await start(twin, certs)
    try:
        await until(lambda: twin.bridge.connected)
        async with httpx.AsyncClient(base_url=up.url("automation"), timeout=20) as http:
            resp = await http.post(
                "/api/setup/initialize", json={"username": "admin", "password": "secret123"}
            )
            if resp.status_code != 200:  # a restart on the same state: the administrator exists
                resp = await http.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
            http.headers["Authorization"] = f"Bearer {resp.json()['token']}"
            yield twin, up, http
    finally:
        await stop(up)


# In process ----------------------------------------------------------------------------------------
async def test_status_and_subscriptions_report_the_broker_in_use(
    automation: httpx.AsyncClient, auth: dict, twin: Twin
) -> None:
    status = (await automation.get("/api/mqtt/status", headers=auth)).json()["data"]["status"]
    assert status == {
        "connected": False,  # nothing started: the bridge is not connected
        "listen_address": "0.0.0.0",
        "subscriptions_count": 2,
        "devices_count": 3,
        "clients_count": 3,
        "server_ip": twin.automation_app.state.network.ip,
        "listen_port": 1883,
        "tls_enabled": False,
        "last_error": "Disconnected",
    }
    subs = (await automation.get("/api/mqtt/subscriptions", headers=auth)).json()["data"]
    assert subs["count"] == 2 + 2 * 3
    assert subs["subscriptions"][:3] == [
        {"topic": "device/+/+/uplink", "qos": 0, "device_id": None},
        {"topic": "device/+/+/downlink", "qos": 1, "device_id": None},
        {"topic": "device/env_sensor/env_sensor-0001/uplink", "qos": 1, "device_id": "env_sensor-0001"},
    ]


async def test_refusals_in_the_servers_shapes(automation: httpx.AsyncClient, auth: dict) -> None:
    for method, path in [
        ("GET", "/api/mqtt/status"),
        ("POST", "/api/mqtt/subscribe"),
        ("PUT", "/api/mqtt/broker-config"),
    ]:
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
    post = lambda path, body: automation.post(path, json=body, headers=auth)  # noqa: E731
    assert_error(await post("/api/mqtt/subscribe", {"qos": 1}), 422, "VALIDATION_ERROR")
    assert_error(await post("/api/mqtt/subscribe", {"topic": 5}), 422, "VALIDATION_ERROR")
    assert_error(await post("/api/mqtt/subscribe", {"topic": "a", "qos": "1"}), 422, "VALIDATION_ERROR")
    assert_error(await post("/api/mqtt/subscribe", {"topic": "a", "qos": 300}), 422, "VALIDATION_ERROR")
    assert_error(
        await post("/api/mqtt/subscribe", {"topic": " "}), 422, "VALIDATION_ERROR", "topic is required"
    )
    assert_error(
        await post("/api/mqtt/subscribe", {"topic": "a", "qos": 3}), 422, "VALIDATION_ERROR",
        "qos must be between 0 and 2",
    )  # fmt: skip
    assert_error(
        await post("/api/mqtt/subscribe", {"topic": "t" * 201}), 422, "VALIDATION_ERROR",
        "topic must be at most 200 characters",
    )  # fmt: skip
    assert_error(await post("/api/mqtt/unsubscribe", {}), 422, "VALIDATION_ERROR")
    for path in ("/api/mqtt/subscribe/nobody", "/api/mqtt/unsubscribe/nobody"):
        assert_error(await post(path, None), 404, "NOT_FOUND", "Device not found: nobody not found")

    put = lambda body: automation.put("/api/mqtt/broker-config", json=body, headers=auth)  # noqa: E731
    assert_error(await put({"port": 80}), 400, "BAD_REQUEST", "Port must be between 1024 and 65535")
    assert_error(await put({"port": 70000}), 422, "VALIDATION_ERROR")
    assert_error(await put({"auth_enabled": "yes"}), 422, "VALIDATION_ERROR")
    assert_error(
        await put({"listen": "example.org"}), 400, "BAD_REQUEST",
        "Invalid listen address: 'example.org'. Must be a valid IP address (e.g. 0.0.0.0, 127.0.0.1, ::)",
    )  # fmt: skip
    assert_error(
        await put({"tls_enabled": True}), 400, "BAD_REQUEST",
        "Cannot enable TLS: no certificates configured. Upload or generate certificates first.",
    )  # fmt: skip

    creds = "/api/mqtt/broker-config/credentials"
    assert_error(await post(creds, {"username": "u"}), 422, "VALIDATION_ERROR")
    assert_error(await post(creds, {"username": "u", "password": 1234}), 422, "VALIDATION_ERROR")
    assert_error(
        await post(creds, {"username": "", "password": "pw12"}),
        400,
        "BAD_REQUEST",
        "Username must be 1-64 characters",
    )
    assert_error(
        await post(creds, {"username": "u", "password": "pw"}),
        400,
        "BAD_REQUEST",
        "Password must be at least 4 characters",
    )
    assert_error(
        await post(creds, {"username": "__neomind_x", "password": "pw12"}), 400, "BAD_REQUEST",
        "Username cannot start with '__neomind' (reserved for system use)",
    )  # fmt: skip
    assert (await post(creds, {"username": "u", "password": "pw12"})).status_code == 200
    assert_error(
        await post(creds, {"username": "u", "password": "pw34"}),
        400,
        "BAD_REQUEST",
        "Username 'u' already exists",
    )
    delete = creds + "/delete"
    assert_error(await post(delete, {}), 400, "BAD_REQUEST", "Missing 'username' field")
    assert_error(await post(delete, {"username": 7}), 400, "BAD_REQUEST", "Missing 'username' field")
    assert_error(
        await post(delete, {"username": "ghost"}), 404, "NOT_FOUND", "Credential not found: ghost not found"
    )
    assert_error(
        await post(delete, {"username": "__neomind_internal__"}), 400, "BAD_REQUEST",
        "Cannot delete system credentials (starting with '__neomind')",
    )  # fmt: skip

    tls = lambda body: automation.put("/api/mqtt/broker-config/tls", json=body, headers=auth)  # noqa: E731
    assert_error(await tls({"cert_pem": "x"}), 422, "VALIDATION_ERROR")
    assert_error(
        await tls({"cert_pem": "", "key_pem": "k"}), 400, "BAD_REQUEST", "certificate PEM cannot be empty"
    )
    assert_error(
        await tls({"cert_pem": "plain", "key_pem": "k"}), 400, "BAD_REQUEST",
        "certificate must be in PEM format (-----BEGIN ...-----END ...-----)",
    )  # fmt: skip
    cert = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----"
    assert_error(
        await tls({"cert_pem": cert, "key_pem": cert}), 400, "BAD_REQUEST",
        "private key must contain a valid private key block (-----BEGIN PRIVATE KEY-----, RSA PRIVATE KEY, "
        "or EC PRIVATE KEY)",
    )  # fmt: skip
    assert_error(
        await automation.get("/api/mqtt/broker-config/tls/ca-cert", headers=auth), 404, "NOT_FOUND",
        "No CA certificate configured not found",
    )  # fmt: skip


async def test_credentials_and_certificates_in_the_configuration(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    creds = "/api/mqtt/broker-config/credentials"
    resp = await automation.post(creds, json={"username": "sensor", "password": "pw1234"}, headers=auth)
    assert resp.json()["data"] == {"message": "Credential added successfully", "username": "sensor"}
    config = (await automation.get("/api/mqtt/broker-config", headers=auth)).json()["data"]["config"]
    assert config == {
        "listen": "0.0.0.0",
        "port": 1883,
        "max_connections": 1000,
        "max_payload_size": 268435456,
        "dynamic_filters": True,
        "auth_enabled": False,
        "tls_enabled": False,
        "credentials": [{"username": "sensor", "password": "*****"}],
    }
    made = (await automation.post("/api/mqtt/broker-config/tls/generate", headers=auth)).json()["data"]
    assert made == {
        "message": "Self-signed certificates generated successfully",
        "ca_path": "data/tls/mqtt-ca.crt",
        "cert_path": "data/tls/mqtt-server.crt",
        "key_path": "data/tls/mqtt-server.key",
    }
    ca = await automation.get("/api/mqtt/broker-config/tls/ca-cert", headers=auth)
    assert ca.headers["content-type"] == "application/x-pem-file"
    assert ca.headers["content-disposition"] == 'attachment; filename="mqtt-ca.crt"'
    cert = x509.load_pem_x509_certificate(ca.content)
    assert cert.subject.rfc4514_string() == "O=NeoMind,CN=NeoMind MQTT CA"

    # An upload without a CA clears the CA path; the download then has nothing to give.
    server = ca.text  # any certificate block passes the server's checks
    key = "-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----"
    up = await automation.put(
        "/api/mqtt/broker-config/tls", json={"cert_pem": server, "key_pem": key}, headers=auth
    )
    assert up.json()["data"] == {
        "message": "TLS certificates uploaded successfully",
        "cert_path": "data/tls/mqtt-server.crt",
        "key_path": "data/tls/mqtt-server.key",
        "ca_path": None,
    }
    config = (await automation.get("/api/mqtt/broker-config", headers=auth)).json()["data"]["config"]
    assert "tls_ca_path" not in config and config["tls_cert_path"] == "data/tls/mqtt-server.crt"
    assert (await automation.get("/api/mqtt/broker-config/tls/ca-cert", headers=auth)).status_code == 404

    deleted = await automation.post(creds + "/delete", json={"username": "sensor"}, headers=auth)
    assert deleted.json()["data"] == {"message": "Credential deleted successfully", "username": "sensor"}


# On real sockets -----------------------------------------------------------------------------------
@pytest.mark.socket
async def test_a_custom_subscription_really_subscribes_and_its_messages_are_taken_in(tmp_path: Path) -> None:
    async with running_twin(tmp_path) as (twin, up, http):
        status = (await http.get("/api/mqtt/status")).json()["data"]["status"]
        assert status["connected"] is True and status["last_error"] is None
        assert (status["listen_address"], status["listen_port"]) == ("127.0.0.1", up.broker.port)
        url = f"mqtt://127.0.0.1:{up.broker.port}"
        async with mqtt_client(url, "field-unit") as device:
            status = (await http.get("/api/mqtt/status")).json()["data"]["status"]
            assert status["clients_count"] == 1  # the field unit (the twin's own client is not counted)
            resp = await http.post("/api/mqtt/subscribe", json={"topic": "sensors/+/data", "qos": 1})
            assert resp.json()["data"] == {
                "success": True, "message": "Subscribed to topic", "topic": "sensors/+/data", "qos": 1,
            }  # fmt: skip
            # A filter the client's subscriptions already cover is not subscribed twice.
            covered = await http.post("/api/mqtt/subscribe", json={"topic": "device/x/y/uplink"})
            assert covered.json()["data"]["success"] is True
            subs = (await http.get("/api/mqtt/subscriptions")).json()["data"]["subscriptions"]
            assert {"topic": "sensors/+/data", "qos": 1, "device_id": None} in subs
            assert not any(s["topic"] == "device/x/y/uplink" for s in subs)

            await device.publish("sensors/boiler-2/data", json.dumps({"temp": 71.5}).encode(), qos=1)
            await device.publish("sensors/boiler-2/status", b"online", qos=1)  # not subscribed
            await until(lambda: twin.bridge.received >= 1)
            drafts = (await http.get("/api/devices/drafts")).json()["data"]["items"]
            assert [(d["device_id"], d["source"], d["original_topic"]) for d in drafts] == [
                ("boiler-2", "mqtt", "sensors/boiler-2/data")
            ]

            gone = await http.post("/api/mqtt/unsubscribe", json={"topic": "sensors/+/data"})
            assert gone.json()["data"] == {
                "success": True,
                "message": "Unsubscribed from topic",
                "topic": "sensors/+/data",
            }
            assert "sensors/+/data" not in twin.bridge.extra
            received = twin.bridge.received
            await device.publish("sensors/boiler-3/data", json.dumps({"temp": 1}).encode(), qos=1)
            await device.publish("device/pump/p-1/uplink", json.dumps({"p": 1}).encode(), qos=1)
            await until(lambda: twin.bridge.received >= received + 1)  # the device topic, not the other
            ids = {d["device_id"] for d in (await http.get("/api/devices/drafts")).json()["data"]["items"]}
            assert ids == {"boiler-2", "p-1"}

        dev = await http.post("/api/mqtt/subscribe/env_sensor-0001")
        assert dev.json()["data"] == {
            "message": "Subscribed to device: env_sensor-0001",
            "device_id": "env_sensor-0001",
        }
        undev = await http.post("/api/mqtt/unsubscribe/env_sensor-0001")
        assert undev.json()["data"]["message"] == (
            "Device env_sensor-0001 uses wildcard subscription - no individual subscription to remove"
        )


@pytest.mark.socket
async def test_authentication_port_and_tls_are_applied_at_runtime_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    async with running_twin(tmp_path, state_dir=state) as (twin, up, http):
        url = f"mqtt://127.0.0.1:{up.broker.port}"
        resp = await http.put("/api/mqtt/broker-config", json={"auth_enabled": True})
        body = resp.json()["data"]
        assert body["message"] == "Broker configuration updated and applied successfully"
        assert body["config"]["auth_enabled"] is True and body["config"]["tls_ca_path"] is None
        with pytest.raises(ConnectError) as refused:
            async with mqtt_client(url, "anonymous"):
                pass
        assert refused.value.return_code == 5  # not authorized
        await http.post(
            "/api/mqtt/broker-config/credentials", json={"username": "field", "password": "s3cret"}
        )
        async with mqtt_client(f"mqtt://field:s3cret@127.0.0.1:{up.broker.port}", "field-unit"):
            pass
        with pytest.raises(ConnectError):
            async with mqtt_client(f"mqtt://field:wrong@127.0.0.1:{up.broker.port}", "guesser"):
                pass
        assert twin.bridge.connected  # the server's own client kept its connection

        # A new port: the broker moves, the server's client follows with its system login.
        port = closed_port()
        moved = (await http.put("/api/mqtt/broker-config", json={"port": port})).json()["data"]
        assert moved["message"] == "Broker configuration updated and applied successfully"
        assert up.broker.port == port
        await until(lambda: twin.bridge.connected)
        status = (await http.get("/api/mqtt/status")).json()["data"]["status"]
        assert (status["listen_port"], status["connected"]) == (port, True)
        with pytest.raises(ConnectError):
            async with mqtt_client(url, "old-port"):
                pass

        # TLS with generated certificates: devices verify the broker with the downloaded CA.
        await http.post("/api/mqtt/broker-config/tls/generate")
        ca = tmp_path / "mqtt-ca.crt"
        ca.write_bytes((await http.get("/api/mqtt/broker-config/tls/ca-cert")).content)
        assert (await http.put("/api/mqtt/broker-config", json={"tls_enabled": True})).status_code == 200
        await until(lambda: twin.bridge.connected)
        assert twin.bridge.url.startswith("mqtts://")
        async with mqtt_client(f"mqtts://field:s3cret@127.0.0.1:{port}", "tls-unit", cafile=ca):
            pass
        with pytest.raises(ConnectError) as plain:  # plain MQTT on the TLS port fails
            async with mqtt_client(f"mqtt://field:s3cret@127.0.0.1:{port}", "plain-unit"):
                pass
        assert plain.value.return_code is None

        # A port that is taken: the change is kept and reported, the broker stays where it was.
        with contextlib.closing(socket.socket()) as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            busy = taken.getsockname()[1]
            failed = (await http.put("/api/mqtt/broker-config", json={"port": busy})).json()["data"]
        assert (
            failed["message"] == "Configuration saved but broker restart failed. Try restarting the server."
        )
        assert failed["restart_required"] is True and failed["config"]["port"] == busy
        assert up.broker.port == port
        await http.put("/api/mqtt/broker-config", json={"port": port})

    # The restart: the broker starts on the stored configuration (port, TLS, authentication).
    async with running_twin(tmp_path, state_dir=state) as (twin, up, http):
        assert up.broker.port == port and twin.bridge.url.startswith("mqtts://")
        config = (await http.get("/api/mqtt/broker-config")).json()["data"]["config"]
        assert (config["port"], config["auth_enabled"], config["tls_enabled"]) == (port, True, True)
        assert config["credentials"] == [{"username": "field", "password": "*****"}]
        async with mqtt_client(f"mqtts://field:s3cret@127.0.0.1:{port}", "tls-unit", cafile=ca):
            pass
        with pytest.raises((ConnectError, ssl.SSLError)):
            async with mqtt_client(f"mqtts://127.0.0.1:{port}", "anonymous", cafile=ca):
                pass


@pytest.mark.socket
async def test_with_an_external_broker_the_status_names_it_and_it_cannot_be_restarted(tmp_path: Path) -> None:
    from api.realtime.broker import EmbeddedBroker

    external = EmbeddedBroker("127.0.0.1", 0)
    await external.start()
    try:
        async with running_twin(tmp_path, mqtt_url=f"mqtt://127.0.0.1:{external.port}") as (_twin, up, http):
            assert up.broker is None
            status = (await http.get("/api/mqtt/status")).json()["data"]["status"]
            assert (status["listen_address"], status["listen_port"], status["connected"]) == (
                "127.0.0.1", external.port, True,
            )  # fmt: skip
            resp = (await http.put("/api/mqtt/broker-config", json={"port": 18830})).json()["data"]
            assert resp["restart_required"] is True
    finally:
        await external.stop()
