"""What the store writes is readable again, groups of writes are atomic, and a row that cannot be
read is skipped and counted (twin/store.py)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from hardware.ports.errors import InvalidInput
from twin.store import Store


@pytest.mark.parametrize(
    "doc",
    [{"n": 2**64}, {"n": -(2**63) - 1}, {"name": "\ud800"}, {"\udc00": 1}, {"nested": [{"n": 10**30}]}],
)
def test_a_document_no_client_could_read_is_refused_before_writing(doc: dict) -> None:
    store = Store()
    boards = store.collection("dashboards")
    with pytest.raises(InvalidInput, match="cannot be stored as JSON"):
        boards.put("b1", doc)
    assert len(boards) == 0 and boards.get("b1") is None
    with pytest.raises(InvalidInput, match="not valid text"):
        boards.put("\ud800", {"n": 1})


def test_what_is_written_reads_back_as_written() -> None:
    boards = Store().collection("dashboards")
    doc = {"u64": 2**64 - 1, "i64": -(2**63), "f": 1.5, "text": "\U0001f600", "b": [True, None]}
    boards.put("b1", doc)
    assert boards.get("b1") == doc and boards.values() == [doc]
    boards.put("b2", {"nan": float("nan"), 3: "int key"})  # as every JSON client reads them
    assert boards.get("b2") == {"nan": None, "3": "int key"}


def test_atomic_keeps_all_writes_or_none() -> None:
    store = Store()
    boards = store.collection("dashboards")
    boards.put("keep", {"n": 0})
    with pytest.raises(InvalidInput), store.atomic():
        boards.put("a", {"n": 1})
        boards.put("keep", {"n": 2})
        boards.delete("keep")
        boards.put("b", {"n": 2**64})
    assert boards.items() == [("keep", {"n": 0})]
    with store.atomic():
        boards.put("a", {"n": 1})
        with store.atomic():
            boards.put("b", {"n": 2})
    assert [k for k, _ in boards.items()] == ["keep", "a", "b"]


def damage(path: Path) -> Store:
    """A store on ``path`` with readable rows around rows an older version or a damaged disk left."""
    store = Store(path)
    boards = store.collection("dashboards")
    boards.put("good1", {"name": "one"})
    rows = [
        ("surrogate", '{"name":"\\ud800"}'),  # what the standard library wrote before the checks
        ("huge", '{"n":1' + "0" * 400 + "}"),
        ("broken", '{"name": "x"'),
        ("array", "[1, 2]"),
        ("nan", '{"n": NaN}'),
    ]
    for seq, (id_, text) in enumerate(rows, start=100):
        store._db.execute("INSERT INTO documents VALUES ('dashboards', ?, ?, ?)", (id_, seq, text))
    store._db.execute(
        "INSERT INTO documents VALUES ('dashboards', 'bytes', 200, CAST(X'7B226E223A22FF227D' AS TEXT))"
    )
    boards.put("good2", {"name": "two"})
    return store


def test_unreadable_rows_are_skipped_counted_and_logged_once(tmp_path: Path, caplog) -> None:
    path = tmp_path / "twin.sqlite3"
    store = damage(path)
    boards = store.collection("dashboards")
    with caplog.at_level(logging.WARNING, logger="twin.store"):
        assert [k for k, _ in boards.items()] == ["good1", "good2", "nan"]
        assert math.isnan(boards.get("nan")["n"])  # an older version's NaN is still readable
        assert boards.values()[0] == {"name": "one"}
        assert boards.get("surrogate") is None and "surrogate" not in boards
    unreadable = {id_ for _, id_ in store.unreadable}
    assert unreadable == {"surrogate", "huge", "broken", "array", "bytes"}
    assert len(caplog.records) == 5 and "5 unreadable so far" in caplog.records[-1].getMessage()
    boards.put("surrogate", {"name": "fixed"})  # a write replaces the damaged row
    assert boards.get("surrogate") == {"name": "fixed"}
    store.close()

    again = Store(path)
    assert [k for k, _ in again.collection("dashboards").items()] == ["good1", "good2", "surrogate", "nan"]
    assert {id_ for _, id_ in again.unreadable} == {"huge", "broken", "array", "bytes"}


def test_documents_a_model_cannot_convert_are_skipped() -> None:
    store = Store()
    boards = store.collection("dashboards")
    boards.put("a", {"name": "one"})
    boards.put("b", {"title": "no name"})
    assert boards.values_as(lambda d: d["name"]) == ["one"]
    assert boards.get_as("b", lambda d: d["name"]) is None
    assert boards.get_as("a", lambda d: d["name"]) == "one"
    assert store.unreadable == {("dashboards", "b"): "KeyError: 'name'"}


def test_sample_values_are_checked_and_read_back() -> None:
    store = Store()
    store.put_samples(
        "d1", [("count", 1.0, 2**63, None), ("small", 1.0, 2**62, None), ("tag", 1.0, "on", None)]
    )
    latest = store.latest_samples("d1")
    assert {m: v for m, (_, v, _) in latest.items()} == {"count": 2**63, "small": 2**62, "tag": "on"}
    with pytest.raises(InvalidInput):
        store.put_samples("d1", [("bad", 2.0, "\ud800", None)])
    with pytest.raises(InvalidInput):
        store.put_samples("d1", [("\ud800", 2.0, 1, None)])
    store._db.execute("INSERT INTO samples VALUES ('d1', 'old', 3.0, NULL, '\"\\ud800\"', NULL)")
    assert store.sample_page("d1", "old", 0, 10, 0, 10) == [(3.0, None, None)]
    assert ("sample", "d1/old@3.0") in store.unreadable


def test_sample_queries_take_any_integer_a_client_sends() -> None:
    store = Store()
    store.put_samples("d1", [("t", 1.0, 20.5, None), ("t", 2.0, 21.0, None)])
    huge = 2**70
    assert store.sample_count("d1", "t", -huge, huge) == 2
    assert [ts for ts, _, _ in store.sample_page("d1", "t", -(10**400), 10**400, 0, huge)] == [2.0, 1.0]
    assert store.sample_page("d1", "t", 0, huge, huge, 10) == []
    assert store.sample_numbers("d1", "t", 1.5, huge) == [(2.0, 21.0)]
    assert store.delete_samples_before(10**400) == 2
