"""`twin run` on a state directory it cannot use says so in one line on stderr, naming the file, what
is wrong and what to do, and exits 2: never a traceback, never a new install over someone's files.
Each kind of damage is prepared for real (truncated, garbage header, garbage page, emptied, foreign,
unreadable, read-only) and the twin is started as a process on free ports."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import SCENARIOS
from twin.state_dir import DB_NAME, StateError, open_state
from twin.store import Store

PORT_FLAGS = [
    "--host", "127.0.0.1", "--port", "0", "--control-port", "0", "--mqtt-port", "0",
    "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
    "--rtsp-port", "0",
]  # fmt: skip
ROOT = os.geteuid() == 0
NOBODY = 65534
SETPRIV = shutil.which("setpriv")


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory a twin wrote: a few hundred kB of documents over many pages."""
    state = tmp_path_factory.mktemp("good") / "state"
    store = Store(state / DB_NAME)
    users = store.collection("users")
    for n in range(3000):
        users.put(f"u{n}", {"name": "x" * 200, "n": n})
    store.close()
    for leftover in state.glob(f"{DB_NAME}-*"):
        leftover.unlink()
    return state


@pytest.fixture
def place() -> Iterator[Path]:
    """A directory every user may pass through (the permission cases run the twin as nobody)."""
    where = Path(tempfile.mkdtemp(prefix="twin-state-"))
    where.chmod(0o755)
    try:
        yield where
    finally:
        for path in [where, *where.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(where)


def run_twin(state: Path, as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "twin.cli", "run", "--scenario", str(SCENARIOS / "test.yaml")]
    command += ["--state-dir", str(state), *PORT_FLAGS]
    if as_nobody and ROOT:
        command = [SETPRIV or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def assert_one_line(done: subprocess.CompletedProcess[str], names: Path, *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = lines
    assert line.startswith(f"twin: {names}") and all(w in line for w in words), line
    assert "--state-dir" in line or "backup" in line  # what to do
    return line


def copy_of(good: Path, place: Path) -> Path:
    state = place / "state"
    shutil.copytree(good, state)
    return state


def truncate(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 3)


def garbage_header(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.write(b"this is no database at all")


def garbage_page(db: Path) -> None:
    with db.open("r+b") as fh:
        fh.seek(4096 * 20)
        fh.write(bytes(range(256)) * 48)


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (truncate, "damaged"),
    "garbage header": (garbage_header, "not an SQLite database"),
    "garbage page": (garbage_page, "damaged"),
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_database_is_one_line_and_exit_2(kind: str, good: Path, place: Path) -> None:
    state = copy_of(good, place)
    damage, words = DAMAGE[kind]
    damage(state / DB_NAME)
    before = (state / DB_NAME).read_bytes()
    assert_one_line(run_twin(state), state / DB_NAME, words)
    assert (state / DB_NAME).read_bytes() == before and sorted(p.name for p in state.iterdir()) == [DB_NAME]


def test_an_emptied_database_next_to_other_state_is_no_new_install(place: Path) -> None:
    state = place / "state"
    state.mkdir()
    (state / DB_NAME).touch()
    (state / "control-token").write_text("t\n")
    (state / "notes").write_text("kept\n")
    assert_one_line(run_twin(state), state / DB_NAME, "empty (0 bytes)", "truncated")
    assert (state / DB_NAME).stat().st_size == 0


def test_a_foreign_directory_or_database_is_refused(place: Path) -> None:
    mine = place / "home"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    assert_one_line(run_twin(mine), mine, "not empty (thesis.tex)")
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    other = place / "other"
    other.mkdir()
    with sqlite3.connect(other / DB_NAME) as conn:
        conn.execute("CREATE TABLE accounts (id)")
    assert_one_line(run_twin(other), other / DB_NAME, "not the twin's", "accounts")
    a_file = place / "file"
    a_file.write_text("x")
    assert_one_line(run_twin(a_file), a_file, "not a directory")


@pytest.mark.skipif(ROOT and SETPRIV is None, reason="as root, permissions bind only another user (setpriv)")
@pytest.mark.parametrize(
    ("what", "dir_mode", "db_mode", "words"),
    [
        ("unreadable directory", 0o300, 0o600, "cannot be read"),
        ("read-only directory", 0o500, 0o600, "read-only"),
        ("read-only database", 0o700, 0o400, "read-only"),
        ("unreadable database", 0o700, 0o200, "cannot be read"),
    ],
)
def test_unreadable_or_read_only_state_is_one_line_and_exit_2(
    what: str, dir_mode: int, db_mode: int, words: str, good: Path, place: Path
) -> None:
    state = copy_of(good, place)
    db = state / DB_NAME
    if ROOT:
        os.chown(state, NOBODY, NOBODY)
        os.chown(db, NOBODY, NOBODY)
    db.chmod(db_mode)
    state.chmod(dir_mode)
    names = db if "database" in what else state
    assert_one_line(run_twin(state, as_nobody=True), names, words)


def test_a_new_install_goes_into_a_new_or_empty_directory(tmp_path: Path) -> None:
    open_state(tmp_path / "new").close()
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "control-token").write_text("t\n")  # the twin's own file
    open_state(tmp_path / "empty").close()
    (tmp_path / "touched").mkdir()
    (tmp_path / "touched" / DB_NAME).touch()  # an empty database alone: a new install
    store = open_state(tmp_path / "touched")
    assert store.generation == 0
    store.close()
    reopened = open_state(tmp_path / "touched")
    assert reopened.generation == 1
    reopened.close()
    with pytest.raises(StateError):
        open_state(tmp_path / "touched" / DB_NAME)
