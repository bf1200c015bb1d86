"""Helpers for tests that start the whole twin on real loopback sockets."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable

from tests.conftest import SCENARIOS
from twin.settings import LOOPBACK, Settings


def socket_settings(**overrides) -> Settings:
    """The test scenario in step mode, every server on a free loopback port."""
    return Settings(**{"scenario": SCENARIOS / "test.yaml", "step": True, **LOOPBACK, **overrides})


async def until(check: Callable, attempts: int = 250) -> None:
    """Poll ``check`` (plain or async) every 20 ms until it is true; fail after ``attempts``."""
    for _ in range(attempts):
        result = check()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")
