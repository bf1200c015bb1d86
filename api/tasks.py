"""Task plumbing shared by the API's long-lived connections."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any


async def first_failure(*coros: Coroutine[Any, Any, None]) -> None:
    """Run ``coros`` together until one of them ends; cancel the rest and re-raise its error."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
    for task in done:
        task.result()
