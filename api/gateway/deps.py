"""Dependency providers and the device's token check."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from hardware.ports.errors import Unauthenticated
from hardware.ports.gateway import GatewayBackend


async def get_backend(request: Request) -> GatewayBackend:
    return request.app.state.backend


def request_token(request: HTTPConnection) -> str:
    """Where the device reads a token: the Authorization header (with or without ``Bearer``) and,
    only when that header is absent, ``?token=`` then ``X-API-Key``."""
    header = request.headers.get("authorization")
    if header is not None:
        return header.removeprefix("Bearer ").strip()
    token = request.query_params.get("token") or request.headers.get("x-api-key") or ""
    return token.removeprefix("Bearer ").strip()


async def require_session(request: Request, backend: Annotated[GatewayBackend, Depends(get_backend)]) -> str:
    token = request_token(request)
    if not token:
        raise Unauthenticated("Invalid or missing authentication token")
    return backend.auth.check_token(token)


Backend = Annotated[GatewayBackend, Depends(get_backend)]
Username = Annotated[str, Depends(require_session)]
