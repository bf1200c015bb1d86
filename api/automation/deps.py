"""Dependency providers: a route's signature reads as its dependency list."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import Unauthenticated
from hardware.ports.types import User


async def get_backend(request: Request) -> AutomationBackend:
    return request.app.state.backend


async def get_version(request: Request) -> str:
    return request.app.state.version


async def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def current_user(request: Request, backend: Annotated[AutomationBackend, Depends(get_backend)]) -> User:
    """JWT-or-API-key ("hybrid") authentication; API keys arrive with the auth issue."""
    token = await bearer_token(request)
    if token is None:
        raise Unauthenticated("Authentication required. Provide a valid JWT token or API key.")
    return backend.authenticate(token)


Backend = Annotated[AutomationBackend, Depends(get_backend)]
Version = Annotated[str, Depends(get_version)]
CurrentUser = Annotated[User, Depends(current_user)]
Token = Annotated[str | None, Depends(bearer_token)]
