"""What the composition root serves of each wing: its members (an app, what it serves, where it
listens), made by each registered kind's ``servers`` (:mod:`twin.kinds`) on a :class:`Site`."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from api.automation.ratelimit import RateLimiter
from api.faults import FaultSet
from api.gateway.rtsp import RtspServer
from api.members.app import member_app
from api.members.passthrough import Passthrough
from twin.clock import SimClock
from twin.journal import RequestJournal
from twin.settings import RealMember, Settings
from twin.world import World

App = FastAPI | Passthrough


@dataclass(frozen=True)
class Address:
    """One listener of a member: its name (``cam-01/https``), host and port, whether it speaks TLS
    (with the certificate made at start) and the path the banner shows after its URL."""

    name: str
    host: str
    port: int
    tls: bool = False
    path: str = ""


@dataclass
class Served:
    """A member of the twin: one server of a wing, by the name its faults, rate limiter, journal
    entries and real-member settings go by (``automation``, ``cam-01``)."""

    name: str
    kind: str
    backend: Any
    """What the app serves (the wing's backend object)."""
    app: App
    addresses: tuple[Address, ...]
    title: str
    """How the banner names it (``automation API``, ``cam-01 gateway``)."""
    limiter: RateLimiter
    rank: int = 1
    """Where it comes in the start order and the banner (lowest first, then registration order)."""
    powered: Callable[[], bool | None] | None = None
    """Whether the member is up: its listeners are closed while it is down and opened again after
    (``None``: the world has no such member now, leave them as they are)."""
    rtsp: RtspServer | None = None
    """Its RTSP server, started after the listeners and reconciled with its power."""
    rtsp_port: Callable[[int], None] | None = None
    """Told the port its RTSP server got at start."""
    close: Callable[[], None] | None = None
    """Releases what the member holds on this machine (serial ports), at stop."""
    tasks: tuple[tuple[str, Callable[[], Coroutine[Any, Any, None]]], ...] = ()
    """Its background work, by name: started with the listeners, cancelled at stop."""


@dataclass
class Site:
    """What a kind's servers are made with: the settings, the world, its clock, the request journal,
    which members are real or replayed, and the rate limit the servers start from."""

    settings: Settings
    world: World
    clock: SimClock
    journal: RequestJournal
    real: dict[str, RealMember]
    replays: dict[str, Path]
    base_limit: int
    faults: dict[str, FaultSet] = field(default_factory=dict)
    """Each member's fault set, by name."""

    def fault_set(self, name: str) -> FaultSet:
        """The fault set of member ``name`` (made on first use)."""
        return self.faults.setdefault(name, FaultSet())

    def member(self, name: str, app: FastAPI, gate: Any) -> App:
        """The simulated ``app``, or in its place the real member or the replay the settings and
        the scenario give for ``name``."""
        return member_app(
            name,
            app,
            gate,
            real=self.real,
            replays=self.replays,
            clock=self.clock,
            release=self.settings.release,
        )
