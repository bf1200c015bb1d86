"""What every expectation shares: the :class:`RunRecord` it reads, the :class:`Verdict` it returns,
and the :class:`Expect` base model (its ``server`` filter, label, ``optional`` flag and verdicts).

A verdict has one of three outcomes. ``passed`` and ``failed`` say the run exercised what the
expectation is about (a 429 was answered, a stream was dropped...) and the client did or did not
behave. ``inconclusive`` says nothing in the run exercised it, so there is nothing to judge: that is
not a pass, and it fails the run unless the scenario marks the expectation ``optional``."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.events import Event
from twin.journal import JournalEntry


class BrokerSession(Protocol):
    """One client connection to the run's embedded MQTT broker, on the world clock, as the broker's
    session log keeps it."""

    @property
    def client_id(self) -> str: ...

    @property
    def at(self) -> float: ...

    @property
    def end(self) -> float | None:
        """``None`` while the client is connected."""
        ...

    @property
    def clean(self) -> bool | None:
        """``True``: the client sent ``DISCONNECT``; ``False``: it was cut off; ``None`` while connected."""
        ...


@dataclass(frozen=True, slots=True)
class RunRecord:
    journal: list[JournalEntry]
    events: list[Event]
    end: float
    client_exit: int | None = None
    """The client's exit status (negative: the signal that ended it); ``None``: no client ran."""
    actions: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    mqtt: list[BrokerSession] = field(default_factory=list)
    """Client sessions on the embedded MQTT broker (the twin's own bridge left out)."""
    broker_outages: list[tuple[float, float | None]] = field(default_factory=list)
    """``(down, up)`` per time the embedded broker went away (``up`` ``None``: not back)."""
    client_stopped: bool = False
    """The client was still running when the run ended and the runner stopped it."""

    @property
    def client_ran(self) -> bool:
        """A client took part: the runner started one, or something used the servers."""
        return self.client_exit is not None or bool(self.journal) or bool(self.mqtt)


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    passed: bool
    """Exercised and held. An inconclusive verdict is not passed."""
    message: str
    inconclusive: bool = False
    """Nothing in the run exercised the expectation: neither passed nor failed."""
    optional: bool = False
    """The scenario lets the run pass while this verdict is inconclusive."""
    blame: tuple[int, ...] = ()
    """The journal ``seq`` of each request a failed verdict holds against the client (the report
    marks them)."""

    def __post_init__(self) -> None:
        if self.passed and self.inconclusive:
            raise ValueError("a verdict is passed or inconclusive, not both")

    @property
    def outcome(self) -> Outcome:
        if self.inconclusive:
            return Outcome.INCONCLUSIVE
        return Outcome.PASSED if self.passed else Outcome.FAILED

    @property
    def fails_run(self) -> bool:
        """Failed, or inconclusive where the scenario did not make it optional."""
        return self.outcome is Outcome.FAILED or (self.inconclusive and not self.optional)


def fmt_entry(e: JournalEntry) -> str:
    """A journal entry as verdict messages quote it."""
    query = f"?{e.query}" if e.query else ""
    return f"t={e.at:g} {e.method} {e.path}{query} -> {e.status or 'closed'}"


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="shown in reports; default: the kind")
    server: str | None = Field(default="automation", description="'automation', a camera id, or null for all")
    optional: bool = Field(
        default=False,
        description="the run may pass when nothing exercised this expectation (its verdict is then "
        "inconclusive); once exercised it is judged like any other. At least one expectation of a "
        "scenario is not optional",
    )

    @property
    def label(self) -> str:
        return self.name or self.expect  # type: ignore[attr-defined]

    def entries(self, run: RunRecord) -> list[JournalEntry]:
        return [e for e in run.journal if self.server is None or e.server == self.server]

    def verdict(self, passed: bool, message: str, blame: list[JournalEntry] | tuple = ()) -> Verdict:
        """``blame``: the requests a failed verdict holds against the client."""
        seqs = tuple(e.seq for e in blame) if not passed else ()
        return Verdict(self.label, passed, message, optional=self.optional, blame=seqs)

    def not_exercised(self, why: str) -> Verdict:
        """The inconclusive verdict: ``why`` says what never happened in the run."""
        return Verdict(self.label, False, f"not exercised: {why}", inconclusive=True, optional=self.optional)
