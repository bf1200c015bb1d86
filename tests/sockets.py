"""Helpers for tests that start the whole twin on real loopback sockets."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable

from tests.conftest import SCENARIOS
from twin.settings import Settings


def socket_settings(**overrides) -> Settings:
    """The test scenario in step mode, every server on a free loopback port."""
    base = {
        "scenario": SCENARIOS / "test.yaml",
        "step": True,
        "host": "127.0.0.1",
        "port": 0,
        "control_port": 0,
        "mqtt_host": "127.0.0.1",
        "mqtt_port": 0,
        "gateway_addressing": "port",
        "gateway_http_port": 0,
        "gateway_https_port": 0,
    }
    base.update(overrides)
    return Settings(**base)


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
