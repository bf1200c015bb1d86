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


def test_items_under_one_prefix_in_insertion_order() -> None:
    docs = Store().collection("owned")
    for id_ in ("cam-1:b", "cam-10:a", "cam-1:a", "cam-1", "cam-1;x", "other:cam-1:c"):
        docs.put(id_, {"id": id_})
    docs.put("cam-1:b", {"id": "again"})
    assert docs.items_under("cam-1:") == [("b", {"id": "again"}), ("a", {"id": "cam-1:a"})]
    assert docs.items_under("none:") == []


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


def test_remembered_documents_follow_every_write() -> None:
    store = Store()
    docs = store.collection("devices")
    assert docs.get("d1") is None  # a remembered absence...
    docs.put("d1", {"n": 1})
    assert docs.get("d1") == {"n": 1}  # ...is replaced by the write
    got = docs.get("d1")
    got["n"] = 99  # callers get their own copy
    assert docs.get("d1") == {"n": 1}
    data = store.dump()
    docs.put("d1", {"n": 2})
    store.load(data)
    assert docs.get("d1") == {"n": 1}
    docs.delete("d1")
    assert docs.get("d1") is None
    docs.put("d1", {"n": 3})
    store.clear()
    assert docs.get("d1") is None


def test_remembered_latest_samples_follow_every_write() -> None:
    store = Store()
    store.put_samples("d1", [("t", 10.0, 1.5, None)])
    assert store.latest_samples("d1") == {"t": (10.0, 1.5, None)}
    store.put_samples("d1", [("t", 20.0, 2.5, None), ("h", 20.0, "x", 0.5)])
    assert store.latest_samples("d1") == {"t": (20.0, 2.5, None), "h": (20.0, "x", 0.5)}
    data = store.dump()
    store.delete_samples_before(30.0)
    assert store.latest_samples("d1") == {}
    store.load(data)
    assert store.latest_samples("d1")["t"] == (20.0, 2.5, None)
    store.clear()
    assert store.latest_samples("d1") == {}
