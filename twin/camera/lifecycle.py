"""Starting and stopping a camera's apps and containers for the gateway. Each takes device time (an
image unpacks, a container starts or stops), so a call waits on the world clock: in step mode it
finishes when time is advanced; an app start past the platform's gRPC deadline answers
DeadlineExceeded."""

from __future__ import annotations

from typing import TYPE_CHECKING

import simpy

from hardware.ports.errors import DomainError, InternalError
from twin.camera.area import CameraArea
from twin.camera.containers import DEADLINE_EXCEEDED

if TYPE_CHECKING:
    from twin.clock import SimClock
    from twin.world import World

START_DEADLINE_S = 10.0
"""The platform's gRPC deadline for an app start."""


class Lifecycle(CameraArea):
    """The lifecycle port over one camera of the world, looked up on each call."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        super().__init__(world, camera_id)
        self._clock = clock

    async def _settle(self, event: simpy.Event, deadline: float | None = None) -> None:
        """Wait for a world event that succeeds with None or an error; ``deadline`` in device
        seconds turns a late answer into the platform's DeadlineExceeded."""
        env = self._world.env
        waited: simpy.Event = event if deadline is None else env.any_of([event, env.timeout(deadline)])
        await self._clock.wait(waited)
        if not event.triggered:
            raise InternalError(DEADLINE_EXCEEDED, resource="deadline")
        if isinstance(event.value, DomainError):
            raise event.value

    # Apps ----------------------------------------------------------------------------------------
    async def start_app(self, app_id: str) -> None:
        await self._settle(self.camera.apps.begin_start(app_id, START_DEADLINE_S), START_DEADLINE_S)

    async def stop_app(self, app_id: str, timeout: int) -> None:
        await self._settle(self.camera.apps.begin_stop(app_id), float(timeout) if timeout > 0 else None)

    async def restart_app(self, app_id: str, timeout: int) -> None:
        apps = self.camera.apps
        if apps.get(app_id).state == "running":
            await self.stop_app(app_id, timeout)
        apps.count_restart(app_id)
        await self.start_app(app_id)

    # Containers ----------------------------------------------------------------------------------
    async def start_container(self, container_id: str) -> None:
        camera = self.camera
        container = camera.containers.container(container_id)
        try:
            if container.app_id in camera.apps.apps:
                started = camera.apps.begin_start(container.app_id, START_DEADLINE_S)
            else:
                started = camera.containers.start(container_id, deadline=START_DEADLINE_S)
            await self._settle(started, START_DEADLINE_S)
        finally:
            self.camera.apps.durable.save()  # the camera of the world now, after the wait

    async def stop_container(self, container_id: str) -> None:
        camera = self.camera
        container = camera.containers.container(container_id)
        try:
            if container.app_id in camera.apps.apps and container.state == "running":
                await self._settle(camera.apps.begin_stop(container.app_id))
            else:
                await self._settle(camera.containers.stop(container_id))
        finally:
            self.camera.apps.durable.save()  # the camera of the world now, after the wait

    async def restart_container(self, container_id: str) -> None:
        await self.stop_container(container_id)
        await self.start_container(container_id)
