"""A delivery owner's circuit breaker, on the world clock.

``closed``: every due delivery is attempted. After :data:`FAILURES_TO_OPEN` failed attempts in a row
the circuit is ``open``: due deliveries wait (they keep their place and their attempt count, and are
not attempted) for a cool-down of world time, :data:`COOL_DOWN_S` doubling with each reopening up to
:data:`MAX_COOL_DOWN_S`, spread by up to ±:data:`JITTER` so that owners that failed together do not
probe together. Then it is ``half_open``: one delivery goes out as the probe. Its success closes the
circuit and releases the waiting deliveries; its failure opens it again. Any success closes it.

The spread comes from the world's seeded streams (counter-based, keyed by the owner), so the same
seed gives the same cool-downs whatever order things happen in.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.rng import hash_uniform

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
FAILURES_TO_OPEN = 5
COOL_DOWN_S = 30.0
MAX_COOL_DOWN_S = 600.0
JITTER = 0.2


def spread(key: int, counter: int, fraction: float) -> float:
    """A factor in [1 - fraction, 1 + fraction), the same for the same (key, counter)."""
    return 1.0 + fraction * (2.0 * float(hash_uniform(key, counter)) - 1.0)


@dataclass(slots=True)
class Circuit:
    key: int
    """The owner's stream key (``Streams.key``), for the cool-down's spread."""
    state: str = CLOSED
    failures: int = 0
    """Failed attempts in a row."""
    opened: int = 0
    """Times opened since the last success (grows the cool-down)."""
    probe: str | None = None
    """The job attempted while half-open."""

    def cool_down(self) -> float:
        """World seconds the circuit stays open this time."""
        base = min(COOL_DOWN_S * 2 ** max(0, self.opened - 1), MAX_COOL_DOWN_S)
        return base * spread(self.key, self.opened, JITTER)

    def admits(self, job_id: str) -> bool:
        """Whether a due job may be attempted now; in half-open the first one asking is the probe."""
        if self.state == CLOSED or self.probe == job_id:
            return True
        if self.state == HALF_OPEN and self.probe is None:
            self.probe = job_id
            return True
        return False

    def failed(self) -> bool:
        """Count a failed attempt; True when it opens the circuit (the caller starts the cool-down)."""
        self.failures += 1
        if self.state == HALF_OPEN or (self.state == CLOSED and self.failures >= FAILURES_TO_OPEN):
            self.state, self.probe = OPEN, None
            self.opened += 1
            return True
        return False

    def succeeded(self) -> bool:
        """Count a delivered attempt; True when it closes a circuit that was not closed."""
        was = self.state
        self.state, self.failures, self.opened, self.probe = CLOSED, 0, 0, None
        return was != CLOSED

    def half_open(self) -> None:
        self.state, self.probe = HALF_OPEN, None
