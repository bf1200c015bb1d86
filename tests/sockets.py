"""Helpers for tests that start the whole twin on real loopback sockets."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn

from tests.conftest import SCENARIOS
from twin.settings import LOOPBACK, Settings


def socket_settings(**overrides) -> Settings:
    """The test scenario in step mode, every server on a free loopback port."""
    return Settings(**{"scenario": SCENARIOS / "test.yaml", "step": True, **LOOPBACK, **overrides})


UNTIL_S = 60.0
"""Wall seconds :func:`until` waits before it fails: a bound for a hung test, never a pace it expects
(a loaded CI machine runs background work many times slower than an idle one)."""


async def until(check: Callable, attempts: int | None = None, *, timeout: float = UNTIL_S) -> None:
    """Poll ``check`` (plain or async) every 20 ms until it is true; fail after ``timeout`` wall
    seconds, and not before ``attempts`` polls were made."""
    deadline = time.monotonic() + timeout
    polls = 0
    while True:
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        polls += 1
        if time.monotonic() > deadline and polls >= (attempts or 0):
            raise AssertionError(f"condition not reached in {polls} polls and {timeout:g} s")
        await asyncio.sleep(0.02)


async def mqtt_packet(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One MQTT control packet off ``reader``: its type (the fixed header's high nibble) and its body."""
    header = (await reader.readexactly(1))[0]
    length, shift = 0, 0
    while True:
        byte = (await reader.readexactly(1))[0]
        length, shift = length | (byte & 0x7F) << shift, shift + 7
        if not byte & 0x80:
            break
    return header >> 4, await reader.readexactly(length)


@contextlib.asynccontextmanager
async def serving_app(app: Any, **config: Any) -> AsyncIterator[str]:
    """An ASGI app alone on a free loopback port (uvicorn, no lifespan, ``config`` on top); yields
    its base URL and stops the server on the way out."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", **config))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "server failed to start"
        await asyncio.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()
