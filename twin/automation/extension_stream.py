"""A push-mode stream session of an extension: frames of the simulated camera, rendered by a SimPy
process at :data:`PUSH_FPS` frames per world second, JPEG-encoded, on a bounded queue that drops
the oldest frame when the client falls behind."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Protocol

import cv2
import simpy

from hardware.ports.errors import Unavailable
from hardware.ports.extensions import PushFrame
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import SceneWorld, scene_of
from twin.feed import Feed

PUSH_FPS = 5
FRAME_SIZE = (320, 180)
SESSION_QUEUE = 8
JPEG_QUALITY = 80


class SessionHost(Protocol):
    """What a session needs of the registry that opens it (:class:`ExtensionRegistry`)."""

    @property
    def world(self) -> SceneWorld: ...

    @property
    def open_sessions(self) -> dict[str, PushSession]: ...


def first_camera(world: SceneWorld) -> str:
    """The camera whose scene the extensions show (a stand-in id when the world has none)."""
    return min(world.config.spec_by_camera()) if world.config.spec_by_camera() else "ext-camera"


class PushSession:
    """A push stream session: frames from a SimPy process onto a bounded feed (drop oldest)."""

    def __init__(self, registry: SessionHost, extension_id: str, session_id: str) -> None:
        self.registry = registry
        self.world = registry.world
        self.extension_id = extension_id
        self.session_id = session_id
        self.sequence = 0
        self._feed: Feed[PushFrame] = Feed(SESSION_QUEUE)
        camera_id = first_camera(self.world)
        self.renderer = Renderer(scene_of(self.world, camera_id), *FRAME_SIZE, camera_id)
        self.process = self.world.env.process(self._run())

    def _run(self) -> Generator[Any, Any, None]:
        env = self.world.env
        start, k = env.now, 0
        try:
            while not self.closed:
                k += 1
                yield env.timeout(max(0.0, start + k / PUSH_FPS - env.now))
                if not self.closed:
                    self._push()
        except simpy.Interrupt:
            return

    def _push(self) -> None:
        image = self.renderer.render(self.world.env.now, View(self.world.now(), self.renderer.camera_id))
        ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        if not ok:
            return
        boxes = self.renderer.scene.boxes(self.world.env.now)
        frame = PushFrame(
            sequence=self.sequence,
            data=jpeg.tobytes(),
            data_type="image/jpeg",
            timestamp=self.world.now(),
            metadata={"width": FRAME_SIZE[0], "height": FRAME_SIZE[1], "objects": len(boxes)},
        )
        self.sequence += 1
        self._feed.offer(frame)

    @property
    def closed(self) -> bool:
        return self._feed.closed

    @property
    def dropped(self) -> int:
        return self._feed.dropped

    async def next_frame(self) -> PushFrame:
        frame = await self._feed.next()
        if frame is None:
            raise Unavailable("the stream session was closed", resource="stream")
        return frame

    def close(self) -> None:
        if self.closed:
            return
        self._feed.end(discard=True)
        if self.process.is_alive:
            self.process.interrupt("closed")
        self.registry.open_sessions.pop(self.session_id, None)
