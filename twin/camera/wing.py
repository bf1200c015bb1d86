"""The cameras of a world as one wing: every camera of the fleet's groups it holds (all of them, or a
shard's slice), numbered in the whole fleet's order."""

from __future__ import annotations

from typing import Any

from hardware.ports.errors import Unavailable
from twin.camera.camera import Camera, CameraWorld
from twin.engine import Host

CAMERAS = "cameras"
"""The cameras' kind name."""


class CameraWing:
    def __init__(self, world: CameraWorld) -> None:
        self.cameras: dict[str, Camera] = {}
        """The cameras by id (``cam-01``...), in the order they were built."""
        for number, camera_id in world.config.held_cameras():
            self.cameras[camera_id] = Camera(world, camera_id, number)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return {cid: cam.state() for cid, cam in self.cameras.items()}

    def restore(self, state: dict[str, dict[str, Any]]) -> None:
        for cid, camera_state in state.items():
            if cid in self.cameras:
                self.cameras[cid].set_state(camera_state)


def cameras_of(world: Host) -> dict[str, Camera]:
    """The cameras of ``world`` by id."""
    wing = world.wings.get(CAMERAS)
    if not isinstance(wing, CameraWing):
        raise Unavailable("the world has no cameras")
    return wing.cameras
