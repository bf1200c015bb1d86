"""The embedded broker bounds what a client can hold, over real sockets: a packet past the real
broker's limit (1 MiB) closes the connection before its body is read, garbage and silent connections
are closed, anonymous clients are welcome by default (as on the real server) and refused with
``--mqtt-require-login``; and `--host` / `--mqtt-host` place the broker."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from amqtt.errors import ConnectError

from api.realtime import broker as broker_module
from api.realtime.broker import MAX_PACKET, EmbeddedBroker
from tests.api.automation.test_mqtt_admin import mqtt_client, running_twin
from twin import settings as settings_mod
from twin.automation.server import automation_of

pytestmark = pytest.mark.socket


@contextlib.asynccontextmanager
async def broker() -> AsyncIterator[EmbeddedBroker]:
    embedded = EmbeddedBroker("127.0.0.1", 0)
    await embedded.start()
    try:
        yield embedded
    finally:
        await embedded.stop()


def connect_packet(client_id: bytes = b"probe") -> bytes:
    body = b"\x00\x04MQTT\x04\x02\x00\x3c" + struct.pack("!H", len(client_id)) + client_id
    return bytes([0x10, len(body)]) + body


def remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        n, digit = divmod(n, 128)
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


async def closed(reader: asyncio.StreamReader, timeout: float = 20.0) -> bool:
    """Whether the broker ends the connection (EOF or reset) within a generous ``timeout``."""
    try:
        while await asyncio.wait_for(reader.read(65536), timeout):
            pass
    except ConnectionError:
        return True
    except TimeoutError:
        return False
    return True


async def test_a_publish_past_the_limit_closes_the_connection_before_its_body() -> None:
    async with broker() as embedded:
        reader, writer = await asyncio.open_connection("127.0.0.1", embedded.port)
        writer.write(connect_packet())
        assert (await asyncio.wait_for(reader.readexactly(4), 10))[:1] == b"\x20"  # CONNACK
        size = 64 * 1024 * 1024
        topic = b"device/x/big/uplink"
        head = (
            bytes([0x32])
            + remaining_length(2 + len(topic) + 2 + size)
            + struct.pack("!H", len(topic))
            + topic
        )
        writer.write(head + b"\x00\x01" + b"\x00" * 65536)  # 64 KiB of a 64 MiB QoS 1 publish
        assert await closed(reader)
        writer.close()
        async with mqtt_client(f"mqtt://127.0.0.1:{embedded.port}", "after") as ok:  # the broker goes on
            await ok.publish("a/b", b"x" * (MAX_PACKET - 100), qos=1)


async def test_garbage_and_silent_connections_are_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_module, "HANDSHAKE_TIMEOUT_S", 0.5)
    async with broker() as embedded:
        for garbage in (
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            b"\xff\xff\xff\xff\xff\xff",
            b"\x10\xff\xff\xff\xff\x7f",
        ):
            reader, writer = await asyncio.open_connection("127.0.0.1", embedded.port)
            writer.write(garbage)
            assert await closed(reader), garbage
            writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", embedded.port)  # says nothing
        assert await closed(reader)
        writer.close()


async def test_anonymous_by_default_and_refused_with_the_switch(tmp_path: Path) -> None:
    (tmp_path / "open").mkdir()
    (tmp_path / "closed").mkdir()
    async with running_twin(tmp_path / "open") as (_twin, up, http):
        async with mqtt_client(f"mqtt://127.0.0.1:{up.broker.port}", "anon"):
            pass
        config = (await http.get("/api/mqtt/broker-config")).json()["data"]
        assert config["config"]["auth_enabled"] is False
    async with running_twin(tmp_path / "closed", mqtt_require_login=True) as (twin, up, http):
        with pytest.raises(ConnectError) as refused:
            async with mqtt_client(f"mqtt://127.0.0.1:{up.broker.port}", "anon"):
                pass
        assert refused.value.return_code == 5
        assert twin.bridge.connected  # the server's own client logs in
        config = (await http.get("/api/mqtt/broker-config")).json()["data"]
        assert config["config"]["auth_enabled"] is True
        await http.post(
            "/api/mqtt/broker-config/credentials", json={"username": "field", "password": "s3cret"}
        )
        async with mqtt_client(f"mqtt://field:s3cret@127.0.0.1:{up.broker.port}", "field-unit"):
            pass
        assert automation_of(twin.world).mqtt_broker.stored() is None or not (
            automation_of(twin.world).mqtt_broker.stored().auth_enabled
        )  # the switch is the command line's, not stored


def test_the_broker_follows_host_unless_told_otherwise() -> None:
    _, s = settings_mod.parse(["run", "--host", "127.0.0.1"], {})
    assert (s.host, s.mqtt_host) == ("127.0.0.1", "127.0.0.1")
    _, s = settings_mod.parse(["run", "--host", "127.0.0.1", "--mqtt-host", "::1"], {})
    assert s.mqtt_host == "::1"
    _, s = settings_mod.parse(["run"], {})
    assert (s.host, s.mqtt_host, s.mqtt_require_login) == ("0.0.0.0", "0.0.0.0", False)
    _, s = settings_mod.parse(["run", "--mqtt-require-login"], {})
    assert s.mqtt_require_login is True
