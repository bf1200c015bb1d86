"""Request body limits, enforced while the body is read (ASGI), never after buffering it whole.

Each app says, per method and path, how large a body may be and how the vendor refuses a larger
one: a declared ``Content-Length`` over the limit can be refused before the app runs (a limiting
layer or proxy in front of the handlers), and a body that passes the limit while it is read is
refused at that chunk. The second case raises :class:`BodyTooLarge` from ``receive``, which
the app's exception handler turns into the vendor's 413 (installed by :func:`install`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Refusal = Callable[[], Response]


@dataclass(frozen=True, slots=True)
class Limit:
    size: int
    """The largest body accepted, in bytes."""
    on_read: Refusal
    """The answer when the body passes ``size`` while it is read."""
    on_declared: Refusal | None = None
    """The answer, before the app runs, to a ``Content-Length`` over ``size`` (None: read first)."""


LimitOf = Callable[[str, str], Limit]
"""(method, path) -> the request's limit."""


class BodyTooLarge(HTTPException):
    def __init__(self, response: Response) -> None:
        super().__init__(413)
        self.response = response


class BodyLimit:
    """ASGI middleware. ``smallest`` is the least of the app's limits: a request under it (most of
    them) never looks its limit up."""

    def __init__(self, app: ASGIApp, limit_of: LimitOf, smallest: int) -> None:
        self.app = app
        self.limit_of = limit_of
        self.smallest = smallest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.smallest:
            limit = self.limit_of(scope["method"], scope["path"])
            if declared > limit.size and limit.on_declared is not None:
                await limit.on_declared()(scope, receive, send)
                return
        counted = 0

        async def counting() -> Message:
            nonlocal counted
            message = await receive()
            if message["type"] == "http.request":
                counted += len(message.get("body", b""))
                if counted > self.smallest:
                    limit = self.limit_of(scope["method"], scope["path"])
                    if counted > limit.size:
                        raise BodyTooLarge(limit.on_read())
            return message

        await self.app(scope, counting, send)


def install(app: FastAPI, limit_of: LimitOf, smallest: int) -> None:
    """Add the middleware (inside the app's other middleware, so CORS headers still apply), the
    handler that answers :class:`BodyTooLarge`, and one that ends a request whose client left while
    its body was read without logging it as a server error."""

    async def answer(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BodyTooLarge)
        return exc.response

    async def gone(request: Request, exc: Exception) -> Response:
        return Response(status_code=499)  # the client left while its body was read: nobody to answer

    app.add_exception_handler(BodyTooLarge, answer)
    app.add_exception_handler(ClientDisconnect, gone)
    app.add_middleware(BodyLimit, limit_of=limit_of, smallest=smallest)


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
