"""Request bodies of the camera hardware and media routes, read like Gin's ``ShouldBindJSON``: a JSON
object decoded as Go decodes it (:data:`api.json_input.GO`) whose fields have the Go types (a string
is never a number, a bool never an int; an integer is a valid float), ``null`` is unset, and a
required field must be present."""

from __future__ import annotations

import builtins
from typing import Any

from starlette.requests import Request

from api import json_input
from hardware.ports.errors import InvalidInput

BAD_FORMAT = "Invalid request format"


def is_json(request: Request) -> bool:
    """``application/json`` or ``application/*+json``, as the device's content-type guard accepts."""
    return json_input.is_json_type(request.headers.get("content-type", ""))


class Body:
    def __init__(self, raw: bytes, detail: str = BAD_FORMAT) -> None:
        self.detail = detail
        try:
            body = json_input.loads(raw, json_input.GO) if raw else None
        except ValueError as err:
            raise InvalidInput(detail) from err
        if not isinstance(body, dict):
            raise InvalidInput(detail)
        self.body = body

    def has(self, name: str) -> bool:
        return self.body.get(name) is not None

    def _get(self, name: str, ok: Any, default: Any, required: bool) -> Any:
        value = self.body.get(name)
        if value is None:
            if required:
                raise InvalidInput(f"{self.detail}: {name} is required")
            return default
        if not ok(value):
            raise InvalidInput(f"{self.detail}: {name} has the wrong type")
        return value

    def str(
        self, name: builtins.str, *, required: builtins.bool = False, default: builtins.str = ""
    ) -> builtins.str:
        return self._get(name, lambda v: isinstance(v, str), default, required)

    def int(
        self, name: builtins.str, *, required: builtins.bool = False, default: builtins.int = 0
    ) -> builtins.int:
        return self._get(name, lambda v: isinstance(v, int) and not isinstance(v, bool), default, required)

    def float(
        self, name: builtins.str, *, required: builtins.bool = False, default: builtins.float = 0.0
    ) -> builtins.float:
        ok = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
        return float(self._get(name, ok, default, required))

    def bool(
        self, name: builtins.str, *, required: builtins.bool = False, default: builtins.bool = False
    ) -> builtins.bool:
        return self._get(name, lambda v: isinstance(v, bool), default, required)

    def obj(self, name: builtins.str, *, required: builtins.bool = False) -> dict[builtins.str, Any] | None:
        return self._get(name, lambda v: isinstance(v, dict), None, required)

    def list(self, name: builtins.str, *, required: builtins.bool = False) -> builtins.list[Any]:
        return self._get(name, lambda v: isinstance(v, list), [], required)
