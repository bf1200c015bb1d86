"""The world's event bus: fan-out to bounded subscriber queues that drop the oldest and count it.

Publishing is synchronous and runs on the event loop's thread (SimPy processes and handlers run
there between clock slices), so a subscriber's queue is filled and drained on one thread: no
event crosses a thread boundary and none is lost silently. A full queue drops its oldest event and
counts it on the subscription and on the bus (``/metrics`` reports the bus total).

Every published event gets a sequence number (publish order, unique per bus). Subscribers that
serve many clients use it to encode an event once and to give it the same id on every channel.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable

from hardware.ports.events import Event, EventKind, Subscription

Item = tuple[int, Event]


class QueueSubscription(Subscription):
    def __init__(self, bus: EventBus, kinds: frozenset[EventKind] | None, maxlen: int) -> None:
        self._bus = bus
        self.kinds = kinds
        self._queue: deque[Item] = deque(maxlen=maxlen)
        self._ready = asyncio.Event()
        self.dropped = 0
        self.closed = False

    def offer(self, item: Item) -> None:
        """Queue one published item (the bus has already checked the kind)."""
        queue = self._queue
        if len(queue) == queue.maxlen:
            self.dropped += 1
            self._bus.dropped += 1
        queue.append(item)
        if not self._ready.is_set():
            self._ready.set()

    def get_nowait(self) -> Event | None:
        return self._queue.popleft()[1] if self._queue else None

    async def get(self) -> Event:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()[1]

    async def ready(self) -> None:
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()

    def drain(self, limit: int | None = None) -> list[Item]:
        queue = self._queue
        if limit is None or limit >= len(queue):
            items = list(queue)
            queue.clear()
            return items
        return [queue.popleft() for _ in range(limit)]

    def __len__(self) -> int:
        return len(self._queue)

    def close(self) -> None:
        self.closed = True
        self._bus.unsubscribe(self)


class EventBus:
    """Publish is synchronous (called from SimPy processes and handlers on the loop thread).

    Subscribers are routed by kind: a publish touches only the subscriptions that want its kind
    (the routing table is rebuilt when someone subscribes or leaves, not on every publish).
    """

    def __init__(self) -> None:
        self._subs: list[QueueSubscription] = []
        self._routes: dict[EventKind, tuple[QueueSubscription, ...]] = {}
        self.published = 0
        self.dropped = 0

    def subscribe(self, kinds: Iterable[EventKind] | None = None, maxlen: int = 1024) -> QueueSubscription:
        sub = QueueSubscription(self, frozenset(kinds) if kinds is not None else None, maxlen)
        self._subs.append(sub)
        self._routes.clear()
        return sub

    def unsubscribe(self, sub: QueueSubscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
            self._routes.clear()

    def _route(self, kind: EventKind) -> tuple[QueueSubscription, ...]:
        subs = tuple(s for s in self._subs if s.kinds is None or kind in s.kinds)
        self._routes[kind] = subs
        return subs

    def wants(self, kind: EventKind) -> bool:
        """Whether any subscriber takes events of ``kind``."""
        subs = self._routes.get(kind)
        return bool(subs if subs is not None else self._route(kind))

    def publish(self, event: Event) -> None:
        item = (self.published, event)
        self.published += 1
        subs = self._routes.get(event.kind)
        if subs is None:
            subs = self._route(event.kind)
        for sub in subs:  # QueueSubscription.offer, inlined: this loop runs per event per subscriber
            queue = sub._queue
            if len(queue) == queue.maxlen:
                sub.dropped += 1
                self.dropped += 1
            queue.append(item)
            if not sub._ready.is_set():
                sub._ready.set()
