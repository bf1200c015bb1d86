"""The control plane obeys only its user: one ASGI layer in front of the whole control app.

- **Host**: every request (and WebSocket) must name the control plane by an address it serves:
  ``localhost``, a loopback address, the local address the connection arrived on, or a name given
  at start (the bind host, this machine's name). A page on a foreign name that resolves here (DNS
  rebinding) gets ``403``.
- **Cross-site**: a state-changing request (``POST``, ``PUT``, ``PATCH``, ``DELETE``, and every
  WebSocket) whose ``Origin`` (else ``Referer``) is another origin than the ``Host`` it was sent
  to, or ``null``, gets ``403``. Clients that send neither (curl, scripts) are not browsers.
- **JSON only**: a state-changing request with a body must say ``Content-Type: application/json``
  (or ``…+json``); ``text/plain`` and form types, which a page may send anywhere, get ``415``.
- **Token**, when the control plane is bound beyond loopback: every route but ``/health`` needs
  ``Authorization: Bearer <token>``, or the ``twin-token`` cookie the console gets by opening
  ``/?token=<token>`` once (``SameSite=Strict``, ``HttpOnly``); else ``401``.

Refusals are the control plane's own errors: ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Iterable
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import orjson
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hardware.ports.errors import ErrorCode

SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
COOKIE = "twin-token"
TOKEN_FILE = "control-token"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str) -> bool:
    """Whether a bind address or a name reaches only this machine."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def control_token(state_dir: Path | None) -> str:
    """The token of a control plane bound beyond loopback: the one in ``STATE_DIR/control-token``
    if there is one, else a new one (written there, readable by its owner only)."""
    path = state_dir / TOKEN_FILE if state_dir is not None else None
    if path is not None and path.is_file():
        stored = path.read_text().strip()
        if stored:
            return stored
    token = secrets.token_urlsafe(32)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(token + "\n")
    return token


def guarded(
    app: ASGIApp, host: str, state_dir: Path | None, public_host: str | None
) -> tuple[ControlGuard, str | None]:
    """The control app behind its guard for a control plane bound on ``host``, and its token
    (``None`` on loopback)."""
    token = None if is_loopback(host) else control_token(state_dir)
    return ControlGuard(app, token=token, names=(host, socket.gethostname(), public_host or "")), token


def _hostname(netloc: str) -> str:
    """``host`` of ``host:port`` / ``[v6]:port``, lower case."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0] if netloc.count(":") == 1 else netloc


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class ControlGuard:
    """The ASGI layer itself; ``token`` is ``None`` on loopback, ``names`` the extra host names."""

    def __init__(self, app: ASGIApp, *, token: str | None = None, names: Iterable[str] = ()) -> None:
        self.app = app
        self.token = token
        self.names = frozenset(n.strip("[]").lower() for n in names if n and n not in ("0.0.0.0", "::"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self.refusal(scope, headers)
        if refusal is not None:
            await _refuse(scope, send, *refusal)
            return
        cookie = self._cookie_to_set(scope, headers)
        if cookie is None:
            await self.app(scope, receive, send)
            return

        async def setting_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
            await send(message)

        await self.app(scope, receive, setting_cookie)

    def refusal(self, scope: Scope, headers: Headers) -> tuple[int, ErrorCode, str] | None:
        host = headers.get("host", "")
        if not self._served(scope, _hostname(host)):
            return 403, ErrorCode.FORBIDDEN, f"Host {host!r} is not an address of this control plane"
        if self.token is not None and scope["path"] != "/health" and not self._authorized(scope, headers):
            return (
                401,
                ErrorCode.UNAUTHENTICATED,
                "this control plane needs its token (Authorization: Bearer)",
            )
        unsafe = scope["type"] == "websocket" or scope["method"] not in SAFE
        if not unsafe:
            return None
        source = headers.get("origin") or headers.get("referer")
        if source is not None and (source == "null" or urlsplit(source).netloc.lower() != host.lower()):
            return 403, ErrorCode.FORBIDDEN, f"cross-site request from {source!r} refused"
        if scope["type"] == "http":
            content_type = headers.get("content-type")
            has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
            if (content_type is not None or has_body) and not _is_json(content_type or ""):
                return (
                    415,
                    ErrorCode.INVALID_INPUT,
                    "a request that changes state takes Content-Type: application/json",
                )
        return None

    def _served(self, scope: Scope, name: str) -> bool:
        if not name:
            return False
        local = scope.get("server")
        return (
            is_loopback(name) or name in self.names or (local is not None and name == str(local[0]).lower())
        )

    def _authorized(self, scope: Scope, headers: Headers) -> bool:
        assert self.token is not None
        given = ""
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            given = value.strip()
        if not given:
            cookie = SimpleCookie(headers.get("cookie", ""))
            given = cookie[COOKIE].value if COOKIE in cookie else ""
        if not given and scope["type"] == "http" and scope["method"] in SAFE:
            given = self._query_token(scope)
        return hmac.compare_digest(given.encode(), self.token.encode())

    @staticmethod
    def _query_token(scope: Scope) -> str:
        values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        return values[0] if values else ""

    def _cookie_to_set(self, scope: Scope, headers: Headers) -> bytes | None:
        """The console opened with ``?token=``: the cookie its later requests carry."""
        if self.token is None or scope["type"] != "http" or not self._query_token(scope):
            return None
        return f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()


async def _refuse(scope: Scope, send: Send, status: int, code: ErrorCode, message: str) -> None:
    body = orjson.dumps({"error": {"code": code.value, "message": message}})
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    prefix = "websocket.http." if scope["type"] == "websocket" else "http."
    await send({"type": prefix + "response.start", "status": status, "headers": headers})
    await send({"type": prefix + "response.body", "body": body})
