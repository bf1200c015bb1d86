"""Durable state: a small repository layer over SQLite.

Everything a client creates (users, sessions, keys, devices, rules...) lives here as JSON
documents grouped by kind. With a state directory the database is a WAL-mode file and every
write is committed before the call returns, so nothing a client was told succeeded is lost on a
restart or ``kill -9``; without one it is an in-memory database.

The store is its database's only writer, so it keeps what it last read or wrote of a document (its
JSON text) and each device's latest samples in memory: the API's hottest reads (a device's
document and current values) skip SQL. Every write path updates or drops those entries.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

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
"""

_MAX_REMEMBERED = 100_000
"""Documents (or known absences) kept in memory before the store starts over."""

Sample = tuple[float, Any, float | None]
"""One stored telemetry sample: (unix seconds, value, quality)."""


def _encode(value: Any) -> tuple[Any, str | None]:
    """Numbers go in ``num`` (aggregatable); anything else as JSON text in ``raw``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value, None
    return None, json.dumps(value, separators=(",", ":"))


def _decode(num: Any, raw: str | None) -> Any:
    return json.loads(raw) if raw is not None else num


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
        self._docs: dict[tuple[str, str], str | None] = {}
        self._latest: dict[str, dict[str, Sample]] = {}
        self._seq = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM documents").fetchone()[0]

    def collection(self, kind: str) -> Collection:
        return Collection(self, kind)

    def healthy(self) -> bool:
        try:
            self._db.execute("SELECT 1").fetchone()
        except sqlite3.Error:
            return False
        return True

    def clear(self) -> None:
        self._db.execute("DELETE FROM documents")
        self._db.execute("DELETE FROM samples")
        self._forget()
        self._seq = 0

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
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("DELETE FROM documents")
            self._db.executemany("INSERT INTO documents (kind, id, seq, doc) VALUES (?, ?, ?, ?)", rows)
            self._db.execute("DELETE FROM samples")
            self._db.executemany("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?)", samples)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        self._forget()
        self._seq = max((row[2] for row in rows), default=0)

    def close(self) -> None:
        self._db.close()

    def _forget(self) -> None:
        self._docs.clear()
        self._latest.clear()

    # Telemetry samples -----------------------------------------------------------------------
    def put_samples(self, device_id: str, rows: list[tuple[str, float, Any, float | None]]) -> None:
        """Store ``(metric, ts, value, quality)`` rows in one transaction; same (metric, ts) replaces."""
        encoded = [(device_id, m, ts, *_encode(v), q) for m, ts, v, q in rows]
        self._latest.pop(device_id, None)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany("INSERT OR REPLACE INTO samples VALUES (?, ?, ?, ?, ?, ?)", encoded)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def sample_metrics(self, device_id: str) -> list[str]:
        rows = self._db.execute(
            "SELECT DISTINCT metric FROM samples WHERE device_id = ? ORDER BY metric", (device_id,)
        )
        return [m for (m,) in rows.fetchall()]

    def sample_count(self, device_id: str, metric: str, lo: float, hi: float) -> int:
        return self._db.execute(
            "SELECT COUNT(*) FROM samples WHERE device_id = ? AND metric = ? AND ts >= ? AND ts <= ?",
            (device_id, metric, lo, hi),
        ).fetchone()[0]

    def sample_page(
        self, device_id: str, metric: str, lo: float, hi: float, offset: int, limit: int
    ) -> list[Sample]:
        """Samples with ``lo <= ts <= hi``, newest first, skipping the newest ``offset``."""
        rows = self._db.execute(
            "SELECT ts, num, raw, quality FROM samples WHERE device_id = ? AND metric = ? "
            "AND ts >= ? AND ts <= ? ORDER BY ts DESC LIMIT ? OFFSET ?",
            (device_id, metric, lo, hi, limit, offset),
        ).fetchall()
        return [(ts, _decode(num, raw), q) for ts, num, raw, q in rows]

    def sample_numbers(self, device_id: str, metric: str, lo: float, hi: float) -> list[tuple[float, Any]]:
        """``(ts, number or None)`` with ``lo <= ts <= hi``, oldest first (for aggregates and buckets)."""
        return self._db.execute(
            "SELECT ts, num FROM samples WHERE device_id = ? AND metric = ? AND ts >= ? AND ts <= ? "
            "ORDER BY ts",
            (device_id, metric, lo, hi),
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
        where, args = ["ts < ?"], [cutoff]
        for column, names in (("metric", metrics), ("device_id", device_ids)):
            if names is None:
                continue
            names = sorted(set(names))
            if not names:
                return 0
            where.append(f"{column} IN ({','.join('?' * len(names))})")
            args.extend(names)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            cur = self._db.execute(f"DELETE FROM samples WHERE {' AND '.join(where)}", args)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
        self._latest.clear()
        return cur.rowcount

    def latest_samples(self, device_id: str) -> dict[str, Sample]:
        """The newest stored sample of each of the device's metrics."""
        latest = self._latest.get(device_id)
        if latest is None:
            rows = self._db.execute(
                "SELECT metric, MAX(ts), num, raw, quality FROM samples WHERE device_id = ? GROUP BY metric",
                (device_id,),
            ).fetchall()
            latest = self._latest[device_id] = {m: (ts, _decode(num, raw), q) for m, ts, num, raw, q in rows}
        return dict(latest)

    # Collection primitives -------------------------------------------------------------------
    def _put(self, kind: str, id_: str, doc: dict[str, Any]) -> None:
        self._seq += 1
        text = json.dumps(doc, separators=(",", ":"), sort_keys=True)
        self._docs.pop((kind, id_), None)  # a failed write must not leave the new text behind
        self._db.execute(
            "INSERT INTO documents (kind, id, seq, doc) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc",
            (kind, id_, self._seq, text),
        )
        self._docs[(kind, id_)] = text

    def _get(self, kind: str, id_: str) -> dict[str, Any] | None:
        key = (kind, id_)
        if key in self._docs:
            text = self._docs[key]
        else:
            if len(self._docs) >= _MAX_REMEMBERED:  # unknown ids asked for must not grow it forever
                self._docs.clear()
            row = self._db.execute("SELECT doc FROM documents WHERE kind = ? AND id = ?", key).fetchone()
            text = self._docs[key] = None if row is None else row[0]
        return None if text is None else json.loads(text)

    def _delete(self, kind: str, id_: str) -> bool:
        self._docs.pop((kind, id_), None)
        cur = self._db.execute("DELETE FROM documents WHERE kind = ? AND id = ?", (kind, id_))
        self._docs[(kind, id_)] = None
        return cur.rowcount > 0

    def _iter(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        rows = self._db.execute("SELECT id, doc FROM documents WHERE kind = ? ORDER BY seq", (kind,))
        for id_, doc in rows.fetchall():
            yield id_, json.loads(doc)

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

    def values(self) -> list[dict[str, Any]]:
        return [doc for _, doc in self._store._iter(self.kind)]

    def __len__(self) -> int:
        return self._store._count(self.kind)

    def __contains__(self, id_: str) -> bool:
        return self.get(id_) is not None
