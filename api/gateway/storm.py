"""A rate-limit storm on a camera's gateway. The device has no rate limit of its own; while the
control plane or a scenario lowers the camera's limiter (``rate_limit_storm``), each client's
requests are counted on the world clock and, past the lowered limit, answered with the device's
own 429 (code 4002) and ``Retry-After``. Outside a storm nothing is counted. The same middleware
sits in front of a simulated camera and a real one, so a storm reads alike on both in the journal
(marked as the fault it is)."""

from __future__ import annotations

import hashlib

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from api.automation.ratelimit import RateLimiter
from api.faults import FAULT_KEY
from api.gateway.deps import request_token
from api.gateway.errors import fail

STORM_FAULT = "rate_limited"
RATE_LIMITED_CODE = 4002


def _client(scope: Scope) -> str:
    """A client is its token where the device reads one (hashed), else its address."""
    connection = HTTPConnection(scope)
    token = request_token(connection)
    if token:
        return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]
    return "ip:" + (connection.client.host if connection.client else "-")


class StormMiddleware:
    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limiter = self.limiter
        if scope["type"] != "http" or limiter.storm_until() is None:
            await self.app(scope, receive, send)
            return
        retry_after = limiter.hit(_client(scope))
        if retry_after is None:
            await self.app(scope, receive, send)
            return
        scope[FAULT_KEY] = STORM_FAULT
        response = fail(RATE_LIMITED_CODE, "Rate limit exceeded", headers={"Retry-After": str(retry_after)})
        await response(scope, receive, send)
