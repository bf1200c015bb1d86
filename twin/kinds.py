"""Device kinds: what a wing is to the engine, and the registration a kind is known by.

A wing is the model of one kind of device built on the engine: the automation server, the cameras,
the sensor groups. A :class:`Kind` says how a wing is built on a world, which servers it exposes,
what its entry in a scenario's fleet looks like and which timeline actions act on it. A
:class:`Kinds` registration holds them in order: a world builds its wings in that order, and the
order is behaviour (wings start SimPy processes and draw from the random streams as they are built).
The twin's own kinds are registered in :mod:`twin.wings`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol


class Wing(Protocol):
    """One kind's model on an engine. Its durable state lives in the engine's store; what
    ``snapshot`` returns is the rest (SimPy-side state a rebuild from the constructor lacks), and
    ``restore`` puts it back on a wing just rebuilt from the same config."""

    def snapshot(self) -> Any: ...

    def restore(self, state: Any) -> None: ...


@dataclass(frozen=True)
class FleetEntry:
    """A kind's entry in a scenario's ``fleet``: the key, the pydantic model of its value and how a
    validated value becomes the frozen spec the world config carries for the kind."""

    key: str
    model: type
    """A pydantic model, strict like the rest of the schema."""
    spec: Callable[[Any], Any]
    description: str = ""


@dataclass(frozen=True)
class Kind:
    name: str
    build: Callable[[Any], Wing]
    """Builds the wing on a world (a :class:`twin.engine.Host` with the wings registered before
    this one already built); the world's config says what the wing holds."""
    servers: Callable[[Any], Iterable[Any]] | None = None
    """The servers the wing exposes, made by the composition root: called with the root's
    :class:`twin.serving.Site`, returns :class:`twin.serving.Served` members."""
    fleet: FleetEntry | None = None
    """Its scenario fleet entry, for a kind the built-in fleet keys do not describe."""
    actions: tuple[Any, ...] = ()
    """The scenario timeline actions that act on it (:class:`twin.scenario.actions.Action`)."""


@dataclass
class Kinds:
    """A registration of device kinds, in building order."""

    _kinds: dict[str, Kind] = field(default_factory=dict)
    version: int = 0
    """Bumped at each change, so what is derived from the registration can be cached."""

    def register(self, kind: Kind) -> Kind:
        if kind.name in self._kinds:
            raise ValueError(f"kind {kind.name!r} is registered already")
        self._kinds[kind.name] = kind
        self.version += 1
        return kind

    def unregister(self, name: str) -> None:
        del self._kinds[name]
        self.version += 1

    def __iter__(self) -> Iterator[Kind]:
        return iter(tuple(self._kinds.values()))

    def __getitem__(self, name: str) -> Kind:
        return self._kinds[name]
