"""What every expectation shares: the :class:`RunRecord` it reads, the :class:`Verdict` it returns,
and the :class:`Expect` base model (its ``server`` filter, label and verdict)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.realtime.mqtt import MqttSession
from hardware.ports.events import Event
from twin.journal import JournalEntry


@dataclass(frozen=True, slots=True)
class RunRecord:
    journal: list[JournalEntry]
    events: list[Event]
    end: float
    client_exit: int | None = None
    actions: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)
    mqtt: list[MqttSession] = field(default_factory=list)
    """Client sessions on the embedded MQTT broker (the twin's own bridge left out)."""
    broker_outages: list[tuple[float, float | None]] = field(default_factory=list)
    """``(down, up)`` per time the embedded broker went away (``up`` ``None``: not back)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    name: str
    passed: bool
    message: str


def fmt_entry(e: JournalEntry) -> str:
    """A journal entry as verdict messages quote it."""
    query = f"?{e.query}" if e.query else ""
    return f"t={e.at:g} {e.method} {e.path}{query} -> {e.status or 'closed'}"


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="shown in reports; default: the kind")
    server: str | None = Field(default="automation", description="'automation', a camera id, or null for all")

    @property
    def label(self) -> str:
        return self.name or self.expect  # type: ignore[attr-defined]

    def entries(self, run: RunRecord) -> list[JournalEntry]:
        return [e for e in run.journal if self.server is None or e.server == self.server]

    def verdict(self, passed: bool, message: str) -> Verdict:
        return Verdict(self.label, passed, message)
