"""The store's JSON codec: what is written is what any JSON client can read back.

A document or value that does not encode (an integer past 64 bits, a lone UTF-16 surrogate, a key
that is not text) is refused with ``InvalidInput`` before anything is written; a stored text that no
JSON client could read again is a ``ValueError`` the store turns into a skipped row.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from hardware.ports.errors import InvalidInput

_JSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def to_json(value: Any, what: str = "value") -> bytes:
    """Compact JSON with sorted keys, or ``InvalidInput`` if a JSON client could not read it back."""
    try:
        return orjson.dumps(value, option=_JSON_OPTIONS)
    except orjson.JSONEncodeError as err:
        raise InvalidInput(f"{what} cannot be stored as JSON: {err}") from err


def from_json(raw: bytes | str) -> Any:
    """A stored JSON text; ``ValueError`` if it is damaged or no JSON client could read it again.
    Older versions wrote with the standard library, which also wrote ``NaN`` and ``Infinity``."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        value = json.loads(raw)
        orjson.dumps(value, option=_JSON_OPTIONS)  # a lone surrogate or an oversized integer
    except (ValueError, TypeError, RecursionError) as err:
        raise ValueError(str(err)) from err
    return value


def check_text(*texts: str) -> None:
    for text in texts:
        try:
            text.encode()
        except UnicodeEncodeError as err:
            raise InvalidInput(f"{text!r} is not valid text: {err.reason}") from err
