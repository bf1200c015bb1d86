"""What the server's WebSocket routes answer a plain HTTP request (no upgrade).

Their handlers take axum 0.7's ``WebSocketUpgrade`` extractor, which refuses such a request before
the handler's own authentication runs, in plain text: 405 "Request method must be `GET`" (HEAD),
400 for a missing ``Connection: upgrade``, ``Upgrade: websocket``, ``Sec-WebSocket-Version: 13`` or
``Sec-WebSocket-Key``, and 426 when all are there but the connection cannot be upgraded (HTTP/1.0,
or a server that does not upgrade it). Other methods never reach the extractor: the routes are
``get(...)``, and axum's method router answers an empty 405 with ``Allow: GET,HEAD``. The rate
limiter in front of these routes runs first (it skips paths containing ``/chat`` and ``/ws``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from api.automation.deps import rate_limit

PATHS = ("/events/ws", "/chat", "/extensions/{id}/stream")
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
ALLOW = "GET,HEAD"
REFUSALS = (
    ("connection", lambda v: "upgrade" in v.lower(), "Connection header did not include 'upgrade'"),
    ("upgrade", lambda v: v.lower() == "websocket", "`Upgrade` header did not include 'websocket'"),
    ("sec-websocket-version", lambda v: v == "13", "`Sec-WebSocket-Version` header did not include '13'"),
    ("sec-websocket-key", lambda v: True, "`Sec-WebSocket-Key` header missing"),
)


async def not_upgraded(request: Request) -> Response:
    rate_limit(request)
    if request.method not in ("GET", "HEAD"):
        return Response(status_code=405, headers={"Allow": ALLOW})
    if request.method != "GET":
        return PlainTextResponse("Request method must be `GET`", status_code=405)
    for header, accepted, refusal in REFUSALS:
        value = request.headers.get(header)
        if value is None or not accepted(value):
            return PlainTextResponse(refusal, status_code=400)
    return PlainTextResponse(
        "WebSocket request couldn't be upgraded since no upgrade state was present", status_code=426
    )


router = APIRouter(tags=["realtime"])
for _path in PATHS:
    router.add_api_route(_path, not_upgraded, methods=METHODS, include_in_schema=False)
