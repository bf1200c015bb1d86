"""The world's event bus: fan-out to bounded subscriber queues that drop the oldest and count it."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from hardware.ports.events import Event, EventKind, Subscription


class QueueSubscription(Subscription):
    def __init__(self, bus: EventBus, kinds: frozenset[EventKind] | None, maxlen: int) -> None:
        self._bus = bus
        self.kinds = kinds
        self._queue: deque[Event] = deque(maxlen=maxlen)
        self._ready = asyncio.Event()
        self.dropped = 0
        self.closed = False

    def offer(self, event: Event) -> None:
        if self.kinds is not None and event.kind not in self.kinds:
            return
        if len(self._queue) == self._queue.maxlen:
            self.dropped += 1
            self._bus.dropped += 1
        self._queue.append(event)
        self._ready.set()

    def get_nowait(self) -> Event | None:
        return self._queue.popleft() if self._queue else None

    async def get(self) -> Event:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()

    def __len__(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        self.closed = True
        self._bus.unsubscribe(self)


class EventBus:
    """Publish is synchronous (called from SimPy processes and handlers on the loop thread)."""

    def __init__(self) -> None:
        self._subs: list[QueueSubscription] = []
        self.published = 0
        self.dropped = 0

    def subscribe(self, kinds: Iterable[EventKind] | None = None, maxlen: int = 1024) -> QueueSubscription:
        sub = QueueSubscription(self, frozenset(kinds) if kinds is not None else None, maxlen)
        self._subs.append(sub)
        return sub

    def unsubscribe(self, sub: QueueSubscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def publish(self, event: Event) -> None:
        self.published += 1
        for sub in self._subs:
            sub.offer(event)
