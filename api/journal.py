"""Request journal: a pure ASGI middleware recording every HTTP request a vendor app answers.

It sits outermost (around the fault layer), so an injected 5xx, reset or hang is journalled as the
client saw it. Per request it keeps what expectations judge: sim time in and out, method, route
template, path, query, status, client, ``Retry-After`` and, on telemetry pages, ``next_cursor``
(read from the tail of the body, never by parsing it whole). A Server-Sent Events response is
marked ``stream``: its entry is written when the stream ends, so ``end`` is when it was closed
(status 0 when the server cut it off mid-stream, e.g. its listener closing).
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.automation.metrics import route_template
from api.faults import ENDED_KEY, FAULT_KEY

CURSOR_KEY = b'"next_cursor":'
_TAIL = 512
STATUS_ROUTES = ("/ota/status", "/os-upgrade/status")
"""Routes whose ``status`` field is journalled (clients poll them to a terminal state)."""
_STATUS = re.compile(rb'"status"\s*:\s*"([^"]*)"')
_HEAD = 1024
EVENT_STREAM = b"text/event-stream"
NO_CURSOR = "absent"
"""``next_cursor`` of a response that is not a telemetry page."""


def record_exchange(
    journal: Journal, server: str, scope: Scope, at: float, route: str | None, status: int,
    retry_after: str | None, tail: bytes, paged: bool, head: bytes, polled: bool, stream: bool,
) -> None:  # fmt: skip
    """One HTTP exchange of ``scope`` in ``journal`` (``status`` 0: no complete response): its
    cursor read off the body's ``tail`` when ``paged``, its state off the ``head`` when ``polled``."""
    client = scope.get("client")
    journal.record(
        at,
        server,
        scope["method"],
        route or route_template(scope),
        scope["path"],
        query_of(scope.get("query_string", b"")),
        status,
        client[0] if client else "-",
        retry_after,
        cursor_in(tail) if paged else NO_CURSOR,
        scope.get(FAULT_KEY),
        state_in(head) if polled else None,
        stream,
        scope.get(ENDED_KEY),
    )


class Journal(Protocol):
    def now(self) -> float: ...

    def record(
        self,
        at: float,
        server: str,
        method: str,
        route: str,
        path: str,
        query: str,
        status: int,
        client: str,
        retry_after: str | None = None,
        next_cursor: Any = NO_CURSOR,
        fault: str | None = None,
        state: str | None = None,
        stream: bool = False,
        end: float | None = None,
    ) -> None: ...


def cursor_in(tail: bytes) -> Any:
    """The ``next_cursor`` value in a JSON body's tail: a number, ``None``, a string, or
    :data:`NO_CURSOR` when the body has none."""
    i = tail.rfind(CURSOR_KEY)
    if i < 0:
        return NO_CURSOR
    rest = tail[i + len(CURSOR_KEY) :].lstrip()
    end = 0
    while end < len(rest) and rest[end : end + 1] not in (b",", b"}", b"]"):
        end += 1
    token = rest[:end].strip().decode("utf-8", "replace")
    if token == "null":
        return None
    if token.startswith('"'):
        return token.strip('"')
    try:
        number = float(token)
    except ValueError:
        return token
    return int(number) if number.is_integer() else number


_SECRET = re.compile(r"((?:^|&)[^=&]*(?:token|key|password|secret)[^=&]*=)[^&]*", re.IGNORECASE)


def query_of(raw: bytes) -> str:
    """The query string, with the values of token, key, password and secret parameters masked."""
    query = raw.decode("latin-1")
    if not (b"token" in raw or b"key" in raw or b"pass" in raw or b"secret" in raw):
        return query  # the common case: nothing to mask, no regex
    return _SECRET.sub(r"\1***", query)


def state_in(head: bytes) -> str | None:
    """A status body's ``status`` (``reboot_confirmed`` once the device confirmed its reboot)."""
    if b'"reboot_confirmed":true' in head.replace(b" ", b""):
        return "reboot_confirmed"
    found = _STATUS.search(head)
    return found.group(1).decode("utf-8", "replace") if found else None


class JournalMiddleware:
    def __init__(self, app: ASGIApp, journal: Journal, server: str) -> None:
        self.app = app
        self.journal = journal
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        journal = self.journal
        at = journal.now()
        status = 0
        retry_after: str | None = None
        route = ""
        paged = polled = stream = False
        tail = head = b""

        async def watch(message: Message) -> None:
            nonlocal status, retry_after, route, paged, polled, stream, tail, head
            if message["type"] == "http.response.start":
                status = message["status"]
                if status == 429 or status == 503:
                    for name, value in message.get("headers", ()):
                        if name.lower() == b"retry-after":
                            retry_after = value.decode("latin-1")
                elif status == 200 and scope["method"] == "GET":
                    for name, value in message.get("headers", ()):
                        if value.startswith(EVENT_STREAM) and name.lower() == b"content-type":
                            stream = True
                route = route_template(scope)
                paged = route.endswith("/telemetry")
                polled = route.endswith(STATUS_ROUTES)
            elif paged:
                tail = (tail + message.get("body", b""))[-_TAIL:]
            elif polled and len(head) < _HEAD:
                head += message.get("body", b"")
            await send(message)

        failed = False
        try:
            await self.app(scope, receive, watch)
        except BaseException:
            failed = True
            raise
        finally:
            status = 0 if failed else status
            record_exchange(
                journal, self.server, scope, at, route, status, retry_after, tail, paged, head, polled, stream
            )

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket is journalled when it ends: ``at`` its opening, ``end`` its close, method
        ``WS``, status 101 if it was accepted, else the denial's status (403 for a bare close)."""
        at = self.journal.now()
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            kind = message["type"]
            if kind == "websocket.accept":
                status = 101
            elif kind == "websocket.http.response.start" and not status:
                status = message["status"]
            elif kind == "websocket.close" and not status:
                status = 403
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            client = scope.get("client")
            self.journal.record(
                at,
                self.server,
                "WS",
                route_template(scope),
                scope["path"],
                "",  # the query of a stream carries its token: never journalled
                status,
                client[0] if client else "-",
                None,
                NO_CURSOR,
                scope.get(FAULT_KEY),
                end=scope.get(ENDED_KEY),
            )
