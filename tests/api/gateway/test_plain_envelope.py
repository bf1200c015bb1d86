"""The envelope rendered by orjson for data without floats is the stdlib's, byte for byte."""

from __future__ import annotations

import httpx
from fastapi.responses import JSONResponse

from api.gateway.schemas import ok, ok_plain
from tests.conftest import gateway_token


def test_plain_data_renders_as_the_stdlib_does() -> None:
    for data in (
        {"version": "1.2.3", "services": {"ai-runtime": True, "media": False}},
        {"text": 'quote " backslash \\ tab \t newline \n nul \x00 del \x7f', "n": -(2**53), "none": None},
        {"unicode": "é 中文 \u2028 \U0001f600", "nested": [{"a": []}, {}, [1, [2, [3]]]], "empty": ""},
    ):
        fast, stdlib = ok_plain(data), ok(data)
        assert fast.body == stdlib.body
        assert (fast.status_code, fast.raw_headers, fast.background) == (
            stdlib.status_code,
            stdlib.raw_headers,
            stdlib.background,
        )
        assert isinstance(fast, JSONResponse)


async def test_system_info_is_the_devices_shape(gateway: httpx.AsyncClient) -> None:
    token = await gateway_token(gateway)
    answer = await gateway.get("/api/v1/system/info", headers={"Authorization": token})
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert list(body) == ["code", "message", "data"] and body["code"] == 0 and body["message"] == "Success"
    assert set(body["data"]) == {"version", "services"}
    assert all(value is True for value in body["data"]["services"].values())
    assert answer.content == ok(body["data"]).body
