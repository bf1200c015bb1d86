"""Durable state: a small repository layer over SQLite.

Everything a client creates (users, sessions, keys, devices, rules...) lives here as JSON
documents grouped by kind. With a state directory the database is a WAL-mode file and every
write is committed before the call returns, so nothing a client was told succeeded is lost on a
restart or ``kill -9``; without one it is an in-memory database.

The store is its database's only writer, so it keeps what it last read or wrote of a document (its
JSON text) and each device's latest samples in memory: the API's hottest reads (a device's
document and current values) skip SQL. Every write path updates or drops those entries.

What is written is what any JSON client can read back: a document or value that does not encode
(an integer past 64 bits, a lone UTF-16 surrogate, a key that is not text) is refused with
``InvalidInput`` before anything is written, and :meth:`Store.atomic` groups several writes. A
stored row that cannot be read (damaged, or written by an older version without those checks) is
skipped, never fatal to a listing or to start-up: it is logged once and counted in
:attr:`Store.unreadable`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from twin.documents import check_text, from_json, to_json

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    kind TEXT NOT NULL,
    id   TEXT NOT NULL,
    seq  INTEGER NOT NULL,
    doc  TEXT NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX IF NOT EXISTS documents_kind_seq ON documents (kind, seq);
CREATE TABLE IF NOT EXISTS samples (
    device_id TEXT NOT NULL,
    metric    TEXT NOT NULL,
    ts        REAL NOT NULL,
    num,
    raw       TEXT,
    quality   REAL,
    PRIMARY KEY (device_id, metric, ts)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS opens (n INTEGER NOT NULL);
"""

_MAX_REMEMBERED = 100_000
"""Documents (or known absences) kept in memory before the store starts over."""

Sample = tuple[float, Any, float | None]
"""One stored telemetry sample: (unix seconds, value, quality)."""

_I64 = range(-(2**63), 2**63)
"""SQLite's integers."""


def _real(bound: float) -> float:
    """A time bound as SQLite takes it, whatever integer a client asked for (past 2**63 or past
    what a float holds): the infinities compare as expected."""
    try:
        return float(bound)
    except OverflowError:
        return float("inf") if bound > 0 else float("-inf")


def _count(n: int) -> int:
    """A LIMIT or OFFSET as SQLite takes it: past its integers means no limit."""
    return min(n, 2**63 - 1)


def _encode(value: Any) -> tuple[Any, str | None]:
    """Numbers go in ``num`` (aggregatable); anything else as JSON text in ``raw``."""
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool) and value in _I64):
        return value, None
    return None, to_json(value, "a sample").decode()


class Store:
    """A document store. ``store.collection("users")`` is the repository for one kind."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        if path is None:
            self._db = sqlite3.connect(":memory:", isolation_level=None)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._docs: dict[tuple[str, str], bytes | None] = {}
        self._latest: dict[str, dict[str, Sample]] = {}
        self._seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM documents").fetchone()[0]
        self.generation: int = self._db.execute("SELECT COUNT(*) FROM opens").fetchone()[0]
        """How many times the database was opened before: 0 for a new file (or in memory). Kept
        apart from the documents (``clear`` and ``load`` leave it), it tells one run on a state
        directory from the next."""
        self._db.execute("INSERT INTO opens VALUES (?)", (self.generation + 1,))
        self._savepoints = 0
        self.changes = 0
        """Writes so far (documents and samples, a rollback, a clear or a load): whatever a reader
        derived from the store is current while this has not moved."""
        self.unreadable: dict[tuple[str, str], str] = {}
        """Stored rows found unreadable, ``(kind, id)`` -> why; each is skipped wherever it is read."""

    def collection(self, kind: str) -> Collection:
        return Collection(self, kind)

    def healthy(self) -> bool:
        try:
            self._db.execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """Every write inside is kept, or (if the block raises) none is. Nests."""
        name = f"s{self._savepoints}"
        self._savepoints += 1
        seq = self._seq
        self._db.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self._db.execute(f"ROLLBACK TO {name}")
            self._db.execute(f"RELEASE {name}")
            self._seq = seq
            self._forget()
            self.changes += 1
            raise
        else:
            self._db.execute(f"RELEASE {name}")
        finally:
            self._savepoints -= 1

    def skip_unreadable(self, kind: str, id_: str, why: str) -> None:
        """Count a stored row that cannot be read; logged the first time it is met."""
        if (kind, id_) not in self.unreadable:
            self.unreadable[(kind, id_)] = why
            log.warning(
                "skipping unreadable stored %s %r (%s); %d unreadable so far",
                kind,
                id_,
                why,
                len(self.unreadable),
            )

    def clear(self) -> None:
        self.changes += 1
        self._db.execute("DELETE FROM documents")
        self._db.execute("DELETE FROM samples")
        self._forget()
        self._seq = 0
        self.unreadable.clear()

    def dump(self) -> bytes:
        """The whole database as bytes (for snapshots), marked as a rollback-journal database so it
        can be opened in memory whatever the journal mode of the file it came from."""
        data = bytearray(self._db.serialize())
        if len(data) > 19 and data[18] == 2:  # WAL read/write format versions in the header
            data[18] = data[19] = 1
        return bytes(data)

    def load(self, data: bytes) -> None:
        """Replace every document with those in ``data`` from :meth:`dump`, in one transaction."""
        src = sqlite3.connect(":memory:")
        try:
            src.deserialize(data)
            rows = src.execute("SELECT kind, id, seq, doc FROM documents").fetchall()
            has_samples = src.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'samples'"
            ).fetchone()
            samples = (
                src.execute("SELECT device_id, metric, ts, num, raw, quality FROM samples").fetchall()
                if has_samples
                else []
            )
        finally:
            src.close()
        with self.atomic():
            self._db.execute("DELETE FROM documents")
            self._db.executemany("INSERT INTO documents (kind, id, seq, doc) VALUES (?, ?, ?, ?)", rows)
            self._db.execute("DELETE FROM samples")
            self._db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)", samples)
        self._forget()
        self.changes += 1
        self.unreadable.clear()
        self._seq = max((row[2] for row in rows), default=0)

    def close(self) -> None:
        self._db.close()

    def _forget(self) -> None:
        self._docs.clear()
        self._latest.clear()

    # Telemetry samples -----------------------------------------------------------------------
    def put_samples(self, device_id: str, rows: list[tuple[str, float, Any, float | None]]) -> None:
        """Store ``(metric, ts, value, quality)`` rows in one transaction; same (metric, ts) replaces."""
        check_text(device_id, *(m for m, _, _, _ in rows))
        encoded = [(device_id, m, ts, *_encode(v), q) for m, ts, v, q in rows]
        self._latest.pop(device_id, None)
        self.changes += 1
        with self.atomic():
            self._db.executemany("INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?, ?)", encoded)

    def sample_metrics(self, device_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT DISTINCT metric FROM samples WHERE device_id = ? ORDER BY metric", (device_id,)
        )
        return [m for (m,) in rows.fetchall()]

    def sample_count(self, device_id: str, metric: str, lo: float, hi: float) -> int:
        return self._db.execute(
            "SELECT COUNT(*) FROM samples WHERE device_id = ? AND metric = ? AND ts >= ? AND ts <= ?",
            (device_id, metric, _real(lo), _real(hi)),
        ).fetchone()[0]

    def sample_page(
        self, device_id: str, metric: str, lo: float, hi: float, offset: int, limit: int
    ) -> list[Sample]:
        """Samples with ``lo <= ts <= hi``, newest first, skipping the newest ``offset``."""
        rows = self._db.execute(
            "SELECT ts, num, raw, quality FROM samples WHERE device_id = ? AND metric = ? "
            "AND ts >= ? AND ts <= ? ORDER BY ts DESC LIMIT ? OFFSET ?",
            (device_id, metric, _real(lo), _real(hi), _count(limit), _count(offset)),
        ).fetchall()
        return [(ts, self._decode(device_id, metric, ts, num, raw), q) for ts, num, raw, q in rows]

    def sample_numbers(self, device_id: str, metric: str, lo: float, hi: float) -> list[tuple[float, Any]]:
        """``(ts, number or None)`` with ``lo <= ts <= hi``, oldest first (for aggregates and buckets)."""
        return self._db.execute(
            "SELECT ts, num FROM samples WHERE device_id = ? AND metric = ? AND ts >= ? AND ts <= ? "
            "ORDER BY ts",
            (device_id, metric, _real(lo), _real(hi)),
        ).fetchall()

    def all_sample_metrics(self) -> list[str]:
        """Every metric name with at least one stored sample, on any device."""
        return [m for (m,) in self._db.execute("SELECT DISTINCT metric FROM samples ORDER BY metric")]

    def delete_samples_before(
        self,
        cutoff: float,
        *,
        metrics: Iterable[str] | None = None,
        device_ids: Iterable[str] | None = None,
    ) -> int:
        """Delete stored samples with ``ts < cutoff`` in one transaction; the number deleted.

        ``metrics`` / ``device_ids`` restrict the deletion (``None``: any; an empty list: none).
        """
        where = ["ts < ?"]
        args: list[float | str] = [_real(cutoff)]
        for column, names in (("metric", metrics), ("device_id", device_ids)):
            if names is None:
                continue
            names = sorted(set(names))
            if not names:
                return 0
            where.append(f"{column} IN ({','.join('?' * len(names))})")
            args.extend(names)
        with self.atomic():
            cur = self._db.execute(f"DELETE FROM samples WHERE {' AND '.join(where)}", args)
        self._latest.clear()
        self.changes += 1
        return cur.rowcount

    def _decode(self, device_id: str, metric: str, ts: float, num: Any, raw: str | None) -> Any:
        """A sample's value; ``None`` (counted) for a raw value that cannot be read back."""
        if raw is None:
            return num
        try:
            return from_json(raw)
        except ValueError as err:
            self.skip_unreadable("sample", f"{device_id}/{metric}@{ts}", str(err))
            return None

    def latest_samples(self, device_id: str) -> dict[str, Sample]:
        """The newest stored sample of each of the device's metrics."""
        latest = self._latest.get(device_id)
        if latest is None:
            rows = self._db.execute(
                "SELECT metric, MAX(ts), num, raw, quality FROM samples WHERE device_id = ? GROUP BY metric",
                (device_id,),
            ).fetchall()
            latest = self._latest[device_id] = {
                m: (ts, self._decode(device_id, m, ts, num, raw), q) for m, ts, num, raw, q in rows
            }
        return dict(latest)

    # Collection primitives -------------------------------------------------------------------
    def _put(self, kind: str, id_: str, doc: dict[str, Any]) -> None:
        check_text(kind, id_)
        text = to_json(doc, f"{kind} {id_!r}")
        self._seq += 1
        self.changes += 1
        self._docs.pop((kind, id_), None)  # a failed write must not leave the new text behind
        self._db.execute(
            "INSERT INTO documents (kind, id, seq, doc) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc",
            (kind, id_, self._seq, text.decode()),
        )
        self._remember((kind, id_), text)

    def _remember(self, key: tuple[str, str], text: bytes | None) -> None:
        """Keep a document's text (``None``: known absent); the cache never passes its bound."""
        if len(self._docs) >= _MAX_REMEMBERED:
            self._docs.clear()
        self._docs[key] = text

    def _get(self, kind: str, id_: str) -> dict[str, Any] | None:
        key = (kind, id_)
        if key in self._docs:
            text = self._docs[key]
        else:
            row = self._db.execute(
                "SELECT CAST(doc AS BLOB) FROM documents WHERE kind = ? AND id = ?", key
            ).fetchone()
            text = None if row is None else row[0]
            self._remember(key, text)
        return None if text is None else self._read(kind, id_, text)

    def _read(self, kind: str, id_: str, text: bytes) -> dict[str, Any] | None:
        try:
            doc = from_json(text)
        except ValueError as err:
            self.skip_unreadable(kind, id_, str(err))
            return None
        if not isinstance(doc, dict):
            self.skip_unreadable(kind, id_, f"a JSON {type(doc).__name__}, not an object")
            return None
        return doc

    def _delete(self, kind: str, id_: str) -> bool:
        self.changes += 1
        self._docs.pop((kind, id_), None)
        cur = self._db.execute("DELETE FROM documents WHERE kind = ? AND id = ?", (kind, id_))
        self._remember((kind, id_), None)
        return cur.rowcount > 0

    def _iter(self, kind: str, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
        if prefix:  # the ids from prefix up to its successor: a range of the primary key
            rows = self._db.execute(
                "SELECT CAST(id AS BLOB), CAST(doc AS BLOB) FROM documents "
                "WHERE kind = ? AND id >= ? AND id < ? ORDER BY seq",
                (kind, prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
            )
        else:
            rows = self._db.execute(
                "SELECT CAST(id AS BLOB), CAST(doc AS BLOB) FROM documents WHERE kind = ? ORDER BY seq",
                (kind,),
            )
        for raw_id, text in rows.fetchall():
            id_ = raw_id.decode(errors="replace")
            doc = self._read(kind, id_, text)
            if doc is not None:
                yield id_, doc

    def _count(self, kind: str) -> int:
        return self._db.execute("SELECT COUNT(*) FROM documents WHERE kind = ?", (kind,)).fetchone()[0]


class Collection:
    """The repository of one kind of document, in insertion order."""

    def __init__(self, store: Store, kind: str) -> None:
        self._store = store
        self.kind = kind

    def put(self, id_: str, doc: dict[str, Any]) -> None:
        self._store._put(self.kind, id_, doc)

    def get(self, id_: str) -> dict[str, Any] | None:
        return self._store._get(self.kind, id_)

    def delete(self, id_: str) -> bool:
        return self._store._delete(self.kind, id_)

    def items(self) -> list[tuple[str, dict[str, Any]]]:
        return list(self._store._iter(self.kind))

    def items_under(self, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """The documents whose id starts with ``prefix`` (e.g. one owner's ``"<owner>:"``), ids
        without the prefix, in insertion order; the others are not read."""
        return [(id_[len(prefix) :], doc) for id_, doc in self._store._iter(self.kind, prefix)]

    def values(self) -> list[dict[str, Any]]:
        return [doc for _, doc in self._store._iter(self.kind)]

    def values_as(self, convert: Callable[[dict[str, Any]], T]) -> list[T]:
        """Every document converted by ``convert``; one it cannot convert (a field missing or of the
        wrong type: damaged, or an older version's) is skipped and counted like an unreadable row."""
        out = []
        for id_, doc in self._store._iter(self.kind):
            converted = self._convert(id_, doc, convert)
            if converted is not None:
                out.append(converted)
        return out

    def get_as(self, id_: str, convert: Callable[[dict[str, Any]], T]) -> T | None:
        """One document converted by ``convert``; ``None`` if absent or if it cannot be converted."""
        doc = self.get(id_)
        return None if doc is None else self._convert(id_, doc, convert)

    def _convert(self, id_: str, doc: dict[str, Any], convert: Callable[[dict[str, Any]], T]) -> T | None:
        try:
            return convert(doc)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            self._store.skip_unreadable(self.kind, id_, f"{type(err).__name__}: {err}")
            return None

    def __len__(self) -> int:
        return self._store._count(self.kind)

    def __contains__(self, id_: str) -> bool:
        return self.get(id_) is not None
