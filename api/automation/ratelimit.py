"""The automation backend's rate limiter: a sliding 60 s window per client, on the world clock.

The client key is, first match wins: the ``X-API-Key`` hash, the Bearer token hash,
``X-Session-Id``, the client IP, then a hash of User-Agent + Accept. The limit is the reference's
host-derived threshold unless overridden; the control plane can lower it for a while (a storm).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import deque
from collections.abc import Callable

from starlette.requests import HTTPConnection

WINDOW_S = 60.0
MAX_CLIENTS = 10_000
"""Clients the limiter tracks at once. Clients idle for a whole window are forgotten once per
window; past this many, the longest-tracked go first (they start a fresh window). Each costs its
key, a deque and a float per request in the window."""
EXCLUDED = ("/chat", "/ws", "/events/stream")


def host_limit(cpu_count: int, mem_total_mb: int) -> int:
    """max(cores * 2000, MB / 2), clamped to [5000, 100000] requests per minute."""
    return max(5000, min(100_000, max(cpu_count * 2000, mem_total_mb // 2)))


@functools.lru_cache(maxsize=4096)
def _h(value: str) -> str:
    """A short hash of a key or token: clients send the same one request after request, so each
    is hashed once while it is in use."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def client_key(request: HTTPConnection) -> str:
    """The first of: the ``X-API-Key`` hash, the Bearer token hash, ``X-Session-Id``, the client
    IP, a hash of User-Agent + Accept (each header's first occurrence, read in one pass)."""
    found: dict[bytes, bytes] = {}
    for name, value in request.scope["headers"]:
        if name in _KEYED and name not in found:
            found[name] = value
    if key := found.get(b"x-api-key"):
        return "key:" + _h(key.decode("latin-1"))
    scheme, _, token = found.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return "bearer:" + _h(token.strip())
    if session := found.get(b"x-session-id"):
        return "session:" + session.decode("latin-1")
    if request.client is not None:
        return "ip:" + request.client.host
    agent = found.get(b"user-agent", b"") + found.get(b"accept", b"")
    return "ua:" + _h(agent.decode("latin-1"))


_KEYED = frozenset((b"x-api-key", b"authorization", b"x-session-id", b"user-agent", b"accept"))


class _Window:
    """One client's requests in the window, as runs of requests at the same world instant (oldest
    first): on a still clock (step mode) a client's whole window is one run, whatever its rate."""

    __slots__ = ("runs", "total")

    def __init__(self) -> None:
        self.runs: deque[list[float]] = deque()
        """``[world time, requests at that time]``."""
        self.total = 0

    def newest(self) -> float | None:
        return self.runs[-1][0] if self.runs else None


class RateLimiter:
    def __init__(self, limit: int, now: Callable[[], float]) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.base_limit = limit
        self._now = now
        self._hits: dict[str, _Window] = {}
        self._storm: tuple[int, float] | None = None
        self._swept = now()
        self.rejected = 0

    @property
    def limit(self) -> int:
        if self._storm is not None:
            limit, until = self._storm
            if self._now() < until:
                return limit
            self._storm = None
        return self.base_limit

    def storm(self, limit: int, seconds: float) -> None:
        """Lower the limit to ``limit`` for ``seconds`` of world time."""
        self._storm = (limit, self._now() + seconds)

    def calm(self) -> None:
        self._storm = None

    def storm_until(self) -> float | None:
        return self._storm[1] if self._storm is not None and self._now() < self._storm[1] else None

    def hit(self, key: str) -> int | None:
        """Count a request; ``None`` if allowed, else the whole seconds to wait (may be 0)."""
        now = self._now()
        window = self._hits.get(key)
        if window is None:
            if now - self._swept >= WINDOW_S or len(self._hits) >= MAX_CLIENTS:
                self.forget_idle()
            window = self._hits[key] = _Window()
        runs = window.runs
        while runs and runs[0][0] <= now - WINDOW_S:
            window.total -= int(runs.popleft()[1])
        if window.total >= self.limit:
            self.rejected += 1
            return max(0, math.floor(WINDOW_S - (now - runs[0][0])))
        if runs and runs[-1][0] == now:
            runs[-1][1] += 1
        else:
            runs.append([now, 1])
        window.total += 1
        return None

    def forget_idle(self) -> None:
        """Drop the clients with no request in the last window; then, past :data:`MAX_CLIENTS`,
        the longest-tracked ones."""
        now = self._swept = self._now()
        hits = self._hits
        for key in [k for k, w in hits.items() if (t := w.newest()) is None or t <= now - WINDOW_S]:
            del hits[key]
        for key in list(itertools.islice(hits, max(0, len(hits) - MAX_CLIENTS + 1))):
            del hits[key]

    def __len__(self) -> int:
        """Clients tracked now."""
        return len(self._hits)


_CHAT, _WS, _STREAM = EXCLUDED


def limited_path(path: str) -> bool:
    return _CHAT not in path and _WS not in path and _STREAM not in path
