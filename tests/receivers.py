"""Tiny real servers on 127.0.0.1 that record what the twin delivers: HTTP (webhooks, chat kinds) and
SMTP (email channels). Both run on the test's event loop; ports are picked by the OS."""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def closed_port() -> int:
    """A loopback port nothing listens on (the OS picked it free; it is released again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def read_request(reader: asyncio.StreamReader) -> Request:
    """One HTTP/1.1 request off ``reader``: its head and a ``Content-Length`` body."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Request(method, path, headers, body)


@dataclass
class HttpReceiver:
    """Answers each request with the next status of ``statuses`` (then 200) and records it. ``port``:
    listen there (a far end that was down coming back), else on one the OS picks."""

    statuses: list[int] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    server: asyncio.Server | None = None
    port: int = 0

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> HttpReceiver:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            self.requests.append(await read_request(reader))
            status = self.statuses.pop(0) if self.statuses else 200
            reply = b'{"ok":true}' if status < 300 else b'{"error":"scripted failure"}'
            writer.write(
                f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(reply)}\r\n"
                f"Connection: close\r\n\r\n".encode()
                + reply
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()


@dataclass
class Mail:
    sender: str
    recipients: list[str]
    data: str


@dataclass
class SmtpReceiver:
    """Enough of RFC 5321 for ``smtplib``: greeting, EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT."""

    mails: list[Mail] = field(default_factory=list)
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.sockets[0].getsockname()[1]

    async def __aenter__(self) -> SmtpReceiver:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def say(line: str) -> None:
            writer.write(line.encode() + b"\r\n")

        sender, recipients = "", []
        say("220 localhost ESMTP test")
        try:
            while line := (await reader.readline()).decode().rstrip("\r\n"):
                verb = line[:4].upper()
                if verb in ("EHLO", "HELO"):
                    say("250 localhost")
                elif verb == "MAIL":
                    sender, recipients = line.split(":", 1)[1].strip(" <>"), []
                    say("250 OK")
                elif verb == "RCPT":
                    recipients.append(line.split(":", 1)[1].strip(" <>"))
                    say("250 OK")
                elif verb == "DATA":
                    say("354 End data with <CR><LF>.<CR><LF>")
                    await writer.drain()
                    data = (await reader.readuntil(b"\r\n.\r\n")).decode()
                    self.mails.append(Mail(sender, recipients, data))
                    say("250 OK queued")
                elif verb == "QUIT":
                    say("221 Bye")
                    await writer.drain()
                    break
                else:
                    say("250 OK")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
