"""The automation server's system area over the world: settings, capabilities, tools, statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.world import World


class TwinSystem:
    def __init__(self, world: World) -> None:
        self.world = world
