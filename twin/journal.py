"""The request journal: every call a client made to a vendor API, stamped on the world clock.

Scenario expectations turn it into verdicts on the client under test (did it honour
``Retry-After``, stop paging at a ``null`` cursor, stop polling a deleted device...). The journal
is bounded: past ``maxlen`` entries the oldest go and ``dropped`` counts them. It outlives world
resets (like the bus), so a run's history stays readable after the world was rebuilt.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twin.engine import Engine

MAX_ENTRIES = 100_000
"""The journal's bound. A kept entry costs about 140 bytes (a 10-slot tuple and two floats; its
strings are shared), so a full journal holds about 14 MB: about 40 minutes of a 40 requests/s
load, or a scenario run's whole history."""
MAX_SHARED = 4096
"""Distinct strings (paths, queries, clients...) the journal shares between its entries; past it,
the table starts again, so a stream of unique paths cannot grow it."""
ABSENT = "absent"
"""``next_cursor`` of a response that carries no cursor at all (not a paged route)."""


@dataclass(frozen=True, slots=True)
class JournalEntry:
    seq: int
    at: float
    """Sim time the request arrived (before any injected delay)."""
    end: float
    """Sim time the response (or the failure) was sent."""
    server: str
    method: str
    route: str
    """The matched route template, ``unmatched`` for a path no route serves."""
    path: str
    query: str
    status: int
    """0 when the connection was closed without a complete response (reset, hang)."""
    client: str
    retry_after: str | None = None
    next_cursor: Any = ABSENT
    fault: str | None = None
    """The injected transport fault that shaped this response, if any."""
    state: str | None = None
    """The ``status`` a polled status route (OTA, OS upgrade) answered."""
    stream: bool = False
    """A Server-Sent Events response: ``at`` its opening, ``end`` when it closed."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def trace_line(self) -> str:
        cursor = "" if self.next_cursor == ABSENT else f" next_cursor={self.next_cursor!r}"
        retry = "" if self.retry_after is None else f" retry_after={self.retry_after}"
        fault = "" if self.fault is None else f" fault={self.fault}"
        fault += "" if self.state is None else f" state={self.state}"
        fault += f" stream_end={self.end:.6f}" if self.stream else ""
        query = f"?{self.query}" if self.query else ""
        return (
            f"{self.at:.6f} request {self.server} {self.method} {self.path}{query} "
            f"-> {self.status}{retry}{cursor}{fault}"
        )


_PLAIN = (None, ABSENT, None, None, False)
"""The rarely set fields of an entry (``retry_after`` to ``stream``) when none is set."""


class RequestJournal:
    """Entries are kept as compact tuples (``at, end, server, method, route, path, query, status,
    client, extras``; ``extras`` is ``None`` or the five rarely set fields), with equal strings
    shared and sequence numbers implied by position; :class:`JournalEntry` objects are made when
    read."""

    def __init__(self, world: Engine, maxlen: int = MAX_ENTRIES) -> None:
        self.world = world
        self._rows: deque[tuple] = deque(maxlen=maxlen)
        self.dropped = 0
        self._next = 1
        """The sequence number of the next entry; the oldest kept is ``_next - len(_rows)``."""
        self._shared: dict[str, str] = {}

    def now(self) -> float:
        """Sim time on the (current) world clock."""
        return self.world.env.now

    def record(
        self,
        at: float,
        server: str,
        method: str,
        route: str,
        path: str,
        query: str,
        status: int,
        client: str,
        retry_after: str | None = None,
        next_cursor: Any = ABSENT,
        fault: str | None = None,
        state: str | None = None,
        stream: bool = False,
        end: float | None = None,
    ) -> None:
        """``end``: when the exchange ended, if not now (a stream the fault layer dropped)."""
        rows = self._rows
        if len(rows) == rows.maxlen:
            self.dropped += 1
        if end is None:
            end = self.world.env.now
        share = self._share
        extras = (retry_after, next_cursor, fault, state, stream)
        rows.append(
            (
                at,
                at if end == at else end,
                share(server),
                share(method),
                share(route),
                share(path),
                share(query),
                status,
                share(client),
                None if extras == _PLAIN else extras,
            )
        )
        self._next += 1

    def _share(self, text: str) -> str:
        shared = self._shared.get(text)
        if shared is None:
            if len(self._shared) >= MAX_SHARED:
                self._shared.clear()
            shared = self._shared[text] = text
        return shared

    @staticmethod
    def _entry(seq: int, row: tuple) -> JournalEntry:
        return JournalEntry(seq, *row[:9], *(row[9] or _PLAIN))

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def last_seq(self) -> int:
        """The newest entry's ``seq`` (0 before the first): a reader's ``since`` for what comes next."""
        return self._next - 1

    @property
    def entries(self) -> list[JournalEntry]:
        """Every kept entry, oldest first."""
        first, rows = self._after(0)
        return [self._entry(i, row) for i, row in enumerate(rows, first)]

    def select(
        self,
        *,
        since: int = 0,
        server: str | None = None,
        route: str | None = None,
        status: int | None = None,
        client: str | None = None,
        limit: int = 1000,
    ) -> list[JournalEntry]:
        """Entries with ``seq > since``, oldest first, filtered, at most ``limit``."""
        first, rows = self._after(since)
        out: list[JournalEntry] = []
        for i, row in enumerate(rows, first):
            if server is not None and row[2] != server:
                continue
            if route is not None and row[4] != route:
                continue
            if status is not None and row[7] != status:
                continue
            if client is not None and row[8] != client:
                continue
            out.append(self._entry(i, row))
            if len(out) >= limit:
                break
        return out

    def distinct(self, since: int = 0) -> dict[str, set]:
        """The distinct ``server``, ``route``, ``status`` and ``client`` values of the entries with
        ``seq > since``, read off the kept rows (no entry is made)."""
        rows = list(self._after(since)[1])
        return {
            "server": {row[2] for row in rows},
            "route": {row[4] for row in rows},
            "status": {row[7] for row in rows},
            "client": {row[8] for row in rows},
        }

    def _after(self, since: int) -> tuple[int, Iterator[tuple]]:
        """The kept rows of the entries with ``seq > since``, oldest first, and the first one's ``seq``."""
        oldest = self._next - len(self._rows)
        skip = max(0, since + 1 - oldest)
        return oldest + skip, itertools.islice(self._rows, skip, None)

    def clear(self) -> None:
        """Forget every entry; sequence numbers go on from where they were."""
        self._rows.clear()
        self._shared.clear()
        self.dropped = 0
