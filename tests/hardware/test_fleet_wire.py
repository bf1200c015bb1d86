"""The fleet publisher's own MQTT 3.1.1 client (hardware/adapters/mqtt_fleet.py) against a scripted
broker on loopback: the CONNECT it sends, a refusal by its return code, PUBACKs that arrive split
across reads or many in one, and keepalive pings (answered, and unanswered: the connection ends)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from hardware.adapters import mqtt_fleet
from hardware.adapters.mqtt_fleet import FleetPublisher
from tests.sockets import mqtt_packet, socket_settings, until
from twin.serve import build

pytestmark = pytest.mark.socket

Script = Callable[["ScriptedBroker", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class ScriptedBroker:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.packets: list[tuple[int, bytes]] = []

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"mqtt://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def packet(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        packet = await mqtt_packet(reader)
        self.packets.append(packet)
        return packet

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self.script(self, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def close(self) -> None:
        self.server.close()
        await self.server.wait_closed()


@contextlib.asynccontextmanager
async def publishing(script: Script, **options):
    broker = ScriptedBroker(script)
    url = await broker.start()
    twin = build(socket_settings())  # not started: the world in step mode, no servers
    publisher = FleetPublisher(twin.automation, url, **{"backoff": (60.0, 60.0), **options})
    task = asyncio.create_task(publisher.run())
    try:
        yield broker, twin, publisher
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await broker.close()
        twin.world.store.close()


async def test_the_connect_carries_the_login_and_a_refusal_is_named_by_its_code() -> None:
    async def refuse(broker: ScriptedBroker, reader, writer) -> None:
        await broker.packet(reader)
        writer.write(b"\x20\x02\x00\x05")  # CONNACK: not authorized
        await writer.drain()
        await reader.read()

    async with publishing(refuse, login=("fleet", "pw"), client_id="twin-fleet") as (broker, _, publisher):
        await until(lambda: publisher.last_error is not None)
        assert publisher.last_error == "refused: Not authorized" and not publisher.connected
        kind, body = broker.packets[0]
        assert kind == 1
        assert body == (
            b"\x00\x04MQTT\x04\xc2\x00\x1e"  # MQTT 3.1.1, clean session, username and password, 30 s
            b"\x00\x0atwin-fleet\x00\x05fleet\x00\x02pw"
        )


async def test_pubacks_split_across_reads_or_many_in_one_are_each_counted_once() -> None:
    async def ack_byte_by_byte(broker: ScriptedBroker, reader, writer) -> None:
        await broker.packet(reader)
        writer.write(b"\x20\x02\x00\x00")
        mids = []
        while len(mids) < 6:
            kind, body = await broker.packet(reader)
            if kind == 3:
                topic_length = int.from_bytes(body[:2], "big")
                mids.append(body[2 + topic_length : 4 + topic_length])
        acks = b"".join(b"\x40\x02" + mid for mid in mids) + b"\x40\x02" + mids[0]  # one acked twice
        for i in range(len(acks)):
            writer.write(acks[i : i + 1])
            await writer.drain()
            await asyncio.sleep(0.01)
        await reader.read()

    async with publishing(ack_byte_by_byte) as (_, twin, publisher):
        await until(lambda: publisher.connected)
        twin.clock.advance(10)  # two ticks of three sensors: six messages
        await until(lambda: publisher.acknowledged == 6)
        await asyncio.sleep(0.1)
        s = publisher.status()
        assert (s["published"], s["acknowledged"], s["in_flight"], s["undelivered"]) == (6, 6, 0, 0)


async def test_an_idle_connection_pings_and_one_whose_pings_go_unanswered_ends(monkeypatch) -> None:
    monkeypatch.setattr(mqtt_fleet, "KEEPALIVE_S", 1)
    pings = []

    async def answer_one_ping(broker: ScriptedBroker, reader, writer) -> None:
        await broker.packet(reader)
        writer.write(b"\x20\x02\x00\x00")
        while True:
            kind, _ = await broker.packet(reader)
            if kind == 12:  # PINGREQ
                pings.append(asyncio.get_running_loop().time())
                if len(pings) == 1:
                    writer.write(b"\xd0\x00")  # PINGRESP, once

    async with publishing(answer_one_ping) as (_, _, publisher):
        await until(lambda: publisher.connected)
        await until(lambda: len(pings) == 2, attempts=2000)
        await until(lambda: not publisher.connected, attempts=2000)  # the second went unanswered
