"""Opening a state directory (``--state-dir``) so that what cannot be used is said in one line.

Before the store opens its database, the directory and the database are checked: a path that is
not a directory, a directory or database that cannot be read or written, a database that is not
SQLite (a garbage header), not the twin's (another program's tables), damaged (truncated, a garbage
page: SQLite's ``quick_check``) or in use by another process, and a directory that holds other
things but no database, or an empty database next to other state (a truncated file, not a new
install). Each is a :class:`StateError` whose message names the file, what is wrong and what to do;
``twin run`` prints it and exits 2. A new install starts only in a directory that does not exist
yet or is empty (but for the files the twin itself writes there).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from twin.store import Store

DB_NAME = "twin.sqlite3"
OWN = (f"{DB_NAME}-wal", f"{DB_NAME}-shm", "control-token")
"""Files the twin writes next to its database: none of them makes a directory someone else's."""
TABLES = {"documents", "samples", "opens"}
MOVE_AWAY = "move the directory away (or choose another --state-dir) to start a new install"


class StateError(Exception):
    """A state directory the twin cannot use; ``str()`` is the one line that says so."""


def _other_entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name not in (DB_NAME, *OWN))


def _check_directory(directory: Path) -> None:
    if directory.exists() and not directory.is_dir():
        raise StateError(f"{directory}: not a directory; --state-dir takes a directory (new or the twin's)")
    if not directory.exists():
        try:
            directory.mkdir(parents=True)
        except OSError as err:
            raise StateError(
                f"{directory}: cannot be created ({err.strerror}); choose a --state-dir the twin may create"
            ) from None
    if not os.access(directory, os.R_OK | os.X_OK):
        raise StateError(
            f"{directory}: cannot be read (permission denied); give the user running the twin read and "
            "write access to it (chmod u+rwx) or choose another --state-dir"
        )
    if not os.access(directory, os.W_OK):
        raise StateError(
            f"{directory}: read-only; the twin writes every change there (and its WAL next to the "
            "database): make it writable (chmod u+w) or choose another --state-dir"
        )


def _check_database(directory: Path, db: Path) -> None:
    others = _other_entries(directory)
    if not db.exists():
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            raise StateError(
                f"{directory}: holds no {DB_NAME} but is not empty ({shown}); a new install starts only "
                "in an empty directory: choose a new or empty --state-dir"
            )
        return
    if not db.is_file():
        raise StateError(f"{db}: not a file; move it away or choose another --state-dir")
    if not os.access(db, os.R_OK):
        raise StateError(
            f"{db}: cannot be read (permission denied); give the user running the twin read and write "
            "access to it (chmod u+rw) or choose another --state-dir"
        )
    if not os.access(db, os.W_OK):
        raise StateError(
            f"{db}: read-only; the twin writes every change there: make it writable (chmod u+w) or "
            "choose another --state-dir"
        )
    wal = directory / f"{DB_NAME}-wal"
    if db.stat().st_size == 0 and (others or (wal.exists() and wal.stat().st_size > 0)):
        raise StateError(
            f"{db}: empty (0 bytes) next to other state; it was truncated, not a new install: restore "
            f"it from a backup or {MOVE_AWAY}"
        )
    if db.stat().st_size:
        _check_content(db)


def _check_content(db: Path) -> None:
    """The database is SQLite, the twin's and whole; nothing is written to it here."""
    wal = db.with_name(f"{DB_NAME}-wal")
    # Without a WAL to replay, nothing (no -wal, no -shm) is made next to a file that may be damaged.
    immutable = "" if wal.exists() and wal.stat().st_size else "&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro{immutable}", uri=True)
    except sqlite3.Error as err:
        raise StateError(f"{db}: cannot be opened ({err}); {MOVE_AWAY}") from None
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables >= TABLES:
            shown = ", ".join(sorted(tables)[:4]) or "no tables"
            raise StateError(f"{db}: an SQLite database, but not the twin's (it holds {shown}); {MOVE_AWAY}")
        problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            lines = [ln.strip() for p in problems for ln in p.splitlines() if ln.strip() and "***" not in ln]
            raise StateError(
                f"{db}: damaged ({'; '.join(lines[:2]) or 'quick_check failed'}); "
                f"restore it from a backup or {MOVE_AWAY}"
            )
    except sqlite3.DatabaseError as err:
        raise StateError(_explain(db, err)) from None
    finally:
        conn.close()


def _explain(db: Path, err: sqlite3.Error) -> str:
    text = str(err)
    if "not a database" in text:
        return (
            f"{db}: not an SQLite database (its header is not SQLite's), so not the twin's state; {MOVE_AWAY}"
        )
    if "malformed" in text or "corrupt" in text:
        return f"{db}: damaged ({text}); restore it from a backup or {MOVE_AWAY}"
    if "locked" in text or "busy" in text:
        return f"{db}: in use by another process ({text}); stop the other twin or choose another --state-dir"
    if "readonly" in text or "read-only" in text:
        return f"{db}: read-only ({text}); make it and its directory writable or choose another --state-dir"
    return f"{db}: cannot be used ({text}); {MOVE_AWAY}"


def open_state(directory: Path) -> Store:
    """The store of the state directory ``directory``, or :class:`StateError` saying why not."""
    _check_directory(directory)
    db = directory / DB_NAME
    _check_database(directory, db)
    try:
        store = Store(db)
    except sqlite3.Error as err:
        raise StateError(_explain(db, err)) from None
    except OSError as err:
        raise StateError(f"{db}: cannot be opened ({err.strerror}); {MOVE_AWAY}") from None
    return store
