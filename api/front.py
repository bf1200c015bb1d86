"""The layers in front of a simulated member's app, fused into one ASGI layer: the request
journal, the fault layer and the express lane.

Stacked as three middlewares, every request paid three calls and, per response message, three
send wrappers, each reading the same message again. While no fault is active on the server (the
common case), :class:`Front` does their work in one call with one send wrapper that records what
the journal keeps, registers an event stream so that a drop can end it, adds what CORS adds to an
express answer and counts the request. Requests it does not answer itself (a non-``GET``, a route
off the express lane) go to the app under the same wrapper. While a fault is active, every request
takes the three layers themselves (:attr:`Front.chain`), so each fault behaves exactly as that
layer makes it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.automation.metrics import route_template
from api.express import ExpressLane, with_vary
from api.faults import FAULT_KEY, FaultMiddleware, FaultSet, _canceller, _is_event_stream
from api.journal import (
    _HEAD,
    _TAIL,
    STATUS_ROUTES,
    Journal,
    JournalMiddleware,
    record_exchange,
)


class Front:
    """ASGI middleware: the journal (outermost), the fault layer and the express lane of
    ``owner`` (the FastAPI app it is added to), as one layer."""

    def __init__(
        self,
        app: ASGIApp,
        owner: FastAPI,
        faults: FaultSet,
        sleep: Callable[[float], Awaitable[None]],
        journal: Journal,
        server: str,
    ) -> None:
        self.app = app
        self.lane = ExpressLane(app, owner)
        self.chain = JournalMiddleware(FaultMiddleware(self.lane, faults, sleep), journal, server)
        """The three layers one by one: what a request takes while a fault is active."""
        self.faults = faults
        self.journal = journal
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.faults.active:
            await self.chain(scope, receive, send)
            return
        journal, faults, lane = self.journal, self.faults, self.lane
        at = journal.now()
        get = scope["method"] == "GET"
        found = lane.find(scope) if get else None
        task = asyncio.current_task() if get else None  # the request's (a stream may send from another)
        status = 0
        retry_after: str | None = None
        route = ""
        paged = polled = stream = False
        tail = head = b""
        keys: list[int] = []

        async def watch(message: Message) -> None:
            nonlocal status, retry_after, route, paged, polled, stream, tail, head
            if message["type"] == "http.response.start":
                status = message["status"]
                if found is not None and lane.cors:
                    with_vary(message)
                if status == 429 or status == 503:
                    for name, value in message.get("headers", ()):
                        if name.lower() == b"retry-after":
                            retry_after = value.decode("latin-1")
                elif get and _is_event_stream(message):
                    stream = True
                    keys.append(faults._register(scope, _canceller(task)))
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
            if found is not None:
                await lane.answer(found, scope, receive, watch)
            else:
                await self.app(scope, receive, watch)
        except asyncio.CancelledError:
            if not keys or scope.get(FAULT_KEY) != "dropped" or task is None:
                failed = True
                raise
            task.uncancel()  # the fault layer dropped this stream: end its body cleanly
            with contextlib.suppress(Exception):  # the client may have gone too
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except BaseException:
            failed = True
            raise
        finally:
            if keys:
                faults.streams.pop(keys[0], None)
            status = 0 if failed else status
            record_exchange(
                journal, self.server, scope, at, route, status, retry_after, tail, paged, head, polled, stream
            )
