"""Per-channel message filters, as the server keeps them with each channel (in its document): the
source types and categories a channel receives (empty: all) and a minimum severity. The message
center consults them (:func:`twin.automation.message_filter.accepts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound
from twin.automation.message_filter import ACCEPT_ALL, ALIASES
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.world import World


class TwinChannelFilters:
    def __init__(self, world: World) -> None:
        self.world = world

    def _channel(self, name: str, message: str) -> dict[str, Any]:
        doc = automation_of(self.world).messages.channels.get(name)
        if doc is None:
            raise NotFound(message, resource="channel")
        return doc

    def get(self, name: str) -> Mapping[str, Any]:
        return dict(self._channel(name, "Channel not found").get("filter") or ACCEPT_ALL)

    def set(
        self, name: str, source_types: Sequence[str], categories: Sequence[str], min_severity: str | None
    ) -> Mapping[str, Any]:
        doc = self._channel(name, f"Channel not found: {name}")
        level = None
        if min_severity is not None:
            level = ALIASES.get(min_severity.lower())
            if level is None:
                raise InvalidInput(
                    f"Invalid min_severity '{min_severity}'. Valid values: info, warning, error, critical",
                    field="min_severity",
                )
        doc["filter"] = {
            "source_types": list(source_types),
            "categories": list(categories),
            "min_severity": level,
        }
        automation_of(self.world).messages.channels.put(name, doc)
        return doc["filter"]
