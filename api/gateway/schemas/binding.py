"""Gin's ``ShouldBindJSON`` into a Go struct, with encoding/json's own error texts: the camera
hardware handlers (audio, device control, lens) answer ``1001`` with ``<prefix>: <that text>``.

A struct is described by its Go name (``handlers.audioConfigReq``; ``""`` for an anonymous struct)
and its JSON fields' Go types (``string``, ``bool``, ``int``, ``int32``, ``uint32``, ``float32``,
``float64``, ``[]T``, ``map[string]interface {}``, a struct such as ``devicepb.LensLimit``...). A field
that is absent or ``null`` is not in the answer (the Go zero value, or a nil pointer); an unknown field
is ignored, as Go does."""

from __future__ import annotations

from typing import Any

from api import json_input
from hardware.ports.errors import InvalidInput

_INT_RANGES = {
    "int": (-(2**63), 2**63 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "uint8": (0, 255),
}
_KINDS = {str: "string", bool: "bool", list: "array", dict: "object"}


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), "number")


def _check(value: Any, go_type: str) -> str | None:
    """``None`` if ``value`` decodes into ``go_type``, else encoding/json's name for the value."""
    go_type = go_type.removeprefix("*")
    if go_type == "string":
        return None if isinstance(value, str) else _kind(value)
    if go_type == "bool":
        return None if isinstance(value, bool) else _kind(value)
    if go_type in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _kind(value)
        low, high = _INT_RANGES[go_type]
        if isinstance(value, float) or not low <= value <= high:
            return f"number {value}"
        return None
    if go_type in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _kind(value)
        return None if go_type == "float64" or abs(value) <= 3.4028234663852886e38 else f"number {value}"
    if go_type.startswith("[]"):
        return None if isinstance(value, list) else _kind(value)
    if go_type.startswith("map[") or "." in go_type:
        return None if isinstance(value, dict) else _kind(value)
    return None


def check(value: Any, go_type: str, struct: str, path: str, prefix: str = "Invalid request body") -> None:
    """One (nested) field: ``path`` is its dotted JSON path from the bound struct, ``struct`` the name of
    the Go struct that holds it, as encoding/json names them in its error."""
    bad = _check(value, go_type)
    if bad is not None:
        field = f"Go struct field {struct}.{path} of type {go_type.removeprefix('*')}"
        raise InvalidInput(f"{prefix}: json: cannot unmarshal {bad} into {field}")


def bind(
    raw: bytes, struct: str, fields: dict[str, str], prefix: str = "Invalid request body"
) -> dict[str, Any]:
    """The fields of ``fields`` present (not ``null``) in the JSON object ``raw``, checked against their
    Go types; ``InvalidInput("<prefix>: <encoding/json's error>")`` otherwise. An empty body is ``EOF``."""
    if not raw.strip():
        raise InvalidInput(f"{prefix}: EOF")
    try:
        body = json_input.loads(raw, json_input.GO)
    except ValueError as err:
        raise InvalidInput(f"{prefix}: invalid character in JSON input") from err
    if not isinstance(body, dict):
        if body is None:
            return {}
        named = struct or _anonymous(fields)
        raise InvalidInput(f"{prefix}: json: cannot unmarshal {_kind(body)} into Go value of type {named}")
    out: dict[str, Any] = {}
    short = struct.rsplit(".", 1)[-1]
    for name, go_type in fields.items():
        value = body.get(name)
        if value is None:
            continue
        check(value, go_type, short, name, prefix)
        out[name] = float(value) if go_type.removeprefix("*").startswith("float") else value
    return out


def _anonymous(fields: dict[str, str]) -> str:
    """How Go prints an anonymous struct's type: ``struct { Level uint32 "json:\\"level\\"" }``."""

    def go_name(json_name: str) -> str:
        return "".join("ID" if part == "id" else part.capitalize() for part in json_name.split("_"))

    members = "; ".join(f'{go_name(n)} {t} "json:\\"{n}\\""' for n, t in fields.items())
    return f"struct {{ {members} }}"
