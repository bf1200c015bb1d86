"""The run's embedded MQTT broker taken down and brought back where it listened (the
``mqtt_broker_outage`` action), on the event loop, outside the world step."""

from __future__ import annotations

import asyncio
import contextlib


class BrokerSwitch:
    """Stops the run's embedded MQTT broker and starts a new one where it listened, as it was
    configured (its bind, TLS and authentication, whatever the API changed since the start); each
    switch waits for the previous one (they run on the event loop, outside the world step)."""

    def __init__(self, running) -> None:
        self.running = running
        self.port = running.broker.port
        """Where the broker listened when it last went down (a broker bound to port 0 picked it)."""
        self._last: asyncio.Future | None = None

    def _then(self, make) -> None:
        previous = self._last

        async def chained() -> None:
            if previous is not None:
                with contextlib.suppress(Exception):
                    await previous
            await make()

        self._last = asyncio.ensure_future(chained())

    def down(self) -> None:
        async def stop() -> None:
            broker = self.running.broker
            self.port = broker.port or self.port  # a stopped broker knows only the port it was given
            await broker.stop()

        self._then(stop)

    def up(self) -> None:
        async def start() -> None:
            broker = self.running.broker.successor(self.port)
            await broker.start()
            self.running.broker = broker

        self._then(start)

    async def settle(self) -> None:
        if self._last is not None:
            with contextlib.suppress(Exception):
                await self._last
