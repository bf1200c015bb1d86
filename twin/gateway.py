"""The twin's implementation of the edge gateway port: one per simulated camera.

Each call looks the camera up in the current world, so the same backend object keeps working
across resets and restores.
"""

from __future__ import annotations

from hardware.ports.errors import Unavailable
from hardware.ports.types import GatewayInfo, PublicKey
from twin.camera import Camera
from twin.clock import SimClock
from twin.video.backend import TwinGatewayMedia
from twin.world import World


class _CameraArea:
    def __init__(self, world: World, camera_id: str) -> None:
        self._world = world
        self._id = camera_id

    @property
    def camera(self) -> Camera:
        camera = self._world.cameras.get(self._id)
        if camera is None:
            raise Unavailable(f"camera {self._id} is not in the world")
        return camera


class TwinGatewayAuth(_CameraArea):
    def public_key(self) -> PublicKey:
        return self.camera.public_key()

    def login(self, username: str, password: str, timestamp: int) -> str:
        return self.camera.login(username, password, timestamp)

    def logout(self, token: str) -> bool:
        return self.camera.logout(token)

    def check_token(self, token: str) -> str:
        return self.camera.check_token(token)


class TwinGatewaySystem(_CameraArea):
    def info(self) -> GatewayInfo:
        return self.camera.info()

    def reachable(self) -> bool:
        camera = self._world.cameras.get(self._id)
        return camera is not None and camera.powered


class TwinGateway:
    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self.id = camera_id
        self.clock = clock
        self.auth = TwinGatewayAuth(world, camera_id)
        self.system = TwinGatewaySystem(world, camera_id)
        self.media = TwinGatewayMedia(world, clock, camera_id)
