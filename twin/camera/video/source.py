"""A camera's video source: the synthetic scene, or real video from the outside world.

A camera group's ``video`` (``fleet.cameras[].video``, or ``twin run --video-source``) chooses it:

- none (the default): the synthetic scene (:mod:`twin.camera.video.scene`), a pure function of the
  world's time, so the video is deterministic;
- ``video.source``: a file path, an ``rtsp://``, ``http://`` or ``https://`` URL, or a V4L2 device
  ``/dev/videoN``, decoded by :class:`~twin.camera.video.decoder.Decoder` on a thread of its own.
  The picture at any world time is the latest decoded one, resized to the stream's size; the
  renderer then applies the camera's sharpness, transform, privacy masks, AI overlay and OSD on it
  as on the scene. Only the operator chooses a source (the scenario or the command line): no API
  client can, and no client request reads a host file.

A local source (a file, a device) that cannot be opened fails the build with the camera and the
path named; a network source is checked for its form at build and connected to in the background
(it may come up later, e.g. another camera of this twin), its stream ``stalled`` until it sends.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import cv2
import numpy as np

from twin.camera.video.decoder import Decoder, Media, SourceError, open_media
from twin.fleet import VideoSpec

NETWORK_SCHEMES = ("rtsp", "rtsps", "http", "https")
DEVICE = re.compile(r"^/dev/video[0-9]+$")


def shown(url: str) -> str:
    """``url`` without its credentials, for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


def media_of(source: str) -> Media:
    """How to read ``source``, or :class:`SourceError` when it is none of the known kinds."""
    scheme = urlsplit(source).scheme
    if scheme in NETWORK_SCHEMES:
        options = (("rtsp_transport", "tcp"),) if scheme.startswith("rtsp") else ()
        return Media(source, shown(source), live=True, options=options)
    if "://" in source or not source:
        kinds = "/".join(NETWORK_SCHEMES)
        raise SourceError(f"{shown(source)!r} is not a file, a /dev/videoN device or an {kinds} URL")
    if DEVICE.match(source):
        return Media(source, source, live=True, format="v4l2")
    return Media(source, source, live=False)


def parse_video_sources(specs: tuple[str, ...], camera_ids: list[str]) -> tuple[tuple[str, VideoSpec], ...]:
    """``twin run --video-source`` values: ``SOURCE`` (every camera) or ``CAMERA_ID=SOURCE``."""
    out = []
    for spec in specs:
        head = spec.split("://")[0]
        name, _, source = spec.partition("=") if "=" in head and not head.startswith("/") else ("*", "", spec)
        if name != "*" and name not in camera_ids:
            raise SourceError(f"--video-source: the fleet has no camera {name!r}")
        try:
            media_of(source)
        except SourceError as e:
            raise SourceError(f"--video-source {name}: {e}") from None
        out.append((name, VideoSpec(source)))
    return tuple(out)


class MediaSource:
    """One camera's real video: a decoder and the latest picture at each size asked for."""

    def __init__(self, camera_id: str, spec: VideoSpec) -> None:
        self.camera_id = camera_id
        try:
            self.media = media_of(spec.source)
            if not self.media.live or self.media.format == "v4l2":
                if not self.media.format and not Path(spec.source).is_file():
                    raise SourceError(f"{spec.source}: no such file")
                open_media(self.media).close()  # fail now, not when someone watches
        except SourceError as e:
            raise SourceError(f"camera {camera_id}: video source {e}") from None
        self.decoder = Decoder(self.media, spec.loop)
        self._sized: dict[tuple[int, int], tuple[int, np.ndarray]] = {}

    def picture(self, width: int, height: int) -> np.ndarray:
        """The latest picture at ``width`` x ``height`` (BGR; black before the first one)."""
        serial, picture = self.decoder.latest()
        cached = self._sized.get((width, height))
        if cached is not None and cached[0] == serial:
            return cached[1].copy()
        if picture is None:
            sized: np.ndarray = np.zeros((height, width, 3), np.uint8)
        elif picture.shape[:2] == (height, width):
            sized = picture
        else:
            sized = cv2.resize(picture, (width, height), interpolation=cv2.INTER_AREA)
        self._sized[(width, height)] = (serial, sized)
        return sized.copy()

    def stall(self) -> str:
        """Why the stream is stalled (empty when it is not)."""
        if not self.decoder.stalled:
            return ""
        return f"video source stalled: {self.decoder.error or f'no picture from {self.media.shown}'}"


def source_of(camera_id: str, spec: VideoSpec | None) -> MediaSource | None:
    """The camera's real video source, or ``None`` for the synthetic scene."""
    return None if spec is None else MediaSource(camera_id, spec)
