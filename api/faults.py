"""Transport faults as ASGI middleware. Delays are awaited on the world clock, never ``time.sleep``,
so a thousand delayed requests cost a thousand timers, not a thousand threads."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send


@dataclass(slots=True)
class Latency:
    seconds: float
    path_prefix: str = "/"


@dataclass(slots=True)
class FaultSet:
    """The faults active on one server. The control plane edits it; the middleware reads it."""

    latency: list[Latency] = field(default_factory=list)

    def delay_for(self, path: str) -> float:
        return sum(lat.seconds for lat in self.latency if path.startswith(lat.path_prefix))

    def add_latency(self, seconds: float, path_prefix: str = "/") -> int:
        """Delay requests under ``path_prefix`` by ``seconds`` of world time; the number now active."""
        self.latency.append(Latency(seconds, path_prefix))
        return len(self.latency)

    def describe(self) -> dict:
        return {"latency": [{"seconds": lat.seconds, "path_prefix": lat.path_prefix} for lat in self.latency]}

    def clear(self) -> None:
        self.latency.clear()


class FaultMiddleware:
    def __init__(self, app: ASGIApp, faults: FaultSet, sleep: Callable[[float], Awaitable[None]]) -> None:
        self.app = app
        self.faults = faults
        self.sleep = sleep

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            delay = self.faults.delay_for(scope["path"])
            if delay > 0:
                await self.sleep(delay)
        await self.app(scope, receive, send)
