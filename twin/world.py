"""The world: the engine (one SimPy environment, clock, random streams, bus, store, trace) and the
wings built on it, one per registered device kind (:mod:`twin.kinds`).

``reset()`` re-runs the constructor (the constructor defines "empty"); ``snapshot()`` and
``restore()`` capture and rebuild clock, random states, each wing's state and durable state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import simpy

from hardware.ports.events import Event, EventKind
from twin.bus import EventBus
from twin.fleet import WorldConfig
from twin.keys import KeyRing
from twin.kinds import Kinds, Wing
from twin.rng import Streams
from twin.sensors import Samples
from twin.store import Store


@dataclass(frozen=True, slots=True)
class WorldSnapshot:
    config: WorldConfig
    sim_time: float
    started_at: float
    streams: dict[str, Mapping[str, Any]]
    wings: dict[str, Any]
    """Each wing's own snapshot, by kind name."""
    database: bytes


class World:
    def __init__(
        self,
        config: WorldConfig | None = None,
        *,
        store: Store | None = None,
        bus: EventBus | None = None,
        keys: KeyRing | None = None,
        kinds: Kinds | None = None,
        initial_time: float = 0.0,
        record_trace: bool = False,
    ) -> None:
        self.config = config or WorldConfig()
        self.seed = self.config.seed
        self.epoch = self.config.epoch
        self.env = simpy.Environment(initial_time=initial_time)
        self.started_at = initial_time
        self.store = store if store is not None else Store()
        self.streams = Streams(self.seed, self.store.generation)
        self.bus = bus if bus is not None else EventBus()
        self.keys = keys if keys is not None else KeyRing()
        self.trace: list[str] | None = [] if record_trace else None
        self.events_emitted = 0
        """World events since the world was built: each sensor sample counts, whether or not
        anyone asked for it as a single event."""
        self.observers: list[Callable[[Event], None]] = []
        """Called synchronously with every emitted event (the rules engine, data push, a scenario
        run), except the simulated sensors' ticks, which go to ``sample_observers`` as blocks."""
        self.sample_observers: list[Callable[[Samples], None]] = []
        """Called synchronously with every tick of a sensor group, as one block."""

        self.kinds = kinds if kinds is not None else Kinds()
        """The device kinds whose wings this world builds (none: the engine alone)."""
        self.wings: dict[str, Wing] = {}
        """The wings by kind name, built in the registration's order: a wing may use the ones
        before it (the automation server's devices include the simulated sensors)."""
        for kind in self.kinds:
            self.wings[kind.name] = kind.build(self)

    # Time ----------------------------------------------------------------------------------
    def now(self) -> float:
        """Unix seconds on the world clock."""
        return self.epoch + self.env.now

    # Events --------------------------------------------------------------------------------
    def emit(self, kind: EventKind, source: str, **data: Any) -> Event:
        self.events_emitted += 1
        event = Event(kind, self.env.now, source, data)
        if self.trace is not None:
            self.trace.append(event.trace_line())
        self.bus.publish(event)
        for observe in self.observers:
            observe(event)
        return event

    def emit_samples(self, samples: Samples) -> None:
        """A sensor group's tick. Single ``DEVICE_TELEMETRY`` events are made only when someone
        wants them (a bus subscriber or the trace); block observers see the tick after them."""
        self.events_emitted += samples.count
        trace = self.trace
        if trace is not None or self.bus.wants(EventKind.DEVICE_TELEMETRY):
            now, device_type = self.env.now, samples.fleet.group.device_type
            unix = self.epoch + samples.at
            publish = self.bus.publish
            for device_id, metrics in samples.rows():
                event = Event(
                    EventKind.DEVICE_TELEMETRY,
                    now,
                    device_id,
                    {"device_type": device_type, "timestamp": unix, "metrics": metrics},
                )
                if trace is not None:
                    trace.append(event.trace_line())
                publish(event)
        for observe in self.sample_observers:
            observe(samples)

    # Lifecycle -----------------------------------------------------------------------------
    def reset(self, config: WorldConfig | None = None) -> None:
        """Rebuild from the constructor: sim time 0, fresh streams, durable state wiped."""
        self.store.clear()
        self._rebuild(config or self.config, initial_time=0.0)
        self.emit(EventKind.WORLD_RESET, "world", seed=self.seed)

    def snapshot(self) -> WorldSnapshot:
        return WorldSnapshot(
            config=self.config,
            sim_time=self.env.now,
            started_at=self.started_at,
            streams=self.streams.state(),
            wings={name: wing.snapshot() for name, wing in self.wings.items()},
            database=self.store.dump(),
        )

    def restore(self, snap: WorldSnapshot) -> None:
        self.store.load(snap.database)  # first: registries read their durable state when rebuilt
        self._rebuild(snap.config, initial_time=snap.sim_time)
        self.started_at = snap.started_at
        self.streams.set_state(snap.streams)
        for name, state in snap.wings.items():
            if name in self.wings:
                self.wings[name].restore(state)

    def _rebuild(self, config: WorldConfig, initial_time: float) -> None:
        self.__init__(  # type: ignore[misc]
            config,
            store=self.store,
            bus=self.bus,
            keys=self.keys,
            kinds=self.kinds,
            initial_time=initial_time,
            record_trace=self.trace is not None,
        )
