"""uvicorn's sans-I/O WebSocket protocol answers an upgrade an app refuses with an HTTP response
(the auth middleware's 401, a handler's 404) correctly, then logs ``ASGI callable returned without
completing handshake.`` as an error, since no handshake completed. On the twin that line would
stand in the log for every client refused as the device refuses it.

:func:`tracking_denials` marks, in the connection's own context, that the app sent a denial
response; :class:`DenialFilter` drops that one log line for such a connection only, so an app that
really returns without answering an upgrade is still logged."""

from __future__ import annotations

import contextvars
import logging

from starlette.types import ASGIApp, Message, Receive, Scope, Send

UVICORN_LINE = "ASGI callable returned without completing handshake."
_denied: contextvars.ContextVar[bool] = contextvars.ContextVar("ws_denied", default=False)


def tracking_denials(app: ASGIApp) -> ASGIApp:
    """``app``, noting in the running task's context when it refuses an upgrade with a response.
    uvicorn awaits the app in the same task that logs afterwards, so the note is seen there."""
    install()

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await app(scope, receive, send)
            return

        async def noting(message: Message) -> None:
            if message["type"] == "websocket.http.response.start":
                _denied.set(True)
            await send(message)

        await app(scope, receive, noting)

    return wrapped


class DenialFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_denied.get() and record.getMessage() == UVICORN_LINE)


def install() -> None:
    """Put the filter on uvicorn's error logger once."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, DenialFilter) for f in logger.filters):
        logger.addFilter(DenialFilter())
