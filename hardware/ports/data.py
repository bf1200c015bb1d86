"""The automation server's data views: the unified list of data sources (device metrics, extension
metrics, transform outputs) the data explorer browses, extension metrics (declared, pushed, stored),
statistics of telemetry storage and devices, the resources rules can use, and the images devices
sent (stored as files by the server, served back by path).

Shapes are the vendor's JSON objects (mappings). Timestamps are Unix seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

SOURCE_TYPES = ("device", "extension", "transform")


@dataclass(frozen=True, slots=True)
class SourceFilter:
    source_type: str | None = None
    source: str | None = None
    search: str | None = None
    offset: int = 0
    limit: int = 15
    """Already capped by the caller (100, or 5000 with ``skip_telemetry``)."""
    skip_telemetry: bool = False


@dataclass(frozen=True, slots=True)
class SourcePage:
    rows: tuple[Mapping[str, Any], ...]
    total: int
    source_options: tuple[tuple[str, str], ...]
    """(source name, display name) of every source of the requested type, by display name."""


@dataclass(frozen=True, slots=True)
class StoredImage:
    content: bytes
    content_type: str


@runtime_checkable
class DataCatalog(Protocol):
    def data_sources(self, f: SourceFilter) -> SourcePage:
        """Every source sorted by id (``<type>:<source>:<field>``), filtered, then paged; the page's
        current values filled in unless ``skip_telemetry``."""

    def extension_metric_data(
        self, extension_id: str, metric: str, start: int | None, end: int | None, limit: int
    ) -> Mapping[str, Any]:
        """Stored points of an extension metric (default window: the 24 hours before ``end``)."""

    def push_extension_metrics(self, extension_id: str, metrics: Mapping[str, Any]) -> tuple[int, int]:
        """Store the values now and publish them as extension output; (stored, total).
        ``InvalidInput`` with the vendor's message for an empty or oversized set."""

    def device_stats(self) -> Mapping[str, Any]: ...

    def rule_resources(self) -> Mapping[str, Any]:
        """``devices`` (metrics, commands, online) and ``message_categories``."""


@runtime_checkable
class TelemetryStatistics(Protocol):
    def stats(self) -> Mapping[str, Any]:
        """``performance`` (latencies, tier, cache hit rate, counts) and ``health``."""


@runtime_checkable
class Images(Protocol):
    """The images devices sent, by path (``<device_id>/<metric>/<timestamp>.<ext>``)."""

    def get(self, path: str) -> StoredImage:
        """``InvalidInput`` (plain-text message) for a malformed path, ``NotFound`` otherwise."""
