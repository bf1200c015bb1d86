"""Each API's JSON input policy (api/json_input.py), decoder by decoder."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from api.json_input import GO, SERDE, is_json_type, loads, too_deep, top_level_repeats
from tests.api.lists import API_KEY
from tests.conftest import admin_token, gateway_token
from twin.settings import Settings


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    "raw",
    [b'"\\ud800"', b'{"\\udc00":1}', b'"\xff"', b"[NaN]", b"[Infinity]", b"[-Infinity]", b"[1e400]", b"{"],
)
def test_serde_refuses(raw: bytes) -> None:
    with pytest.raises(ValueError):
        loads(raw, SERDE)


def test_serde_depth_limit_is_128() -> None:
    assert loads(nested(127), SERDE)
    with pytest.raises(ValueError, match="deeper than 127"):
        loads(nested(128), SERDE)


def test_serde_reads_integers_past_64_bits_as_floats() -> None:
    value = loads(
        b"[18446744073709551616, 18446744073709551615, -9223372036854775808, -9223372036854775809]", SERDE
    )
    assert value == [2.0**64, 2**64 - 1, -(2**63), -(2.0**63)]
    assert [type(v) for v in value] == [float, int, int, float]


def test_repeated_keys_last_wins() -> None:
    assert loads(b'{"a":1,"a":2}', SERDE) == {"a": 2} == loads(b'{"a":1,"a":2}', GO)


def test_go_replaces_lone_surrogates_and_invalid_utf8() -> None:
    value = loads(b'{"\\ud800k":"a\\udfffb","pair":"\\ud83d\\ude00","raw":"\xff"}', GO)
    assert value == {"\ufffdk": "a\ufffdb", "pair": "\U0001f600", "raw": "\ufffd"}


@pytest.mark.parametrize("raw", [b"[NaN]", b"[Infinity]", b"[-Infinity]", b"[1e400]", b"[-1e400]", b"{"])
def test_go_refuses(raw: bytes) -> None:
    with pytest.raises(ValueError):
        loads(raw, GO)


def test_go_depth_and_numbers() -> None:
    assert loads(nested(512), GO)
    with pytest.raises(ValueError, match="deeper than 512"):
        loads(nested(513), GO)
    assert loads(b"[18446744073709551616, 5]", GO) == [2.0**64, 5]


def test_depth_ignores_brackets_in_strings() -> None:
    text = b'{"a":"[[[[\\"[[[[","b":[[1]]}'
    assert not too_deep(text, 3)
    assert too_deep(text, 2)
    assert not too_deep(b"[" * 10, 3)  # unbalanced: the decoder refuses it


def test_top_level_repeats() -> None:
    names = frozenset({"name", "layout"})
    assert top_level_repeats(b'{"name":"a","name":"b","x":1,"x":2}', names) == {"name"}
    assert top_level_repeats(b'{"n\\u0061me":"a","name":"b"}', names) == {"name"}
    assert top_level_repeats(b'{"layout":{"name":1,"name":2},"name":"a"}', names) == set()
    assert top_level_repeats(b'[{"name":1,"name":2}]', names) == set()


def test_json_types() -> None:
    assert is_json_type("application/json; charset=utf-8")
    assert is_json_type("Application/Problem+JSON")
    assert not is_json_type("text/json") and not is_json_type("")


# Through the apps ------------------------------------------------------------------------------
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, api_key=API_KEY)


async def test_automation_refuses_what_serde_refuses_stores_nothing(
    automation: httpx.AsyncClient,
) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}", **JSON}
    key = {"X-API-Key": API_KEY, **JSON}
    for raw in (b'{"name":"\\ud800"}', b'{"name":"k","permissions":[NaN]}', b'{"name":' + nested(128) + b"}"):
        resp = await automation.post("/api/auth/keys", content=raw, headers=key)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "BAD_REQUEST", resp.text
        board = await automation.post("/api/dashboards", content=raw, headers=auth)
        assert board.status_code == 400 and board.json()["error"]["code"] == "BAD_REQUEST", board.text
    keys = await automation.get("/api/auth/keys", headers=key)
    assert keys.status_code == 200 and [k["name"] for k in keys.json()["keys"]] == ["Default API Key"]
    boards = await automation.get("/api/dashboards", headers=auth)
    assert boards.status_code == 200 and boards.json()["data"]["count"] == 0


async def test_automation_keeps_a_huge_integer_as_serde_keeps_it(automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}", **JSON}
    raw = b'{"name":"big","layout":{"n":18446744073709551616,"m":18446744073709551615}}'
    assert (await automation.post("/api/dashboards", content=raw, headers=auth)).status_code == 200
    listed = (await automation.get("/api/dashboards", headers=auth)).json()["data"]["dashboards"]
    assert listed[0]["layout"]["n"] == 2.0**64 and listed[0]["layout"]["m"] == 2**64 - 1
    too_big = b'{"name":"x","sort_order":18446744073709551616}'  # an integer field: 422, as serde's
    board = listed[0]["id"]
    resp = await automation.put(f"/api/dashboards/{board}", content=too_big, headers=auth)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "VALIDATION_ERROR"


async def test_automation_refuses_a_repeated_field(automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}", **JSON}
    resp = await automation.post("/api/dashboards", content=b'{"name":"a","name":"b"}', headers=auth)
    assert resp.status_code == 422
    assert resp.json()["error"] == {
        "code": "VALIDATION_ERROR",
        "message": "name: duplicate field `name`",
        "request_id": None,
    }
    nested_repeat = b'{"name":"a","layout":{"rows":2,"rows":3}}'  # a free-form value: the last wins
    created = await automation.post("/api/dashboards", content=nested_repeat, headers=auth)
    assert created.status_code == 200 and created.json()["data"]["layout"]["rows"] == 3


async def test_gateway_reads_text_as_go_does(gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway), **JSON}
    raw = b'{"name":"cam\\ud800\xff","key":"p1","description":"\\udc00"}'
    resp = await gateway.post("/api/v1/dev/projects", content=raw, headers=auth)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["name"] == "cam\ufffd\ufffd"
    listed = await gateway.get("/api/v1/dev/projects", headers=auth)
    assert listed.status_code == 200
    assert [(p["name"], p["description"]) for p in listed.json()["data"]["projects"]] == [
        ("cam\ufffd\ufffd", "\ufffd")
    ]
    for raw in (b'{"name":"x","key":"p2","n":NaN}', b'{"name":"x","key":"p2","n":' + nested(513) + b"}"):
        resp = await gateway.post("/api/v1/dev/projects", content=raw, headers=auth)
        assert resp.status_code == 400 and resp.json()["code"] == 1001, resp.text
