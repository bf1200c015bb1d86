"""How a delivery leaves the process: one :class:`Link` per delivery owner (a push target, a channel).

A link holds its owner's transports, made on first use and kept across attempts: HTTP through one
pooled ``httpx.AsyncClient`` (so an attempt reuses its connections and the TLS setup, and a target
that is down costs a refused connect, not a new client), MQTT through one broker session, SMTP one
session per message. At most :data:`MAX_IN_FLIGHT` attempts of one owner run at once; the rest wait
their turn outside the attempt's time limit. The outbox closes a link when its owner is deleted
and every link when the world stops or is rebuilt.

Another kind of owner (an IM bridge, say) plugs in by queueing jobs with one of these transports, or
by adding its own to :data:`TRANSPORTS`: a factory taking the link's name and returning something
with ``send(config, payload)`` and ``aclose()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import smtplib
import ssl
import time
from collections.abc import Callable
from email.message import EmailMessage
from typing import Any, Protocol

import httpx
from amqtt.client import MQTTClient

from hardware.ports.rules import DeliveryResult

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 10.0
"""Wall-clock limit of one attempt (a far end that hangs must not hold its owner's deliveries)."""
CLOSE_TIMEOUT_S = 2.0
MAX_IN_FLIGHT = 4
"""Concurrent attempts per owner (the HTTP pool holds as many connections)."""
RESPONSE_PREVIEW = 500
BOT_TOKEN = re.compile(r"/bot[^/\s]+/")


class Transport(Protocol):
    async def send(self, config: dict[str, Any], payload: Any) -> tuple[bool, str, int | None]:
        """One attempt: ``(delivered, what the far end said, status code)``; raises when the far end
        cannot be reached."""
        ...

    async def aclose(self) -> None: ...


def payload_bytes(payload: Any) -> bytes:
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class HttpTransport:
    def __init__(self, name: str) -> None:
        self.name = name
        self.client: httpx.AsyncClient | None = None

    def http(self) -> httpx.AsyncClient:
        """The link's pooled client, made on first use."""
        if self.client is None:
            limits = httpx.Limits(max_connections=MAX_IN_FLIGHT, max_keepalive_connections=MAX_IN_FLIGHT)
            self.client = httpx.AsyncClient(timeout=SEND_TIMEOUT_S, follow_redirects=False, limits=limits)
        return self.client

    async def send(self, config: dict[str, Any], payload: Any) -> tuple[bool, str, int | None]:
        headers = {
            "Content-Type": "application/json",
            **{str(k): str(v) for k, v in (config.get("headers") or {}).items()},
        }
        method = str(config.get("method", "POST")).upper()
        body = payload_bytes(payload)
        resp = await self.http().request(method, config["url"], content=body, headers=headers)
        return answer(resp, 200 <= resp.status_code < 300)

    async def aclose(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()


def answer(resp: httpx.Response, delivered: bool) -> tuple[bool, str, int | None]:
    """An HTTP attempt's outcome: the start of what the far end said, the status line on a failure."""
    text = resp.text[:RESPONSE_PREVIEW]
    return delivered, text if delivered else f"HTTP {resp.status_code}: {text}", resp.status_code


def broker_url(config: dict[str, Any]) -> str:
    return config.get("broker_url") or (
        f"mqtt://{config.get('host', '127.0.0.1')}:{int(config.get('port', 1883))}"
    )


class MqttTransport:
    """One broker session, opened on first use and again after it drops or the broker changes."""

    def __init__(self, name: str) -> None:
        self.client_id = "twin-" + re.sub(r"[^A-Za-z0-9-]", "", name)[:40]
        self.client: MQTTClient | None = None
        self.url: str | None = None

    async def send(self, config: dict[str, Any], payload: Any) -> tuple[bool, str, int | None]:
        url = broker_url(config)
        if self.client is not None and (url != self.url or not _connected(self.client)):
            await self.aclose()
        if self.client is None:
            client = MQTTClient(client_id=self.client_id, config={"auto_reconnect": False})
            await client.connect(url)
            self.client, self.url = client, url
        try:
            await self.client.publish(config["topic"], payload_bytes(payload), qos=int(config.get("qos", 0)))
        except BaseException:
            await self.aclose()  # the next attempt starts a fresh session
            raise
        return True, "published", None

    async def aclose(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.disconnect(), CLOSE_TIMEOUT_S)


def _connected(client: MQTTClient) -> bool:
    session = client.session
    return session is not None and session.transitions.is_connected()


class SmtpTransport:
    """A session per message, in a worker thread (``smtplib`` blocks)."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def send(self, config: dict[str, Any], payload: Any) -> tuple[bool, str, int | None]:
        await asyncio.to_thread(_smtp, config, payload)
        return True, "sent", None

    async def aclose(self) -> None:
        return None


def _smtp(config: dict[str, Any], payload: dict[str, Any]) -> None:
    mail = EmailMessage()
    mail["From"] = config.get("from_address") or config.get("username") or "twin@localhost"
    mail["To"] = ", ".join(payload["recipients"])
    mail["Subject"] = payload["subject"]
    mail.set_content(payload["body"])
    host, port = config["smtp_server"], int(config.get("smtp_port", 25))
    if config.get("use_ssl"):
        conn: smtplib.SMTP = smtplib.SMTP_SSL(
            host, port, timeout=SEND_TIMEOUT_S, context=ssl.create_default_context()
        )
    else:
        conn = smtplib.SMTP(host, port, timeout=SEND_TIMEOUT_S)
    with conn:
        if config.get("use_tls") and not config.get("use_ssl"):
            conn.starttls(context=ssl.create_default_context())
        if config.get("username") and config.get("password"):
            conn.login(config["username"], config["password"])
        conn.send_message(mail)


TRANSPORTS: dict[str, Callable[[str], Transport]] = {
    "http": HttpTransport,
    "mqtt": MqttTransport,
    "smtp": SmtpTransport,
}


class Link:
    """One owner's way out. ``retire()`` when the owner goes: the link closes once idle."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.transports: dict[str, Transport] = {}
        self.slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self.busy = 0
        self.retired = False

    @property
    def open(self) -> bool:
        """Whether it holds a transport (a connection, a client) that needs closing."""
        return bool(self.transports)

    async def send(self, transport: str, config: dict[str, Any], payload: Any) -> DeliveryResult:
        """One real attempt. Never raises: failures come back as an unsuccessful result."""
        self.busy += 1
        try:
            async with self.slots:
                return await self._attempt(transport, config, payload)
        finally:
            self.busy -= 1
            if self.retired and self.busy == 0:
                await self.aclose()

    async def _attempt(self, transport: str, config: dict[str, Any], payload: Any) -> DeliveryResult:
        started = time.monotonic()  # how long the far end took: a measurement, not world time
        status: int | None = None
        try:
            way = self.transports.get(transport)
            if way is None:
                factory = TRANSPORTS.get(transport)
                if factory is None:
                    raise ValueError(f"unknown transport {transport}")
                way = self.transports[transport] = factory(self.name)
            ok, message, status = await asyncio.wait_for(way.send(config, payload), SEND_TIMEOUT_S)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the far end failed: a result, not a crash
            ok, message = False, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        message = BOT_TOKEN.sub("/bot***/", message)  # a chat token in a URL never reaches a client or a log
        return DeliveryResult(ok, message, round((time.monotonic() - started) * 1000), status_code=status)

    def retire(self) -> bool:
        """Mark the link for closing; True if it is idle now (the caller closes it), else the last
        attempt in flight closes it."""
        self.retired = True
        return self.busy == 0

    async def aclose(self) -> None:
        ways, self.transports = list(self.transports.values()), {}
        for way in ways:
            try:
                await way.aclose()
            except Exception:  # closing must go on for the others
                log.warning("closing a %s transport failed", self.name, exc_info=True)
