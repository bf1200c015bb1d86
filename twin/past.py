"""The world's past: every world starts as a site that has been running for ``history`` seconds.

Nothing of the past is stored or precomputed. Sim time runs on below 0 (``epoch + t`` with ``t``
down to ``-history``), and what happened there is read from the same pure functions of
(seed, entity, t) as the present: a sensor's samples at negative ticks, the device's last report,
an app's log lines since boot. A 30-day past therefore costs nothing until a query asks for a
part of it, and the same seed gives the same past.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

DEFAULT_HISTORY_S = 7 * 86_400.0
"""How far back a world's past reaches by default (scenario ``history``)."""
MAX_HISTORY_S = 366 * 86_400.0

_UNITS = {"s": 1.0, "m": 60.0, "h": 3_600.0, "d": 86_400.0, "w": 604_800.0}
_SPAN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_span(value: Any) -> Any:
    """``"7d"``, ``"12h"``, ``"30m"``, ``"90s"``, ``"2w"`` or a number of seconds, as seconds.

    Anything else is handed on unchanged for the model's own type check to reject."""
    if isinstance(value, bool):
        raise ValueError("a span is a number of seconds or a string like 7d, 12h, 30m")
    if isinstance(value, str) and (m := _SPAN.match(value)):
        return float(m.group(1)) * _UNITS[m.group(2) or "s"]
    return value


Span = Annotated[
    float,
    BeforeValidator(parse_span, json_schema_input_type=float | str),
    Field(ge=0, le=MAX_HISTORY_S, allow_inf_nan=False),
]
"""A span of time in a scenario: seconds, or a number with a unit ``s``, ``m``, ``h``, ``d``, ``w``."""
HISTORY_HELP = "how long the site has been running at sim time 0 (its past): e.g. 7d, 12h, 30m, 3600 (s)"


def first_tick(history: float, period: float) -> int:
    """The number of the oldest sample of a source sampled every ``period`` from sim time 0 on
    (sample ``k`` at ``k * period``) whose past reaches back ``history`` seconds: ``<= 0``."""
    return -math.floor(history / period + 1e-9)
