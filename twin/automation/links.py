"""The server's lasting outside connections, kept up by one asyncio task the composition root starts:
the sessions with external MQTT brokers and the IM bridges' pollers. When the server starts (and
whenever the world is rebuilt) the enabled brokers are reconnected and the kept bridges polled again;
the previous world's are closed; all of them are closed when the task is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from twin.automation.brokers import ExternalBrokerRegistry
    from twin.automation.im_router import ImRouter

log = logging.getLogger(__name__)

POLL_S = 1.0


class HasBrokers(Protocol):
    @property
    def brokers(self) -> ExternalBrokerRegistry: ...


async def run_links(world: Callable[[], HasBrokers], im_router: Callable[[], ImRouter]) -> None:
    brokers: ExternalBrokerRegistry | None = None
    router: ImRouter | None = None
    try:
        while True:
            try:
                current = world().brokers
                if current is not brokers:
                    if brokers is not None:
                        await brokers.aclose()
                    brokers = current
                    await brokers.reconnect()
                router = im_router()
                router.reconcile()
            except Exception:  # never let one round stop the others
                log.exception("outside connections: a round failed")
            await asyncio.sleep(POLL_S)
    finally:
        with contextlib.suppress(Exception):
            if brokers is not None:
                await brokers.aclose()
            if router is not None:
                await router.aclose()
