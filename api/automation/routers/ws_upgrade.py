"""What the server's WebSocket routes answer a plain HTTP ``GET`` (no upgrade).

Their handlers take axum 0.7's ``WebSocketUpgrade`` extractor, which refuses such a request before
the handler's own authentication runs, in plain text: 400 for a missing ``Connection: upgrade``,
``Upgrade: websocket``, ``Sec-WebSocket-Version: 13`` or ``Sec-WebSocket-Key``, and 426 when all are
there but the connection cannot be upgraded (HTTP/1.0, or a server that does not upgrade it). The
rate limiter in front of these routes runs first (it skips paths containing ``/chat`` and ``/ws``).
Other methods get the 405 every route of the twin gives a method it does not serve (the server's
method router answers them 405 too, before the extractor).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from api.automation.deps import rate_limit

PATHS = ("/events/ws", "/chat", "/extensions/{id}/stream")
REFUSALS = (
    ("connection", lambda v: "upgrade" in v.lower(), "Connection header did not include 'upgrade'"),
    ("upgrade", lambda v: v.lower() == "websocket", "`Upgrade` header did not include 'websocket'"),
    ("sec-websocket-version", lambda v: v == "13", "`Sec-WebSocket-Version` header did not include '13'"),
    ("sec-websocket-key", lambda v: True, "`Sec-WebSocket-Key` header missing"),
)


async def not_upgraded(request: Request) -> Response:
    rate_limit(request)
    for header, accepted, refusal in REFUSALS:
        value = request.headers.get(header)
        if value is None or not accepted(value):
            return PlainTextResponse(refusal, status_code=400)
    return PlainTextResponse(
        "WebSocket request couldn't be upgraded since no upgrade state was present", status_code=426
    )


router = APIRouter(tags=["realtime"])
for _path in PATHS:
    router.add_api_route(_path, not_upgraded, methods=["GET"], include_in_schema=False)
