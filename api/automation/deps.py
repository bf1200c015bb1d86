"""Dependency providers: a route's signature reads as its dependency list.

``current_user`` is the hybrid (JWT-or-API-key) check of every protected route: JWT first, then an
API key (``X-API-Key``, or ``Bearer nmk_…``), then the key's scope, then the rate limiter, so an
unauthenticated caller gets 401, never 429. ``admin_user`` is the JWT-only check. :func:`catalogued`
puts a router's routes behind the check their catalogued class calls for; :func:`catalogued_router`
builds such a router from a list of routes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute

from api.automation.catalogue import HYBRID, JWT_ONLY, vendor_routes
from api.automation.ratelimit import RateLimiter, client_key, limited_path
from api.routing import shape_of
from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import Forbidden, RateLimited, Unauthenticated
from hardware.ports.types import Principal

API_KEY_PREFIX = "nmk_"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_backend(request: Request) -> AutomationBackend:
    return request.app.state.backend


async def get_version(request: Request) -> str:
    return request.app.state.release  # the release is the version the server reports


async def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def permission_area(path: str) -> str:
    """``/api/devices/d1/telemetry`` → ``devices``."""
    parts = path.split("/")
    return parts[2] if len(parts) > 2 else ""


async def authenticate(request: Request, backend: AutomationBackend) -> Principal:
    token = await bearer_token(request)
    if token and not token.startswith(API_KEY_PREFIX):
        return Principal("jwt", user=backend.users.authenticate(token))
    key = request.headers.get("x-api-key") or token
    if not key:
        raise Unauthenticated("Authentication required. Provide a valid JWT token or API key.")
    api_key = backend.api_keys.authenticate(key)
    area, write = permission_area(request.scope["path"]), request.method not in READ_METHODS
    if not api_key.allows(area, write):
        raise Forbidden(f"API key lacks permission '{area}:{'write' if write else 'read'}'")
    return Principal("api_key", key=api_key)


def rate_limit(request: Request, suffix: str = "") -> None:
    """Count the request against the shared limiter; ``RateLimited`` past the limit. ``suffix``
    narrows the key: the webhooks pass ``":" + device_id`` (one window per client and device)."""
    limiter: RateLimiter | None = request.app.state.limiter
    if limiter is not None and limited_path(request.scope["path"]):
        retry_after = limiter.hit(client_key(request) + suffix)
        if retry_after is not None:
            raise RateLimited("Rate limit exceeded", retry_after=retry_after)


async def current_user(
    request: Request, backend: Annotated[AutomationBackend, Depends(get_backend)]
) -> Principal:
    principal = await authenticate(request, backend)
    rate_limit(request)
    return principal


async def admin_user(
    request: Request, backend: Annotated[AutomationBackend, Depends(get_backend)]
) -> Principal:
    """JWT only, and an administrator's: API keys are refused with 403. Release 0.9.17 reads
    nothing but ``Authorization: Bearer <JWT>``, so there a key is only a missing or invalid JWT."""
    legacy, header = request.app.state.release == "0.9.17", request.headers.get("authorization")
    if legacy and header is not None and not header.startswith("Bearer "):
        raise Unauthenticated("Invalid Authorization format")
    token = header.removeprefix("Bearer ") if legacy and header else await bearer_token(request)
    if not legacy and (request.headers.get("x-api-key") or (token and token.startswith(API_KEY_PREFIX))):
        raise Forbidden("API keys are not accepted on this endpoint; log in as an administrator")
    if token is None:
        raise Unauthenticated("Missing Authorization header")
    principal = Principal("jwt", user=backend.users.authenticate(token))
    if not principal.is_admin:
        raise Forbidden("Admin access required", admin_required=True)
    rate_limit(request)
    return principal


AUTH_CHECKS = {HYBRID: [Depends(current_user)], JWT_ONLY: [Depends(admin_user)]}
"""The dependencies each auth class calls for (none: public, webhook and WebSocket routes check
their own way)."""

Route = tuple[str, str, Callable[..., Any]]
"""(method, FastAPI path without the ``/api`` prefix, endpoint)."""


def catalogued(router: APIRouter) -> APIRouter:
    """``router`` with each of its routes behind the check of its class in the route catalogue (the
    real router's), so no route hard-codes its authentication; a route the catalogue lacks is
    protected. Call it once every route is added."""
    classes = {(r.method, shape_of(r.path)): r.vendor_class for r in vendor_routes()}
    for route in router.routes:
        if isinstance(route, APIRoute):
            shape = shape_of("/api" + route.path)
            method = min(route.methods or ())
            auth = classes.get((method, shape), classes.get(("ANY", shape), HYBRID))
            route.dependencies = [*route.dependencies, *AUTH_CHECKS.get(auth, [])]
    return router


def catalogued_router(routes: Iterable[Route], tag: str) -> APIRouter:
    """A router of ``routes``, each behind the check of its catalogued class (:func:`catalogued`)."""
    router = APIRouter(tags=[tag])
    for method, path, endpoint in routes:
        router.add_api_route(path, endpoint, methods=[method])
    return catalogued(router)


def rate_limit_device(request: Request, device_id: str) -> None:
    """The webhooks' limiter check, keyed by client + ``:`` + device id (reference §3)."""
    rate_limit(request, ":" + device_id)


Backend = Annotated[AutomationBackend, Depends(get_backend)]
Version = Annotated[str, Depends(get_version)]
CurrentUser = Annotated[Principal, Depends(current_user)]
AdminUser = Annotated[Principal, Depends(admin_user)]
Token = Annotated[str | None, Depends(bearer_token)]
