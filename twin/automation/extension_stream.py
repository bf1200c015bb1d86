"""A push-mode stream session of an extension: frames of the simulated camera, rendered by a SimPy
process at :data:`PUSH_FPS` frames per world second, JPEG-encoded, on a bounded queue that drops
the oldest frame when the client falls behind."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import cv2
import simpy

from hardware.ports.agents import PushFrame
from hardware.ports.errors import Unavailable
from twin.video.render import Renderer, View
from twin.video.scene import scene_of

if TYPE_CHECKING:
    from twin.automation.extensions import ExtensionRegistry

PUSH_FPS = 5
FRAME_SIZE = (320, 180)
SESSION_QUEUE = 8
JPEG_QUALITY = 80


class PushSession:
    """A push stream session: frames from a SimPy process onto a bounded queue (drop oldest)."""

    def __init__(self, registry: ExtensionRegistry, extension_id: str, session_id: str) -> None:
        self.registry = registry
        self.world = registry.world
        self.extension_id = extension_id
        self.session_id = session_id
        self.dropped = 0
        self.closed = False
        self.sequence = 0
        self._queue: deque[PushFrame] = deque()
        self._waiter: asyncio.Future[None] | None = None
        camera_id = min(self.world.cameras) if self.world.cameras else "ext-camera"
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
        if len(self._queue) >= SESSION_QUEUE:
            self._queue.popleft()
            self.dropped += 1
        self._queue.append(frame)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next_frame(self) -> PushFrame:
        while not self._queue:
            if self.closed:
                raise Unavailable("the stream session was closed", resource="stream")
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        if self.process.is_alive:
            self.process.interrupt("closed")
        self.registry.open_sessions.pop(self.session_id, None)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
