"""The request journal: every call a client made to a vendor API, stamped on the world clock.

Scenario expectations turn it into verdicts on the client under test (did it honour
``Retry-After``, stop paging at a ``null`` cursor, stop polling a deleted device...). The journal
is bounded: past ``maxlen`` entries the oldest go and ``dropped`` counts them. It outlives world
resets (like the bus), so a run's history stays readable after the world was rebuilt.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twin.engine import Engine

MAX_ENTRIES = 200_000
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


class RequestJournal:
    def __init__(self, world: Engine, maxlen: int = MAX_ENTRIES) -> None:
        self.world = world
        self._rows: deque[tuple] = deque(maxlen=maxlen)
        """Plain tuples on the request path; :class:`JournalEntry` objects are made when read."""
        self.dropped = 0
        self._seq = itertools.count(1)

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
        rows.append(
            (
                next(self._seq),
                at,
                self.world.env.now if end is None else end,
                server,
                method,
                route,
                path,
                query,
                status,
                client,
                retry_after,
                next_cursor,
                fault,
                state,
                stream,
            )
        )

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def last_seq(self) -> int:
        """The newest entry's ``seq`` (0 before the first): a reader's ``since`` for what comes next."""
        return self._rows[-1][0] if self._rows else 0

    @property
    def entries(self) -> list[JournalEntry]:
        """Every kept entry, oldest first."""
        return [JournalEntry(*row) for row in self._rows]

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
        out: list[JournalEntry] = []
        for row in self._rows:
            if row[0] <= since:
                continue
            if server is not None and row[3] != server:
                continue
            if route is not None and row[5] != route:
                continue
            if status is not None and row[8] != status:
                continue
            if client is not None and row[9] != client:
                continue
            out.append(JournalEntry(*row))
            if len(out) >= limit:
                break
        return out

    def clear(self) -> None:
        self._rows.clear()
        self.dropped = 0
