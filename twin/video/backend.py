"""The twin's implementation of the gateway's media area, over one camera of the world."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.clock import SimClock
    from twin.world import World


class TwinGatewayMedia:
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self._world = world
        self._clock = clock
        self._id = camera_id
