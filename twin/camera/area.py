"""The base of the gateway's per-camera adapters: each call looks its camera up in the current
world, so one adapter keeps working across resets and restores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardware.ports.errors import Unavailable
from twin.camera.wing import cameras_of

if TYPE_CHECKING:
    from twin.camera.camera import Camera
    from twin.world import World


def camera_of(world: World, camera_id: str) -> Camera:
    """The world's camera ``camera_id``; ``Unavailable`` when the world has none by that id."""
    camera = cameras_of(world).get(camera_id)
    if camera is None:
        raise Unavailable(f"camera {camera_id} is not in the world")
    return camera


class CameraArea:
    def __init__(self, world: World, camera_id: str) -> None:
        self._world = world
        self._id = camera_id

    @property
    def camera(self) -> Camera:
        return camera_of(self._world, self._id)
