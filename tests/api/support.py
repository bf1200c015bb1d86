"""Helpers shared by the automation API tests: the two error shapes its handlers answer (the success
envelope's ``error`` and the bare ``{"error": ...}``), and a request awaited on the world clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import httpx

from twin.serve import Twin


def assert_error(resp: httpx.Response, status: int, code: str, message: str | None = None) -> None:
    """An enveloped failure: ``{"success": false, "error": {"code", "message"}}``."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["success"] is False and body["error"]["code"] == code, body
    if message is not None:
        assert body["error"]["message"] == message


def assert_raw(resp: httpx.Response, status: int, error: str) -> None:
    """A bare failure: ``{"error": ...}`` and nothing else."""
    assert resp.status_code == status, resp.text
    assert resp.json() == {"error": error}


async def on_the_clock(twin: Twin, request: Awaitable[httpx.Response], step: float = 0.25) -> httpx.Response:
    """Await ``request``, moving world time on whenever it waits for the world."""
    task = asyncio.ensure_future(request)
    for _ in range(20_000):
        if task.done():
            break
        if twin.clock.waiting:
            twin.clock.advance(step)
        await asyncio.sleep(0)
    return await task


def data(resp: httpx.Response) -> Any:
    """A success's ``data`` (200 asserted)."""
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]
