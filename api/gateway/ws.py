"""WebSocket plumbing shared by the gateway's socket routes: refusals before the upgrade, and a
session made of tasks that ends when the first of them does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from fastapi import WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect


async def deny(websocket: WebSocket, response: JSONResponse) -> None:
    """Refuse before the upgrade with the device's HTTP answer (the WebSocket denial response)."""
    try:
        await websocket.send_denial_response(response)
    except RuntimeError:  # no denial-response extension on this server
        await websocket.close(code=1008)


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
        with contextlib.suppress(RuntimeError):
            await websocket.close()
