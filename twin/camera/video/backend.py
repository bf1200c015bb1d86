"""The twin's media area and picture settings of the gateway, over one camera.

Streams and the camera daemon's configuration belong to the world's current SimPy environment:
after a reset or restore (a new environment) the old streams' viewers are closed and fresh
streams are made on next use, with the settings the store holds (see below).

Every frame is rendered through a :class:`~twin.camera.video.render.View` captured on the world's thread at
the frame's tick: the lens (zoom, focus error, iris), the peripherals (PTZ, day/night, IR, light) and
these settings (image, transform, OSD, privacy masks, AI overlay with the model's detections), weather.

The settings are durable, as the daemon's configuration file and its OSD images are on the device:
one document per camera in the store (the configuration and the stored profiles), written by every
change, and one per OSD image; a new environment reads them back, or takes the boot defaults when
there are none (a reset clears the store).
"""

from __future__ import annotations

import base64
import dataclasses
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import cv2
import numpy as np
import simpy

from hardware.ports.camera_hw import (
    AiOverlay,
    Detection,
    ImageSettings,
    OsdImageFile,
    OsdStream,
    PrivacyMaskConfig,
    Transform,
)
from hardware.ports.errors import InvalidInput, NotFound, Unavailable
from hardware.ports.events import EventKind
from hardware.ports.media import StreamConfig, StreamStatus
from twin.camera.area import camera_of
from twin.camera.detections import Detector
from twin.camera.video import config as cfg
from twin.camera.video import stream as _stream
from twin.camera.video.render import Renderer, View, default_osd
from twin.camera.video.scene import Scene, scene_of, sun_side
from twin.camera.video.source import source_of
from twin.camera.video.stream import VideoStream, Viewer
from twin.camera.video.weather import visibility, weather_of
from twin.camera.wing import cameras_of

if TYPE_CHECKING:
    from twin.camera.camera import Camera
    from twin.clock import SimClock
    from twin.world import World

MAX_OSD_IMAGES = 32
MAX_OSD_IMAGE_BYTES = 2 * 1024 * 1024
DETECTIONS_EVERY_S = 1.0
MEDIA_KIND = "camera_media"
"""Durable: one document per camera, keyed by its id: the configuration, the profiles and the RTSP
port the camera was served on when it was written."""
OSD_IMAGES_KIND = "camera_osd_images"
"""Durable: one document per OSD image, keyed ``camera_id:name``."""


def _decode(data: bytes) -> np.ndarray | None:
    """An OSD image's pixels (BGR or BGRA, 8 bits), or ``None`` for bytes that are not an image."""
    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED) if data else None
    if pixels is None:
        return None
    if pixels.ndim == 2:
        pixels = cv2.cvtColor(pixels, cv2.COLOR_GRAY2BGR)
    pixels = pixels[:, :, :4].astype(np.uint8) if pixels.dtype != np.uint8 else pixels[:, :, :4]
    return np.ascontiguousarray(pixels)


def _move_rtsp_port(settings: cfg.MediaSettings, old: int, new: int) -> None:
    """Settings still on ``old``, current or stored in a profile, move to ``new``."""
    if settings.rtsp_port == old:
        settings.rtsp_port = new
    for doc in settings.profiles.values():
        if doc.get("rtsp", {}).get("port") == old:
            doc["rtsp"]["port"] = new


class CameraMedia:
    """The media and picture ports of one camera: its streams and the picture settings they are
    rendered with; the camera daemon's configuration operations are its
    :class:`~twin.camera.video.media_config.MediaConfiguration`."""

    def __init__(self, world: World, clock: SimClock, camera_id: str) -> None:
        self._world = world
        self._clock = clock
        self._id = camera_id
        self._env: simpy.Environment | None = None
        self._streams: dict[str, VideoStream] = {}
        self._rtsp_port = cfg.RTSP_PORT
        self._settings = self._defaults()
        self._osd_files: dict[str, OsdImageFile] = {}
        self._osd_pixels: dict[str, np.ndarray] = {}
        self._scene = Scene(0)
        self._detector = Detector(0)
        spec = world.config.spec_by_camera().get(camera_id, world.config.cameras)
        self.source = source_of(camera_id, spec.video)
        """Real video in place of the scene (``None``: the scene); a source that cannot open fails here."""

    # World -------------------------------------------------------------------------------------
    def use_rtsp_port(self, port: int) -> None:
        """The port this camera's RTSP server got (each twin camera has its own; the device uses
        8554): the camera boots with it in ``rtsp.port``, and settings still on the old default,
        current or stored in a profile, move with it, so the configuration names the served port."""
        old, self._rtsp_port = self._rtsp_port, port
        if self._env is not None:
            _move_rtsp_port(self._settings, old, port)

    def _preset(self, name: str) -> cfg.MediaSettings:
        streams = [_stream.scaled(c, _stream.RESOLUTION_SCALE) for c in cfg.PROFILES[name]]
        enabled = {s.stream_id: True for s in streams}
        return cfg.MediaSettings(streams, enabled, rtsp_port=self._rtsp_port, profile=name)

    def _defaults(self) -> cfg.MediaSettings:
        """The settings the camera boots with: the fleet's profile, with the device's profiles beside
        it; the ``default`` encoders boot as the device's default profile."""
        spec = self._world.config.spec_by_camera().get(self._id, self._world.config.cameras)
        boot = spec.profile
        settings = self._preset(boot)
        settings.overlay = AiOverlay(enabled=spec.ai_overlay)
        self._add_device_profiles(settings)
        if boot == "default":
            settings.profile = cfg.DEVICE_DEFAULT_PROFILE
        settings.profiles[settings.profile] = settings.to_dict()
        return settings

    def _add_device_profiles(self, settings: cfg.MediaSettings) -> None:
        """The device's profiles a camera lacks (an older twin's document has none), with the
        ``default`` encoders; stored ones keep what they hold."""
        for name in cfg.DEVICE_PROFILES:
            if name not in settings.profiles:
                device = self._preset("default")
                device.profile = name
                settings.profiles[name] = device.to_dict()

    def _stored(self) -> cfg.MediaSettings | None:
        """The settings last written to the store, on the port this camera is served on now."""
        doc = self._world.store.collection(MEDIA_KIND).get(self._id)
        if doc is None:
            return None
        try:
            parsed = cfg.parse_document(doc["config"])
            settings = cfg.MediaSettings([], {}, profiles=dict(doc["profiles"]))
            served = int(doc["rtsp_served"])
        except (InvalidInput, KeyError, TypeError, ValueError) as err:
            self._world.store.skip_unreadable(MEDIA_KIND, self._id, str(err))
            return None  # an older twin's document: boot with the defaults
        for name, value in parsed.items():
            setattr(settings, name, value)
        _move_rtsp_port(settings, served, self._rtsp_port)
        self._add_device_profiles(settings)
        return settings

    def _save(self) -> None:
        s = self._settings
        doc = {"config": s.to_dict(), "profiles": s.profiles, "rtsp_served": self._rtsp_port}
        self._world.store.collection(MEDIA_KIND).put(self._id, doc)

    def _current(self) -> dict[str, VideoStream]:
        if self._env is not self._world.env:
            for old in self._streams.values():
                old.close()
            self._scene = scene_of(self._world, self._id)
            self._detector = Detector(self._world.streams.key(f"{self._id}/detections"))
            self._settings = self._stored() or self._defaults()
            self._osd_files, self._osd_pixels = {}, {}
            for name, doc in self._world.store.collection(OSD_IMAGES_KIND).items_under(self._id + ":"):
                self._keep_osd_image(name, doc["content_type"], base64.b64decode(doc["data"]))
            self._streams = {c.stream_id: self._new_stream(c) for c in self._settings.streams}
            self._env = self._world.env
            if self._settings.overlay.enabled:
                self._env.process(self._publish_detections(self._env))
        return self._streams

    def _new_stream(self, config: StreamConfig) -> VideoStream:
        return VideoStream(self._world, self._id, config, self._scene, self._view, self.source)

    def settings(self) -> cfg.MediaSettings:
        self._current()
        return self._settings

    def sync(self) -> None:
        """Make the running streams match the settings: new ones, changed ones, removed ones."""
        streams = self._current()
        wanted = {c.stream_id: c for c in self._settings.streams}
        for name in list(streams):
            if name not in wanted:
                streams.pop(name).close()
        for name, config in wanted.items():
            if name not in streams:
                streams[name] = self._new_stream(config)
            elif streams[name].config != config:
                streams[name].reconfigure(config)
            if not self._settings.enabled.get(name, True):
                for viewer in list(streams[name].viewers):
                    viewer.close()
        self._streams = {name: streams[name] for name in wanted}
        self._save()

    def reinit_streams(self) -> None:
        for stream in self._current().values():
            stream.reconfigure(stream.config)

    def _camera(self) -> Camera:
        return camera_of(self._world, self._id)

    def _view(self, stream_id: str) -> View:
        camera = self._camera()
        lens, per = camera.lens, camera.peripherals
        s = self._settings
        pan, tilt = per.view_offset()
        zoom = lens.zoom_ratio()
        osd = s.osd.get(stream_id)
        if osd is None:
            texts, dates = default_osd(self._id)
            images: tuple = ()
        else:
            texts, dates = osd.text_overlays, osd.datetime_overlays
            images = tuple(
                (i.x, i.y, i.width, i.height, self._osd_pixels[PurePosixPath(i.image_path).name])
                for i in osd.image_overlays
                if i.enabled and PurePosixPath(i.image_path).name in self._osd_pixels
            )
        weather = weather_of(self._world, self._id)
        detections = (
            self._detector.detect(self._scene, self._world.env.now, zoom, pan, tilt, self._seen(camera))
            if s.overlay.enabled
            else ()
        )
        return View(
            unix_time=camera.clock.now(),  # the OSD shows device time
            camera_id=self._id,
            zoom=zoom,
            pan=pan,
            tilt=tilt,
            blur_1280=lens.blur_sigma(1280),
            exposure=lens.exposure(),
            daylight=per.daylight(),
            night=per.night(),
            light=per.light_level,
            ir_led=per.ir_led_level,
            image=s.image,
            transform=s.transform,
            masks=s.privacy.regions if s.privacy.enabled else (),
            mask_color=s.privacy.color,
            mask_blur=s.privacy.blur_radius,
            texts=texts,
            datetimes=dates,
            images=images,
            overlay=s.overlay,
            detections=detections,
            weather=weather,
            sun=sun_side(self._world.now()),
        )

    # Streams -----------------------------------------------------------------------------------
    def streams(self) -> list[StreamConfig]:
        return [s.config for s in self._current().values()]

    def stream(self, stream_id: str) -> VideoStream:
        stream = self._current().get(stream_id)
        if stream is None:
            raise NotFound(f"stream {stream_id} not found", resource="stream")
        return stream

    def _service_running(self) -> bool:
        camera = cameras_of(self._world).get(self._id)
        ai = getattr(camera, "ai", None)
        return camera is not None and getattr(ai, "camera_service_running", True)

    def status(self) -> list[StreamStatus]:
        out = []
        now = self._world.env.now
        service = self._service_running()
        stall = self.source.stall() if self.source is not None else ""
        for s in self._current().values():
            enabled = self._settings.enabled.get(s.config.stream_id, True)
            # The device's camera daemon encodes all the time; the twin renders only while someone
            # watches, but reports what the device would: an active stream whose last frame is at
            # most one frame period old.
            period = 1.0 / s.config.fps
            if not service:
                out.append(StreamStatus(s.config, "unknown", False, None, 0.0, "camera service not running"))
                continue
            if not enabled:
                state, since, fps = "inactive", None, 0.0
            elif s.interrupted_until is not None:
                state, since, fps = "starting", None, 0.0
            elif stall:
                state, since, fps = "stalled", None, 0.0
            else:
                state = "active"
                if s.running() and s.last_frame_at is not None:
                    since = round((now - s.last_frame_at) * 1000, 1)
                else:
                    since = round((now % period) * 1000, 1)
                fps = s.measured_fps() if s.running() else float(s.config.fps)
            out.append(
                StreamStatus(
                    config=s.config,
                    status=state,
                    has_encoder=enabled,
                    ms_since_last_frame=since,
                    measured_fps=fps,
                    status_detail=stall if enabled else "disabled in configuration",
                    viewers=len(s.viewers),
                    dropped_frames=s.dropped(),
                )
            )
        return out

    def render_now(self, stream_id: str) -> np.ndarray:
        """The frame the stream shows at this instant (BGR), rendered on the caller's thread."""
        config = self.stream(stream_id).config
        renderer = Renderer(self._scene, config.width, config.height, self._id, self.source)
        return renderer.render(self._world.env.now, self._view(stream_id))

    def open_viewer(self, stream_id: str) -> Viewer:
        stream = self.stream(stream_id)
        if not self._settings.enabled.get(stream_id, True):
            raise Unavailable(f"stream {stream_id} is disabled")
        if not self._service_running():
            raise Unavailable("camera service not running")
        return stream.join()

    # Picture -----------------------------------------------------------------------------------
    def image(self) -> ImageSettings:
        return self.settings().image

    def set_image(self, settings: ImageSettings) -> None:
        for k in ("brightness", "contrast", "saturation", "sharpness"):
            if not -100 <= getattr(settings, k) <= 100:
                raise InvalidInput(f"{k} must be between -100 and 100")
        self.settings().image = settings
        self._save()

    def transform(self) -> Transform:
        return self.settings().transform

    def set_transform(self, transform: Transform) -> None:
        if transform.rotation not in cfg.ROTATIONS:
            raise InvalidInput("rotation must be 0, 90, 180 or 270")
        self.settings().transform = transform
        self._save()

    def osd(self) -> tuple[OsdStream, ...]:
        s = self.settings()
        out = []
        for c in s.streams:
            current = s.osd.get(c.stream_id)
            if current is None:
                texts, dates = default_osd(self._id)
                current = OsdStream(c.stream_id, texts, dates)
            out.append(current)
        return tuple(out)

    def set_osd(self, streams: tuple[OsdStream, ...]) -> None:
        """As the daemon does, a stream it has no encoder for is skipped."""
        s = self.settings()
        for o in streams:
            if s.stream(o.stream_name) is not None:
                s.osd[o.stream_name] = o
        self._save()

    def drop_orphan_osd(self) -> None:
        s = self._settings
        for name in list(s.osd):
            if s.stream(name) is None:
                s.osd.pop(name)

    def upload_osd_image(self, name: str, content_type: str, data: bytes) -> OsdImageFile:
        self._current()
        if not name or "/" in name or "\\" in name or ".." in name:
            raise InvalidInput("invalid image name")
        if len(data) > MAX_OSD_IMAGE_BYTES:
            raise InvalidInput("image too large")
        if name not in self._osd_files and len(self._osd_files) >= MAX_OSD_IMAGES:
            raise InvalidInput(f"at most {MAX_OSD_IMAGES} OSD images")
        pixels = _decode(data)
        file = self._keep_osd_image(name, content_type or "application/octet-stream", data, pixels)
        doc = {"content_type": file.content_type, "data": base64.b64encode(data).decode()}
        self._world.store.collection(OSD_IMAGES_KIND).put(f"{self._id}:{name}", doc)
        return file

    def _keep_osd_image(
        self, name: str, content_type: str, data: bytes, pixels: np.ndarray | None = None
    ) -> OsdImageFile:
        if pixels is None:
            pixels = _decode(data)
        file = OsdImageFile(name, content_type, data)
        self._osd_files[name] = file
        if pixels is not None:
            self._osd_pixels[name] = pixels
        return file

    def osd_image(self, name: str) -> OsdImageFile:
        self._current()
        file = self._osd_files.get(name)
        if file is None:
            raise NotFound(f"OSD image {name} not found", resource="file")
        return file

    def privacy_masks(self) -> PrivacyMaskConfig:
        return self.settings().privacy

    def set_privacy_masks(self, config: PrivacyMaskConfig) -> None:
        self.settings().privacy = config
        self._save()

    def ai_overlay(self) -> AiOverlay:
        return self.settings().overlay

    def set_ai_overlay(self, overlay: AiOverlay) -> None:
        s = self.settings()
        was = s.overlay.enabled
        s.overlay = dataclasses.replace(overlay)
        self._save()
        if overlay.enabled and not was:
            self._world.env.process(self._publish_detections(self._world.env))

    def _publish_detections(self, env):
        """While the overlay is on: one ``camera.detections`` event per second of world time."""
        while env is self._world.env and self._settings.overlay.enabled:
            found = self.detections()
            labels: dict[str, int] = {}
            for d in found:
                labels[d.label] = labels.get(d.label, 0) + 1
            self._world.emit(EventKind.CAMERA_DETECTIONS, self._id, count=len(found), labels=labels)
            yield env.timeout(DETECTIONS_EVERY_S)

    def detections(self) -> list[Detection]:
        self._current()
        camera = self._camera()
        if not self._service_running():
            return []  # no frames, nothing to infer on: apps see zero detections
        pan, tilt = camera.peripherals.view_offset()
        zoom, now = camera.lens.zoom_ratio(), self._world.env.now
        return list(self._detector.detect(self._scene, now, zoom, pan, tilt, self._seen(camera)))

    def _seen(self, camera: Camera) -> float:
        """How well the AI model sees in this light and weather (0..1)."""
        per, weather = camera.peripherals, weather_of(self._world, self._id)
        return visibility(weather, per.daylight(), per.night(), per.ir_led_level, per.light_level)
