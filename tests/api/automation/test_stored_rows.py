"""Rows an older version stored (before writes were checked) or a damaged disk left: the lists they
belong to still answer 200, without them, before and after a restart; the store counts them."""

from __future__ import annotations

from pathlib import Path

from tests.api.lists import apis, build_twin
from twin.serve import Twin

POISON = [  # (kind, id, stored text)
    ("dashboards", "lone-surrogate", '{"id":"lone-surrogate","name":"\\ud800","layout":{},"components":[]}'),
    ("dashboards", "missing-fields", '{"id":"missing-fields"}'),
    ("dashboards", "wrong-types", '{"id":"wrong-types","name":"x","layout":[],"components":[],'
     '"created_at":0,"updated_at":0}'),
    ("api_keys", "lone-surrogate", '{"id":"k","name":"\\udc00","permissions":["*"],"active":true,'
     '"created_at":0,"hash":"00"}'),
    ("api_keys", "no-hash", '{"id":"k2","name":"x","permissions":["*"],"active":true,"created_at":0}'),
    ("dashboard_shares", "ds_broken", '{"token":"ds_broken"'),
]  # fmt: skip
OLD = (  # readable: an integer past 64 bits is read as a float, as the server reads one
    "dashboards", "huge-integer", '{"id":"huge-integer","name":"old","layout":{"n":1' + "0" * 30 + "},"
    '"components":[],"created_at":0,"updated_at":0}',
)  # fmt: skip


def poison(twin: Twin) -> None:
    db = twin.world.store._db
    for seq, (kind, id_, text) in enumerate([*POISON, OLD], start=10_000):
        db.execute("INSERT INTO documents (kind, id, seq, doc) VALUES (?, ?, ?, ?)", (kind, id_, seq, text))


async def lists_answer(twin: Twin, *, sign_up: bool) -> None:
    async with apis(twin, sign_up=sign_up) as (automation, _):
        boards = await automation.request("GET", "/api/dashboards")
        assert boards.status_code == 200, boards.text
        listed = boards.json()["data"]["dashboards"]
        assert [(b["name"], b["layout"].get("n")) for b in listed] == [("kept", None), ("old", 1e30)]
        keys = await automation.request("GET", "/api/auth/keys")
        assert keys.status_code == 200, keys.text
        assert [k["name"] for k in keys.json()["keys"]] == ["Default API Key"]
        status = await automation.request("GET", "/api/auth/status")
        assert status.status_code == 200 and status.json()["key_count"] == 1
        assert (await automation.request("GET", "/api/dashboards/huge-integer")).status_code == 200
        for board in ("lone-surrogate", "missing-fields", "wrong-types"):
            resp = await automation.request("GET", f"/api/dashboards/{board}")
            assert resp.status_code == 404, resp.text
        assert (await automation.request("GET", "/api/share/ds_broken")).status_code == 404


async def test_rows_that_cannot_be_read_are_skipped_not_fatal(tmp_path: Path) -> None:
    twin = build_twin(tmp_path)
    async with apis(twin) as (automation, _):
        kept = await automation.request("POST", "/api/dashboards", json={"name": "kept"})
        assert kept.status_code == 200, kept.text
    poison(twin)
    await lists_answer(twin, sign_up=False)
    skipped = {id_ for _, id_ in twin.world.store.unreadable}
    assert skipped == {id_ for _, id_, _ in POISON}
    twin.world.store.close()

    again = build_twin(tmp_path)
    await lists_answer(again, sign_up=False)
    assert {id_ for _, id_ in again.world.store.unreadable} == skipped
