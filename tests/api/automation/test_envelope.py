"""The success envelope: request ids and the rendered response."""

from __future__ import annotations

import uuid

import orjson

from api.automation.schemas import Json, ok, request_id


def test_request_ids_are_distinct_version_4_uuids_across_pool_refills() -> None:
    ids = [request_id() for _ in range(600)]  # more than two pools' worth (256 ids a pool)
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_the_envelope_is_what_the_json_response_renders() -> None:
    answer = ok({"a": [1, 2.5, None], "b": "é"}, 1767225600.25)
    body = orjson.loads(answer.body)
    assert body["success"] is True and body["data"] == {"a": [1, 2.5, None], "b": "é"}
    assert body["meta"]["timestamp"] == "2026-01-01T00:00:00.250000000Z"
    same = Json(body)
    assert (answer.status_code, answer.raw_headers, answer.body) == (
        same.status_code,
        same.raw_headers,
        same.body,
    )
    assert answer.background is None and answer.media_type == "application/json"
