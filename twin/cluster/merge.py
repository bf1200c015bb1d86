"""The shards' records as one: journals, world events, actions and traces in one canonical order.

Each shard keeps its own journal and events; a member (a camera, the automation server) lives on
one shard, so its entries keep their order there. Merged, everything is ordered by sim time, then
by the member or entity it is about, then by its order on its shard, which does not depend on how
the world was split. A trace's canonical form also orders lines of one entity at one instant by
their text and leaves out the actions' numbers (each process numbers its own).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable

from hardware.ports.events import Event
from twin.journal import JournalEntry

_ACTION_NUMBER = re.compile(r" action #\d+ ")


def merged_journal(journals: Iterable[Iterable[JournalEntry]]) -> list[JournalEntry]:
    """Every shard's entries by (arrival sim time, server, their order there), numbered from 1."""
    rows = sorted((e for journal in journals for e in journal), key=lambda e: (e.at, e.server, e.seq))
    return [dataclasses.replace(e, seq=i) for i, e in enumerate(rows, 1)]


def merged_events(streams: Iterable[Iterable[Event]]) -> list[Event]:
    """Every shard's world events by (sim time, source), each source's in its own order."""
    return sorted((e for stream in streams for e in stream), key=lambda e: (e.at, e.source))


def canonical(lines: Iterable[str]) -> list[str]:
    """Trace lines (``"<sim time> <kind> <entity> ..."``) in the canonical order, action numbers out."""
    out = [_ACTION_NUMBER.sub(" action ", line) for line in lines]
    return sorted(out, key=_key)


def trace_hash(lines: Iterable[str]) -> str:
    """The SHA-256 of a trace in its canonical form: equal for the same world however it was split."""
    return hashlib.sha256("\n".join(canonical(lines)).encode()).hexdigest()


def _key(line: str) -> tuple[float, str, str]:
    fields = line.split(" ", 3)
    return float(fields[0]), fields[2] if len(fields) > 2 else "", line
