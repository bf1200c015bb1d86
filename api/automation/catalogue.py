"""The automation backend's route catalogue: every vendor route with its auth class, per release.

Release 0.9.17's classes are the ones read off the real server (``routes.tsv``). Release 0.9.24
makes public exactly the spec's list; every other HTTP route is protected.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from api.routing import shape_of

PUBLIC = "public"
HYBRID = "jwt-or-api-key"
JWT_ONLY = "jwt-only"
WEBHOOK = "webhook"
WS = "ws"
CLASSES = {"P": PUBLIC, "H": HYBRID, "A": JWT_ONLY, "W": WEBHOOK, "S": WS}

# The spec's public endpoints (release 0.9.24) as (method, path), plus its self-description, which
# a browser loads. ``*`` as a method means any.
SPEC_PUBLIC = (
    ("GET", "/api/health"), ("GET", "/api/health/status"), ("GET", "/api/health/live"),
    ("GET", "/api/health/ready"), ("GET", "/api/metrics"), ("GET", "/api/system/network-info"),
    ("GET", "/api/auth/status"), ("GET", "/api/auth/verify"), ("POST", "/api/auth/login"),
    ("POST", "/api/auth/register"), ("*", "/api/setup/*"), ("GET", "/api/llm-backends/types"),
    ("GET", "/api/messages/channels/types"), ("GET", "/api/extensions"), ("GET", "/api/capabilities"),
    ("GET", "/api/capabilities/:name"), ("GET", "/api/tools"), ("POST", "/api/devices/:id/webhook"),
    ("GET", "/api/share/:token"), ("GET", "/api/docs/*"),
)  # fmt: skip
HTTP_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


@dataclass(frozen=True, slots=True)
class VendorRoute:
    method: str
    """An HTTP method, or ``ANY``."""
    path: str
    """Vendor syntax: ``/api/devices/:id``, wildcards ``*path``."""
    vendor_class: str
    """The auth class on the real server (release 0.9.17)."""

    @property
    def methods(self) -> tuple[str, ...]:
        return HTTP_METHODS if self.method == "ANY" else (self.method,)

    @property
    def is_wildcard(self) -> bool:
        return "*" in self.path

    def auth(self, release: str) -> str:
        if release == "0.9.17" or self.vendor_class in (WEBHOOK, WS, JWT_ONLY):
            return self.vendor_class
        return PUBLIC if is_spec_public(self.method, self.path) else HYBRID


def is_spec_public(method: str, path: str) -> bool:
    shape = shape_of(path)
    for public_method, public in SPEC_PUBLIC:
        if public_method not in ("*", method):
            continue
        if (public.endswith("/*") and path.startswith(public[:-1])) or shape == shape_of(public):
            return True
    return False


@cache
def vendor_routes() -> tuple[VendorRoute, ...]:
    text = resources.files("api.automation").joinpath("routes.tsv").read_text()
    routes = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            cls, method, path = line.split("\t")
            routes.append(VendorRoute(method, path, CLASSES[cls]))
    return tuple(routes)
