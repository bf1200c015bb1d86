"""What the twin decides in front of a real member before a request reaches it: API-layer faults
that a passthrough cannot leave to the real thing, answered in that vendor's own error shape.

- **Token expiry**: every token seen so far is refused from now on with the vendor's 401, as if
  the real server had ended its sessions; a client that logs in again gets a fresh token, which
  passes. (A token issued before the expiry but first presented after it is not known, so it passes.)
- **Rate-limit storm** (automation server): while the control plane lowers the limiter, requests
  that carry credentials on limited paths are counted on the twin's limiter, keyed like the real
  server's; past the lowered limit they get its 429 with ``Retry-After``. Outside a storm nothing
  is counted: the real server applies its own limit. Requests without credentials are never
  refused here (the real server answers those 401, never 429).

Tokens are kept as short hashes only.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import Scope

from api.automation import errors as automation_errors
from api.automation.deps import API_KEY_PREFIX
from api.automation.ratelimit import RateLimiter, client_key, limited_path
from api.gateway import errors as gateway_errors
from api.gateway.deps import request_token
from hardware.ports.errors import DomainError, RateLimited, Unauthenticated

MAX_TOKENS = 10_000
"""Token hashes kept, seen and expired each; past it the oldest are forgotten."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:24]


class _Bounded(OrderedDict):
    def add(self, key: str) -> None:
        self[key] = None
        self.move_to_end(key)
        if len(self) > MAX_TOKENS:
            self.popitem(last=False)


class Gate:
    """Token expiry for any vendor; subclasses say where the token is and what a 401 looks like."""

    probe_path = "/"
    """What the twin GETs at start to see the real member answer."""
    keyed_probe_path = "/"
    """The same with the twin's own API key (a route that checks it)."""

    def __init__(self) -> None:
        self._seen = _Bounded()
        self._expired = _Bounded()

    def token(self, scope: Scope) -> str | None:
        raise NotImplementedError

    def unauthorized(self) -> Response:
        raise NotImplementedError

    def expire_tokens(self) -> int:
        """End every session a client was seen using; the number of tokens now refused."""
        for digest in self._seen:
            self._expired.add(digest)
        self._seen.clear()
        return len(self._expired)

    def check(self, scope: Scope) -> Response | None:
        """The answer the twin gives instead of the real member, or ``None`` to pass through."""
        token = self.token(scope)
        if token:
            digest = _digest(token)
            if digest in self._expired:
                return self.unauthorized()
            self._seen.add(digest)
        return None


class GatewayGate(Gate):
    """The edge gateway: the token where the device reads one (:func:`api.gateway.deps.request_token`)."""

    probe_path = keyed_probe_path = "/api/v1/auth/public-key"

    def token(self, scope: Scope) -> str | None:
        return request_token(HTTPConnection(scope)) or None

    def unauthorized(self) -> Response:
        return gateway_errors.unauthorized()


class AutomationGate(Gate):
    """The automation server: JWT sessions expire (API keys do not); the limiter's storms apply."""

    probe_path = "/api/health"
    keyed_probe_path = "/api/devices"

    def __init__(self, limiter: RateLimiter | None, release: str) -> None:
        super().__init__()
        self.limiter = limiter
        self.release = release

    def token(self, scope: Scope) -> str | None:
        scheme, _, value = HTTPConnection(scope).headers.get("authorization", "").partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value or value.startswith(API_KEY_PREFIX):
            return None
        return value

    def unauthorized(self) -> Response:
        return self._answer(Unauthenticated("Session has been revoked"))

    def _answer(self, exc: DomainError, headers: dict[str, str] | None = None) -> Response:
        """The server's answer to ``exc``, through its own error table (either release's shape)."""
        status, code = automation_errors.lookup(exc)
        if self.release == "0.9.17":
            legacy = automation_errors.legacy_response(exc, status, headers)
            if legacy is not None:
                return legacy
        return automation_errors.error_response(status, code, exc.message, headers)

    def check(self, scope: Scope) -> Response | None:
        denied = super().check(scope)
        if denied is not None:
            return denied
        limiter = self.limiter
        if limiter is None or limiter.storm_until() is None or not limited_path(scope["path"]):
            return None
        request = HTTPConnection(scope)
        if not (request.headers.get("authorization") or request.headers.get("x-api-key")):
            return None
        retry_after = limiter.hit(client_key(request))
        if retry_after is None:
            return None
        exc = RateLimited("Rate limit exceeded", retry_after=retry_after)
        return self._answer(exc, {"Retry-After": str(retry_after)})
