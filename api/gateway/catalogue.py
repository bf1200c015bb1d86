"""The edge gateway's route catalogue: every route the device registers (plus the spec's
``/streams``), with its auth (``public`` or ``token``) and kind (REST, WS, SSE, NDJSON)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True, slots=True)
class DeviceRoute:
    method: str
    path: str
    """Gin syntax: ``/api/v1/apps/:app_id``, wildcards ``*path``."""
    auth: str
    kind: str


@cache
def device_routes() -> tuple[DeviceRoute, ...]:
    text = resources.files("api.gateway").joinpath("routes.tsv").read_text()
    return tuple(
        DeviceRoute(*line.split("\t")) for line in text.splitlines() if line and not line.startswith("#")
    )
