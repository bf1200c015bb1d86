"""The automation server's devices, device types, drafts and commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.world import World


class TwinDevices:
    def __init__(self, world: World) -> None:
        self.world = world
