"""Which messages a notification channel receives: its filter (source types, categories, minimum
severity), kept with the channel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ChannelFilters(Protocol):
    def get(self, name: str) -> Mapping[str, Any]:
        """``source_types``, ``categories`` (empty: all), ``min_severity`` (or ``None``); ``NotFound``."""

    def set(
        self, name: str, source_types: Sequence[str], categories: Sequence[str], min_severity: str | None
    ) -> Mapping[str, Any]:
        """The stored filter; ``InvalidInput`` for an unknown severity, ``NotFound`` for a channel."""
