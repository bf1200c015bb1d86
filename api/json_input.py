"""How each vendor's server decodes a JSON request body, applied where the twin decodes one.

Both APIs decode every JSON body through :func:`loads` with their own :class:`JsonPolicy`, so a body
the real server would refuse is refused before anything is stored, and a value it would accept
comes out in a form every response can serialise again. A refusal is a :class:`ValueError` (the
callers' "malformed JSON" path: 400 in the API's own error shape).

The automation server (axum's ``Json`` over serde_json, without ``arbitrary_precision``):

- a lone UTF-16 surrogate (``"\\ud800"``) or invalid UTF-8 is a syntax error: refused;
- the recursion limit is 128: 127 nested arrays or objects parse, the 128th is refused;
- an integer outside i64/u64 is read as an f64: a free-form value keeps the float, an integer
  field refuses it (422, as pydantic refuses a float past i64);
- ``NaN``, ``Infinity`` and numbers past f64 (``1e400``) are syntax errors: refused;
- a key repeated in the body's top-level object is a derived struct's "duplicate field" (422) when
  the struct declares that field (:func:`top_level_repeats`); in a map or ``Value`` the last wins.

orjson decodes exactly like serde_json on every point but depth (its limit is 1024), so the
automation policy is orjson behind a depth check.

The edge gateway (Gin's ``ShouldBindJSON`` over Go's ``encoding/json``):

- a lone surrogate escape and invalid UTF-8 in a string become U+FFFD; the body is accepted;
- Go's nesting limit is 10000; the twin refuses past 512 levels (Python's decoder and encoder
  recurse, and nothing the device's handlers bind is deeper than a few levels; a deeper body
  differs only when its deep part sits in a field Go ignores);
- every number in a free-form value is a float64 to Go; the twin keeps integers in the i64/u64
  range as integers and reads larger ones as floats, which an integer field refuses (400) as Go's
  does;
- ``NaN``, ``Infinity`` and numbers past float64 are refused;
- a repeated key: the last wins.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson

I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


class MalformedJson(ValueError):
    """A body the vendor's decoder refuses."""


@dataclass(frozen=True, slots=True)
class JsonPolicy:
    name: str
    max_depth: int
    """The deepest nesting of arrays and objects accepted."""
    lenient_text: bool
    """Go's reading of text: lone surrogates and invalid UTF-8 become U+FFFD instead of an error."""
    refuses_repeated_fields: bool
    """A body model's field repeated in the top-level object is refused (serde's derived structs)."""


SERDE = JsonPolicy("serde_json", max_depth=127, lenient_text=False, refuses_repeated_fields=True)
GO = JsonPolicy("encoding/json", max_depth=512, lenient_text=True, refuses_repeated_fields=False)


def loads(raw: bytes, policy: JsonPolicy) -> Any:
    """``raw`` decoded the way ``policy``'s server decodes it; :class:`ValueError` if it refuses."""
    if too_deep(raw, policy.max_depth):
        raise MalformedJson(f"nesting deeper than {policy.max_depth} levels")
    if not policy.lenient_text:
        return orjson.loads(raw)
    text = raw.decode("utf-8", errors="replace")
    value = json.loads(text, parse_int=_go_int, parse_float=_finite, parse_constant=_refuse)
    return _replace_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def is_json_type(content_type: str) -> bool:
    """``application/json`` or ``application/*+json`` (what FastAPI decodes, and the gateway's guard
    accepts)."""
    kind = content_type.split(";")[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


def top_level_repeats(raw: bytes, names: frozenset[str]) -> set[str]:
    """Which of ``names`` occur more than once as keys of the body's top-level object (which must
    already have parsed). Cheap unless one of them is written twice or escapes are used."""
    if b"\\u" not in raw and all(raw.count(b'"%s"' % n.encode()) < 2 for n in names):
        return set()
    repeated: list[set[str]] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        repeated.append({k for k, n in Counter(k for k, _ in items).items() if n > 1})
        return dict(items)

    value = json.loads(raw.decode("utf-8", errors="replace"), object_pairs_hook=pairs)
    return (repeated[-1] & names) if isinstance(value, dict) and repeated else set()


# Depth ---------------------------------------------------------------------------------------
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.S)
_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(raw: bytes, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels deep, without recursing: strings
    removed, brackets kept, each pass deletes the innermost pairs. A body too broken to measure is
    left to the decoder to refuse."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", raw).translate(_BRACKETS, _NOT_BRACKETS)
    for _ in range(limit):
        shorter = brackets.replace(b"()", b"")
        if len(shorter) == len(brackets):
            return False
        brackets = shorter
    return b"()" in brackets


# Go's reading of numbers and text ------------------------------------------------------------
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _go_int(text: str) -> int | float:
    value = int(text)
    return value if I64_MIN <= value <= U64_MAX else _finite(text)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise MalformedJson(f"number {text[:40]} out of range")
    return value


def _refuse(literal: str) -> Any:
    raise MalformedJson(f"invalid literal {literal}")


def _replace_surrogates(value: Any) -> Any:
    """Escapes of a lone surrogate as U+FFFD, as Go's decoder writes them (valid pairs were already
    joined by the decoder)."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value
