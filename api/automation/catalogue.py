"""The automation backend's route catalogue: every vendor route with its auth class, per release.

The real server's router decides every route's class, in both releases: ``routes.tsv`` is that
router's table (class P/H/A/W/S per method and path). The spec's list of public endpoints names
examples and does not protect the other routes. The few routes only release 0.9.24 has (added by
the spec, absent from the real router: ``/api/metrics`` and the self-description under
``/api/docs``) close the table with the class the spec gives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

PUBLIC = "public"
HYBRID = "jwt-or-api-key"
JWT_ONLY = "jwt-only"
WEBHOOK = "webhook"
WS = "ws"
CLASSES = {"P": PUBLIC, "H": HYBRID, "A": JWT_ONLY, "W": WEBHOOK, "S": WS}

HTTP_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


@dataclass(frozen=True, slots=True)
class VendorRoute:
    method: str
    """An HTTP method, or ``ANY``."""
    path: str
    """Vendor syntax: ``/api/devices/:id``, wildcards ``*path``."""
    vendor_class: str
    """The auth class on the real server (the spec's, for a route only 0.9.24 has)."""

    @property
    def methods(self) -> tuple[str, ...]:
        return HTTP_METHODS if self.method == "ANY" else (self.method,)

    @property
    def is_wildcard(self) -> bool:
        return "*" in self.path


@cache
def vendor_routes() -> tuple[VendorRoute, ...]:
    text = resources.files("api.automation").joinpath("routes.tsv").read_text()
    routes = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            cls, method, path = line.split("\t")
            routes.append(VendorRoute(method, path, CLASSES[cls]))
    return tuple(routes)
