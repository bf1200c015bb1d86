"""A bounded buffer from the world to one asynchronous reader (a WebSocket or SSE client).

The world ``offer``s without ever blocking; the reader ``await``s :meth:`Feed.next`, which
returns ``None`` once the feed has ended and everything queued before the end was read.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Feed(Generic[T]):
    def __init__(
        self, maxlen: int, *, drop_oldest: bool = True, on_close: Callable[[], None] | None = None
    ) -> None:
        """``drop_oldest``: a full buffer drops its oldest item for the new one; otherwise the new
        item is refused. Either way the drop is counted in ``dropped``."""
        self._queue: deque[T] = deque()
        self._maxlen = maxlen
        self._drop_oldest = drop_oldest
        self._on_close = on_close
        self._ready = asyncio.Event()
        self.dropped = 0
        self.closed = False

    def offer(self, item: T) -> None:
        if len(self._queue) >= self._maxlen:
            self.dropped += 1
            if not self._drop_oldest:
                return
            self._queue.popleft()
        self._queue.append(item)
        self._ready.set()

    def end(self, *, discard: bool = False) -> None:
        """No more items: the reader gets what is queued (nothing, with ``discard``), then ``None``."""
        self.closed = True
        if discard:
            self._queue.clear()
        self._ready.set()

    async def next(self) -> T | None:
        while not self._queue:
            if self.closed:
                return None
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()

    def close(self) -> None:
        """The reader is done: end the feed and let its source forget it."""
        self.end()
        if self._on_close is not None:
            self._on_close()
