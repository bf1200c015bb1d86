from __future__ import annotations

from pathlib import Path

from twin.store import Store


def test_collection_round_trip() -> None:
    store = Store()
    users = store.collection("users")
    users.put("a", {"n": 1})
    users.put("b", {"n": 2})
    users.put("a", {"n": 3})
    assert users.get("a") == {"n": 3}
    assert [k for k, _ in users.items()] == ["a", "b"]
    assert "b" in users and len(users) == 2
    assert users.delete("b") and not users.delete("b")
    assert store.collection("other").values() == []


def test_state_dir_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state" / "twin.sqlite3"
    store = Store(path)
    store.collection("devices").put("d1", {"name": "x"})
    store.close()
    again = Store(path)
    assert again.collection("devices").get("d1") == {"name": "x"}
    mode = again._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_dump_and_load_replace_everything(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.collection("k").put("1", {"v": 1})
    data = store.dump()
    store.collection("k").put("2", {"v": 2})
    store.load(data)
    assert [k for k, _ in store.collection("k").items()] == ["1"]
    store.collection("k").put("3", {"v": 3})
    assert [k for k, _ in store.collection("k").items()] == ["1", "3"]
