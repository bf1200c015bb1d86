"""The server's MQTT sessions with external brokers (the loop side of
:mod:`twin.automation.brokers`): a real MQTT client per enabled broker that subscribes the broker's
topics, hands every message to the world's inbound handling, and reconnects after a drop with the real
server's backoff (2, 4, 8, 16, then 30 s, wall clock: this is a network client, like the delivery
links). A one-off CONNECT/CONNACK test is here too.

Errors read like the real server's MQTT client's: ``I/O: Connection refused (os error 111)``,
``Connection refused, return code: `BadUserNamePassword```, ``Connection timeout after 10 seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import ssl
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from amqtt.client import MQTTClient
from amqtt.errors import ConnectError

from twin.automation.mqtt_inbound import normalized

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
MAX_BACKOFF_S = 30.0
PRESENCE_TOPICS = ("$SYS/brokers/+/clients/+/connected", "$SYS/brokers/+/clients/+/disconnected")
DEVICE_TOPICS = ("device/+/+/uplink", "device/+/+/downlink")
RETURN_CODES = {
    1: "RefusedProtocolVersion",
    2: "BadClientId",
    3: "ServiceUnavailable",
    4: "BadUserNamePassword",
    5: "NotAuthorized",
}


def describe(err: BaseException) -> str:
    """A failed connection attempt, in the real client's words."""
    if isinstance(err, TimeoutError):
        return f"Connection timeout after {CONNECT_TIMEOUT_S:g} seconds"
    code = getattr(err, "return_code", None)
    if code is not None:
        return f"Connection refused, return code: `{RETURN_CODES.get(code, code)}`"
    cause = err.__cause__ if isinstance(err, ConnectError) and err.__cause__ is not None else err
    if isinstance(cause, ssl.SSLError):
        return f"TLS: {cause.reason or cause}"
    if isinstance(cause, socket.gaierror):
        return f"I/O: failed to lookup address information: {cause.strerror}"
    if isinstance(cause, OSError) and cause.errno is not None:
        return f"I/O: {os.strerror(cause.errno)} (os error {cause.errno})"
    return f"I/O: {cause}" if str(cause) else type(cause).__name__


def broker_uri(doc: dict[str, Any], with_login: bool = True) -> str:
    scheme = "mqtts" if doc.get("tls") else "mqtt"
    login = ""
    if with_login and doc.get("username") and doc.get("password") is not None:
        login = f"{quote(doc['username'], safe='')}:{quote(doc['password'], safe='')}@"
    host = doc["broker"]
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{login}{host}:{doc['port']}"


_CA_DIR: tempfile.TemporaryDirectory[str] | None = None


def _ca_file(pem: str) -> str:
    """The broker's CA certificate as a file (the MQTT client reads CAs from files), in a private
    directory of this process, one file per certificate."""
    global _CA_DIR
    if _CA_DIR is None:
        _CA_DIR = tempfile.TemporaryDirectory(prefix="twin-broker-ca-")
    path = Path(_CA_DIR.name) / (hashlib.sha256(pem.encode()).hexdigest()[:16] + ".pem")
    if not path.exists():
        path.write_text(pem)
    return str(path)


async def connect(doc: dict[str, Any], client_id: str) -> MQTTClient:
    """One CONNECT/CONNACK; raises what :func:`describe` explains."""
    client = MQTTClient(client_id=client_id, config={"auto_reconnect": False, "plugins": {}})
    cafile = _ca_file(doc["ca_cert"]) if doc.get("tls") and doc.get("ca_cert") else None
    try:
        await asyncio.wait_for(
            client.connect(broker_uri(doc), cleansession=True, cafile=cafile), CONNECT_TIMEOUT_S
        )
    except BaseException:
        with contextlib.suppress(Exception):
            await client.disconnect()
        raise
    return client


async def test_connection(doc: dict[str, Any]) -> tuple[bool, str]:
    try:
        client = await connect(doc, f"neomind-test-{uuid.uuid4()}")
    except asyncio.CancelledError:
        raise
    except Exception as err:
        code = getattr(err, "return_code", None)
        if code is not None:
            return False, f"CONNACK rejected: {RETURN_CODES.get(code, code)}"
        return False, describe(err)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.disconnect(), 2)
    return True, "MQTT CONNECT successful"


class BrokerSession:
    """One broker's session: :meth:`start` makes the first attempt and reports it; the session then
    keeps itself connected until :meth:`aclose`. ``on_state(connected, error)`` hears every change."""

    def __init__(
        self,
        doc: dict[str, Any],
        on_message: Callable[[str, bytes, tuple[str, ...]], object],
        on_state: Callable[[bool, str | None], None],
    ) -> None:
        self.doc = doc
        self.topics = tuple(normalized([*DEVICE_TOPICS, *doc["subscribe_topics"]])) + PRESENCE_TOPICS
        self.client_id = doc.get("client_id") or f"neomind-{doc['id']}-{uuid.uuid4()}"
        self.on_message = on_message
        self.on_state = on_state
        self.connected = False
        self.received = 0
        self._task: asyncio.Task[None] | None = None
        self._client: MQTTClient | None = None

    async def start(self) -> str | None:
        """The first attempt: ``None`` once connected, else the error (the session keeps trying)."""
        first: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(first), name=f"broker-{self.doc['id']}")
        return await asyncio.shield(first)

    async def _run(self, first: asyncio.Future[str | None]) -> None:
        failures = 0
        while True:
            try:
                self._client = await connect(self.doc, self.client_id)
                await self._client.subscribe([(t, 1) for t in self.topics])
            except asyncio.CancelledError:
                raise
            except Exception as err:
                failures += 1
                self._state(False, f"MQTT connection failed: {describe(err)}", first)
                await asyncio.sleep(min(2.0 ** min(failures, 5), MAX_BACKOFF_S))
                continue
            failures = 0
            self._state(True, None, first)
            await self._receive(self._client)
            self._state(False, "Disconnected", first)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._client.disconnect(), 2)
            self._client = None
            await asyncio.sleep(1.0)

    def _state(self, connected: bool, error: str | None, first: asyncio.Future[str | None]) -> None:
        self.connected = connected
        if not first.done():
            first.set_result(error)
        self.on_state(connected, error)

    async def _receive(self, client: MQTTClient) -> None:
        """Until the connection ends."""
        while True:
            try:
                message = await client.deliver_message()
            except asyncio.CancelledError:
                if (task := asyncio.current_task()) is not None and task.cancelling():  # we are being closed
                    raise
                return  # the client cancels its waiters when the connection closes
            except Exception:
                return
            if message is None:
                continue
            self.received += 1
            try:
                self.on_message(
                    message.topic, bytes(message.data or b""), tuple(self.doc["subscribe_topics"])
                )
            except Exception:  # one bad message must not end the session
                log.exception("broker %s: handling a message on %s failed", self.doc["id"], message.topic)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.disconnect(), 2)
        self.connected = False
