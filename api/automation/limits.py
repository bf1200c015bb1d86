"""The automation server's request body limits, as its router sets them (reference §1).

- Routes behind authentication (classes H and A) sit under tower-http's ``RequestBodyLimitLayer``
  of 10 MiB: a declared ``Content-Length`` over it is refused before the handler with
  ``length limit exceeded``; a body that grows past it while read fails the extractor.
- The webhooks set ``DefaultBodyLimit`` to 8 MiB, the extension upload to 512 MiB, the frontend
  component upload to 5 MiB; every other route keeps axum's default of 2 MiB. These limits act
  only while an extractor reads the body.
- Both answer 413 in axum's plain text; an extractor's is ``Failed to buffer the request body:
  length limit exceeded``.
"""

from __future__ import annotations

import re
from functools import cache

from starlette.responses import PlainTextResponse

from api.automation.catalogue import HYBRID, JWT_ONLY, WEBHOOK, vendor_routes
from api.body_limit import Limit, Refusal
from api.routing import specificity, to_fastapi

MiB = 1024 * 1024


def _refusal(text: str) -> Refusal:
    return lambda: PlainTextResponse(text, status_code=413)


EXTRACTOR_413 = "Failed to buffer the request body: length limit exceeded"
_EXTRACTOR = _refusal(EXTRACTOR_413)
LAYERED = Limit(10 * MiB, on_read=_EXTRACTOR, on_declared=_refusal("length limit exceeded"))
DEFAULT = Limit(2 * MiB, on_read=_EXTRACTOR)
BY_CLASS = {HYBRID: LAYERED, JWT_ONLY: LAYERED, WEBHOOK: Limit(8 * MiB, on_read=_EXTRACTOR)}
UPLOADS = {
    ("POST", "/api/extensions/upload/file"): Limit(512 * MiB, on_read=_EXTRACTOR),
    ("POST", "/api/frontend-components"): Limit(5 * MiB, on_read=_EXTRACTOR),
}
SMALLEST = DEFAULT.size


def limit_of(method: str, path: str) -> Limit:
    if (method, path) in UPLOADS:
        return UPLOADS[(method, path)]
    for methods, pattern, vendor_class in _patterns():
        if method in methods and pattern.fullmatch(path):
            return BY_CLASS.get(vendor_class, DEFAULT)
    return DEFAULT


@cache
def _patterns() -> list[tuple[tuple[str, ...], re.Pattern[str], str]]:
    """Every vendor route as a regular expression, in the router's matching order."""
    routes = sorted(vendor_routes(), key=lambda r: specificity(to_fastapi(r.path)))
    out = []
    for route in routes:
        parts = [
            ".*" if s.startswith("*") else "[^/]+" if s.startswith(":") else re.escape(s)
            for s in route.path.split("/")
        ]
        out.append((route.methods, re.compile("/".join(parts)), route.vendor_class))
    return out
