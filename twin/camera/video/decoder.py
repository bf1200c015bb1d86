"""A background decoder of real video (PyAV): the latest picture of a file, a stream or a device.

This is I/O with the outside world, on the wall clock, outside the simulated world: a thread of its
own opens the source, decodes it and keeps only the latest picture (BGR). A file plays at its own
frame rate and starts over at its end (``loop``); a live source (RTSP, HTTP, V4L2) is read as fast
as it sends, and when it stops sending or fails the last picture stays and :attr:`Decoder.stalled`
turns true while the thread reconnects every :data:`RETRY_S`. Nobody asking for a picture for
:data:`IDLE_S` ends the thread (the container is closed); the next request starts it again.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

import av
import numpy as np

log = logging.getLogger(__name__)

STALL_S = 2.0
"""A live source that sent no picture for this long is stalled."""
RETRY_S = 2.0
IDLE_S = 10.0
OPEN_TIMEOUT_S = 5.0


class SourceError(ValueError):
    """A video source that cannot be opened."""


@dataclass(frozen=True, slots=True)
class Media:
    """Where to read: ``url`` (a path or URL) with PyAV's ``format`` and ``options``."""

    url: str
    shown: str
    """``url`` as messages and logs may show it (no credentials)."""
    live: bool
    format: str | None = None
    options: tuple[tuple[str, str], ...] = ()


def open_media(media: Media, timeout: float = OPEN_TIMEOUT_S) -> av.container.InputContainer:
    """The opened container with a video stream, or :class:`SourceError` saying why not."""
    try:
        container = av.open(
            media.url, format=media.format, options=dict(media.options), timeout=timeout, mode="r"
        )
    except (av.FFmpegError, OSError) as e:
        raise SourceError(f"cannot open {media.shown}: {e}") from None
    if not container.streams.video:
        container.close()
        raise SourceError(f"{media.shown} has no video stream")
    return container


class Decoder:
    """One source's latest picture, decoded by a thread of its own while it is asked for."""

    def __init__(self, media: Media, loop: bool = True) -> None:
        self.media = media
        self.loop = loop
        self.error = ""
        """Why the source gives no pictures now (empty while it does)."""
        self._lock = threading.Lock()
        self._picture: np.ndarray | None = None
        self._serial = 0
        self._last_at = 0.0
        self._asked_at = 0.0
        self._thread: threading.Thread | None = None
        self._ended = False
        """A file that does not loop played to its end: its last picture stays."""

    def latest(self) -> tuple[int, np.ndarray | None]:
        """``(serial, picture)``: the latest decoded picture and its number (0 before the first)."""
        now = time.monotonic()
        with self._lock:
            self._asked_at = now
            if not self._ended and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._run, name="video-decoder", daemon=True)
                self._thread.start()
            return self._serial, self._picture

    @property
    def stalled(self) -> bool:
        """A live source sent nothing for :data:`STALL_S` or failed; a file that failed."""
        if self.error:
            return True
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            return self.media.live and running and time.monotonic() - self._last_at > STALL_S

    def _idle(self) -> bool:
        return time.monotonic() - self._asked_at > IDLE_S

    def _run(self) -> None:
        with self._lock:
            self._last_at = time.monotonic()
        while not self._idle():
            try:
                container = open_media(self.media)
            except SourceError as e:
                self._fail(str(e))
                continue
            try:
                ended = self._play(container)
            except (av.FFmpegError, OSError) as e:
                self._fail(f"{self.media.shown}: {e}")
                continue
            finally:
                container.close()
            if ended and not self.media.live and not self.loop:
                self._ended = True
                return
            if ended and self.media.live:
                self._fail(f"{self.media.shown} ended")

    def _fail(self, error: str) -> None:
        if error != self.error:
            log.warning("video source: %s", error)
        self.error = error
        time.sleep(RETRY_S)  # the reader thread's own pace on the wall clock, not the world's

    def _play(self, container: av.container.InputContainer) -> bool:
        """Decode until the end (True) or until nobody asks (False); a file at its own pace."""
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        started, first = time.monotonic(), None
        for frame in container.decode(stream):
            if self._idle():
                return False
            if not self.media.live and frame.time is not None:
                first = frame.time if first is None else first
                wait = started + (frame.time - first) - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            picture = frame.to_ndarray(format="bgr24")
            with self._lock:
                self._picture, self._serial, self._last_at = picture, self._serial + 1, time.monotonic()
            self.error = ""
        return True
