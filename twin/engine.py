"""What every model in the world uses of it: the engine, typed as a protocol.

:class:`twin.world.World` is the aggregate that builds the models; they never import it. A model
takes an :class:`Engine` (the SimPy environment, the world clock, the per-entity random streams,
event emission, the durable store and the world's configuration) and, in its constructor, the
other models it works with. A model that needs a little more of the world says so with a protocol
of its own that extends this one.

:class:`Host` is the engine with the wings built on it, as the code that works over a whole world
(its servers' backends, the control plane, the scenario actions) sees it: each wing package has a
typed lookup of its wing in ``wings`` (``automation_of``, ``cameras_of``, ``sensors_of``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import simpy

from hardware.ports.events import Event, EventKind
from twin.bus import EventBus
from twin.fleet import WorldConfig
from twin.rng import Streams
from twin.store import Store


class Engine(Protocol):
    config: WorldConfig
    seed: int
    epoch: float
    """Unix seconds at sim time 0."""
    env: simpy.Environment
    streams: Streams
    bus: EventBus
    store: Store
    observers: list[Callable[[Event], None]]
    """Called synchronously with every emitted event (the sensors' ticks excepted)."""

    def now(self) -> float:
        """Unix seconds on the world clock."""
        ...

    def emit(self, kind: EventKind, source: str, **data: Any) -> Event: ...


class Host(Engine, Protocol):
    @property
    def wings(self) -> Mapping[str, object]:
        """The wings built on this engine, by kind name, in the order they were built."""
        ...
