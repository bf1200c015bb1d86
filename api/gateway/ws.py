"""WebSocket plumbing shared by the gateway's socket routes: refusals before the upgrade, and a
session made of tasks that ends when the first of them does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.websockets import WebSocketDisconnect

from api.gateway import errors
from api.gateway.deps import request_token, require_session
from hardware.ports.errors import DomainError, Unauthenticated
from hardware.ports.gateway import GatewayBackend


async def deny(websocket: WebSocket, response: JSONResponse) -> None:
    """Refuse before the upgrade with the device's HTTP answer (the WebSocket denial response)."""
    try:
        await websocket.send_denial_response(response)
    except RuntimeError:  # no denial-response extension on this server
        await websocket.close(code=1008)


async def ws_backend(websocket: WebSocket) -> GatewayBackend | None:
    """The device's token check before the upgrade (header or ``?token=``): the backend, or None
    after refusing with 401/2000 as an HTTP denial."""
    backend: GatewayBackend = websocket.app.state.backend
    try:
        token = request_token(websocket)
        if not token:
            raise Unauthenticated("Invalid or missing authentication token")
        backend.auth.check_token(token)
    except DomainError:
        await deny(websocket, errors.unauthorized())
        return None
    return backend


def not_upgraded() -> Response:
    """gorilla/websocket's refusal of a request that is not an upgrade (``returnError``)."""
    headers = {"Sec-Websocket-Version": "13", "X-Content-Type-Options": "nosniff"}
    return PlainTextResponse("Bad Request\n", status_code=400, headers=headers)


PreCheck = Callable[[Request, GatewayBackend], Response | None]


def plain_get(router: APIRouter, path: str, precheck: PreCheck | None = None) -> None:
    """Serve a plain HTTP ``GET`` (no upgrade) on a WebSocket route as the device does: its auth
    middleware first (401, not the 404 of an unknown route), then the handler's own checks before
    it upgrades (``precheck``: an answer, or None to go on), then gorilla's 400."""

    async def refuse(request: Request, _: str = Depends(require_session)) -> Response:
        refusal = precheck(request, request.app.state.backend) if precheck else None
        return refusal or not_upgraded()

    router.add_api_route(path, refuse, methods=["GET"], include_in_schema=False)


async def drain(websocket: WebSocket) -> None:
    """Read and ignore the client's messages until it disconnects."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass


async def until_first_ends(websocket: WebSocket, *jobs: Coroutine[Any, Any, None]) -> None:
    """Run ``jobs`` until the first one ends (the client left, the feed ended, the device went
    down), cancel the others and close the socket if it is still open."""
    tasks = [asyncio.create_task(job) for job in jobs]
    try:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):  # the client may be gone
            await websocket.close()
