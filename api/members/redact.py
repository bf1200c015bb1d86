"""What a recording leaves out: the secrets of a field session. Logins, sessions and keys are not
recorded at all (:data:`OWN_PREFIXES`; the replay answers them itself); every credential a request
carries is learnt (:func:`credentials_in`, :func:`secrets_in`) and masked wherever it appears in
what is recorded, with the string values of keys and URL query parameters named like token,
password, secret or API key and anything shaped like a JWT or an automation API key (:func:`mask`,
:func:`mask_bytes`). Of an answer's headers only :data:`KEPT_HEADERS` are recorded (no cookie)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.types import Scope

MASK = "***"

KEPT_HEADERS = frozenset(
    {
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-expose-headers",
        "content-type",
        "content-encoding",
        "content-disposition",
        "content-language",
        "cache-control",
        "etag",
        "last-modified",
        "location",
        "retry-after",
        "vary",
        "www-authenticate",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    }
)
"""The answer's headers a fixture keeps; the length is the body's, dates and cookies are not kept."""

OWN_PREFIXES = {
    "gateway": ("/api/login", "/api/v1/logout", "/api/v1/auth/", "/api/v1/system/password"),
    "automation": ("/api/auth/", "/api/setup/"),
}
"""Logins, sessions and keys: never recorded; on replay the twin's own app answers them."""

_SECRET_VALUE = re.compile(
    r'("[A-Za-z0-9_\-]*(?:password|passwd|token|secret|api_?key|apikey)[A-Za-z0-9_\-]*"\s*:\s*")'
    r'((?:[^"\\]|\\.)+)(")',
    re.IGNORECASE,
)
_SECRET_PARAM = re.compile(r"([?&][A-Za-z0-9_\-]*(?:token|key|password|passwd|secret)=)([^&#\"'\s<]+)", re.I)
"""A credential in a URL's query, a parameter whose name ends like one (a webhook URL's token)."""
_SECRET_LIKE = re.compile(r"eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]{8,}|nmk_[0-9A-Za-z]{8,}")
"""A JWT or an automation API key, wherever it appears."""
MIN_SECRET = 6
"""Credentials shorter than this are not searched for in answers (they would mask ordinary text)."""


def is_own(vendor: str, path: str) -> bool:
    """Whether ``path`` is a login, session or key route of ``vendor`` (see :data:`OWN_PREFIXES`)."""
    return any(path == p or path.startswith(p) for p in OWN_PREFIXES[vendor])


def credentials_in(scope: Scope) -> list[str]:
    """The credentials a request carries: its Authorization and X-API-Key headers, and the values
    of query parameters named like token, key, password or secret."""
    headers = Headers(scope=scope)
    found = [headers.get("authorization", ""), headers.get("x-api-key", "")]
    for part in scope.get("query_string", b"").decode("latin-1").split("&"):
        name, _, value = part.partition("=")
        if any(word in name.lower() for word in ("token", "key", "password", "secret")):
            found.append(value)
    return [value for value in found if value]


def secrets_in(text: str) -> set[str]:
    """The secret values a text holds: values of secret-named keys, JWTs and API keys."""
    found = {m.group(2) for m in _SECRET_VALUE.finditer(text)}
    found.update(m.group(2) for m in _SECRET_PARAM.finditer(text))
    found.update(m.group(0) for m in _SECRET_LIKE.finditer(text))
    return {s.removeprefix("Bearer ").strip() for s in found if len(s) >= MIN_SECRET}


def mask(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with secret-named values and query parameters, JWTs, API keys and every ``known``
    secret masked."""
    text = _SECRET_VALUE.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _SECRET_PARAM.sub(lambda m: m.group(1) + MASK, text)
    text = _SECRET_LIKE.sub(MASK, text)
    for secret in sorted(known, key=len, reverse=True):
        if len(secret) >= MIN_SECRET:
            text = text.replace(secret, MASK)
    return text


def mask_bytes(data: bytes, known: Iterable[str] = ()) -> bytes:
    """Binary data with every ``known`` secret and JWT or API key masked (lengths may change)."""
    data = re.sub(_SECRET_LIKE.pattern.encode(), MASK.encode(), data)
    for secret in sorted(known, key=len, reverse=True):
        if len(secret) >= MIN_SECRET:
            data = data.replace(secret.encode(), MASK.encode())
    return data
