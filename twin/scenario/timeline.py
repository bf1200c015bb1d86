"""A scenario's timeline on the world clock: ``at`` steps as SimPy processes, ``after`` steps when
their world event is emitted, and the bounded record of world events the verdicts read. Used by the
runner (:mod:`twin.scenario.runner`), the console's live runs and ``twin run --scenario``."""

from __future__ import annotations

import logging
from collections.abc import Callable

from hardware.ports.events import Event, EventKind
from twin.scenario.broker_switch import BrokerSwitch
from twin.scenario.model import Scenario, Step

log = logging.getLogger("twin")

MAX_EVENTS = 200_000
_TELEMETRY = EventKind.DEVICE_TELEMETRY


class _Recorder:
    """Keeps every non-telemetry world event (bounded) and starts ``after`` steps when their event
    is emitted: synchronously (a world observer), inside the SimPy step that emitted it, so they
    fire on time."""

    def __init__(self, world, steps: list[Step], fire: Callable[[Step, float], None]) -> None:
        self.world = world
        self.events: list[Event] = []
        self.pending = list(steps)
        self.fire = fire
        world.observers.append(self.observe)

    def observe(self, event: Event) -> None:
        if event.kind is _TELEMETRY:
            return
        if len(self.events) < MAX_EVENTS:
            self.events.append(event)
        for step in list(self.pending):
            after = step.after
            if (
                after is not None
                and after.event == event.kind.value
                and (after.source is None or after.source == event.source)
            ):
                self.pending.remove(step)
                self.fire(step, after.delay)

    def close(self) -> None:
        if self.observe in self.world.observers:
            self.world.observers.remove(self.observe)


def schedule(scenario: Scenario, control, errors: list[str]) -> _Recorder:
    """Put the scenario's timeline on the world clock: ``at`` steps as SimPy processes, ``after``
    steps when their event is published. A step that fails is appended to ``errors`` (with its
    sim time) and the timeline goes on. Returns the recorder of world events."""
    world = control.world

    def do(step: Step) -> None:
        try:
            control.run_action(step.do, step.params, step.for_)
        except Exception as err:
            errors.append(f"t={world.env.now:g} {step.do}: {getattr(err, 'message', err)}")

    def later(step: Step, delay: float):
        if delay > 0:
            yield world.env.timeout(delay)
        do(step)

    def fire(step: Step, delay: float) -> None:
        world.env.process(later(step, delay))

    recorder = _Recorder(world, [s for s in scenario.timeline if s.after is not None], fire)
    for s in scenario.timeline:
        if s.at is not None:
            world.env.process(later(s, s.at - world.env.now))
    return recorder


def attach(running, scenario: Scenario | None) -> list[str]:
    """For ``twin run``: the broker switch for the control plane, and the scenario's timeline on
    the world clock (its failures are logged, not judged). Returns the list failures go to."""
    control = running.twin.control
    if running.broker is not None:
        control.broker = BrokerSwitch(running)
    errors: list[str] = LoggedList()
    if scenario is not None and scenario.timeline:
        schedule(scenario, control, errors)
    return errors


class LoggedList(list):
    def append(self, item: str) -> None:
        log.warning("twin: scenario step failed: %s", item)
        super().append(item)
