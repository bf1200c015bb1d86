"""Whether a channel's filter lets a message through: its source types and categories (empty: all)
and its minimum severity (``info`` < ``warning`` < ``critical`` < ``emergency``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LEVELS = ("info", "warning", "critical", "emergency")
ALIASES = {
    "info": "info", "信息": "info", "warning": "warning", "warn": "warning", "警告": "warning",
    "critical": "critical", "crit": "critical", "严重": "critical", "emergency": "emergency",
    "emerg": "emergency", "紧急": "emergency",
}  # fmt: skip
ACCEPT_ALL: dict[str, Any] = {"source_types": [], "categories": [], "min_severity": None}


def accepts(rule: Mapping[str, Any] | None, message: Mapping[str, Any]) -> bool:
    if not rule:
        return True
    if rule["source_types"] and message["source_type"] not in rule["source_types"]:
        return False
    if rule["categories"] and message["category"] not in rule["categories"]:
        return False
    floor = rule["min_severity"]
    return floor is None or LEVELS.index(message["severity"]) >= LEVELS.index(floor)
