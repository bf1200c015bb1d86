"""The camera daemon's configuration: encoders per stream, picture settings, OSD, privacy masks,
AI overlay, RTSP, and named profiles.

:class:`MediaSettings` is the typed state; :meth:`MediaSettings.to_dict` and
:meth:`MediaSettings.apply` are its document form (``GET/POST media/config``, export/import), so a
partial overlay posted by a client is merged into the current document, validated as a whole and only
then applied: a bad document changes nothing.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from hardware.ports.camera_hw import (
    OSD_IMAGE_DIR,
    AiOverlay,
    ImageSettings,
    OsdDatetime,
    OsdImage,
    OsdStream,
    OsdText,
    PrivacyMaskConfig,
    PrivacyRegion,
    Transform,
)
from hardware.ports.errors import InvalidInput
from hardware.ports.media import StreamConfig

CODECS = ("h264", "h265")
ROTATIONS = (0, 90, 180, 270)
MIN_W, MAX_W, MIN_H, MAX_H = 64, 4096, 64, 2160
MAX_FPS = 60
RTSP_PORT = 8554
EXPORT_SCHEMA = "aipc.media_config"
EXPORT_VERSION = 1
# field_path -> ConfigFieldType (0 BOOL, 1 INT32, 2 UINT32, 3 FLOAT64, 4 STRING)
FIELD_TYPES = {0: "BOOL", 1: "INT32", 2: "UINT32", 3: "FLOAT64", 4: "STRING"}
FIELDS: dict[str, int] = {
    "frontend.hailort.use-hailort-service": 0,
    "rtsp.enabled": 0,
    "rtsp.port": 2,
    "image.brightness": 1,
    "image.contrast": 1,
    "image.saturation": 1,
    "image.sharpness": 1,
    "transform.flip": 0,
    "transform.mirror": 0,
    "transform.rotation": 2,
    "ai_overlay.enabled": 0,
    "ai_overlay.line_thickness": 2,
    "privacy_mask.enabled": 0,
}


PROFILES: dict[str, tuple[StreamConfig, ...]] = {
    "default": (
        StreamConfig("main", "h264", 1920, 1080, 30, 4_000_000, 30),
        StreamConfig("sub", "h264", 1280, 720, 30, 2_000_000, 60),
        StreamConfig("third", "h264", 640, 384, 15, 512_000, 30),
    ),
    "low_bandwidth": (
        StreamConfig("main", "h264", 1280, 720, 15, 1_000_000, 30),
        StreamConfig("sub", "h264", 640, 384, 10, 256_000, 20),
    ),
    "high_framerate": (
        StreamConfig("main", "h264", 1920, 1080, 60, 8_000_000, 60),
        StreamConfig("sub", "h264", 1280, 720, 60, 4_000_000, 120),
        StreamConfig("third", "h264", 640, 384, 30, 1_000_000, 60),
    ),
    "single_stream": (StreamConfig("main", "h264", 1920, 1080, 30, 4_000_000, 30),),
}
"""The media profiles a camera can boot with (``fleet.cameras[].profile``): its encoders. The camera
lists the device's profiles and, booted with another, that one (``GET media/profiles``)."""

DEVICE_PROFILES = (
    "Daylight_Basic",
    "High_Dynamic_Range_Basic",
    "AI_ISP_Gen1_Basic",
    "AI_ISP_Gen2_Basic",
    "AI_ISP_Gen3_Basic",
)
"""The medialib profiles the device's camera daemon embeds; each one here carries the ``default``
encoders. Its ``SwitchProfile`` only switches to ``SWITCHABLE_DEVICE_PROFILES``; a camera booted
with the fleet's ``default`` encoders is on ``DEVICE_DEFAULT_PROFILE`` (the console's AI ISP off)."""
SWITCHABLE_DEVICE_PROFILES = frozenset(DEVICE_PROFILES) - {"High_Dynamic_Range_Basic"}
DEVICE_DEFAULT_PROFILE = "Daylight_Basic"


@dataclasses.dataclass
class MediaSettings:
    streams: list[StreamConfig]
    enabled: dict[str, bool]
    image: ImageSettings = dataclasses.field(default_factory=ImageSettings)
    transform: Transform = dataclasses.field(default_factory=Transform)
    osd: dict[str, OsdStream] = dataclasses.field(default_factory=dict)
    privacy: PrivacyMaskConfig = dataclasses.field(default_factory=PrivacyMaskConfig)
    overlay: AiOverlay = dataclasses.field(default_factory=AiOverlay)
    rtsp_enabled: bool = True
    rtsp_port: int = RTSP_PORT
    hailort_service: bool = True
    profile: str = "default"
    profiles: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def stream(self, name: str) -> StreamConfig | None:
        return next((s for s in self.streams if s.stream_id == name), None)

    # Document form -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "streams": [
                {
                    "name": s.stream_id,
                    "enabled": self.enabled.get(s.stream_id, True),
                    "encoder": {
                        "codec": s.codec,
                        "width": s.width,
                        "height": s.height,
                        "fps": s.fps,
                        "bitrate_bps": s.bitrate_bps,
                        "gop": s.gop,
                    },
                }
                for s in self.streams
            ],
            "image": dataclasses.asdict(self.image),
            "transform": dataclasses.asdict(self.transform),
            "osd": {"streams": [osd_dict(o) for o in self.osd.values()]},
            "privacy_mask": masks_dict(self.privacy),
            "ai_overlay": dataclasses.asdict(self.overlay),
            "rtsp": {"enabled": self.rtsp_enabled, "port": self.rtsp_port},
            "frontend": {"hailort": {"use-hailort-service": self.hailort_service}},
            "profile": self.profile,
        }

    def apply(self, overlay: dict[str, Any]) -> None:
        """Merge ``overlay`` into the current document, validate it all, then take it."""
        if not isinstance(overlay, dict):
            raise InvalidInput("config must be a JSON object")
        doc = merge(self.to_dict(), overlay)
        parsed = parse_document(doc)
        for name, value in parsed.items():
            setattr(self, name, value)

    def field(self, path: str) -> tuple[int, str]:
        kind = FIELDS.get(path)
        if kind is None:
            raise InvalidInput(f"field {path} is not allow-listed")
        value: Any = self.to_dict()
        for part in path.split("."):
            value = value[part]
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return kind, text

    def set_field(self, path: str, kind: int, text: str) -> None:
        expected = FIELDS.get(path)
        if expected is None:
            raise InvalidInput(f"field {path} is not allow-listed")
        if kind != expected:
            raise InvalidInput(f"field {path} has type {FIELD_TYPES[expected]}")
        value: Any
        if kind == 0:
            if text not in ("true", "false", "1", "0"):
                raise InvalidInput(f"invalid BOOL value {text!r}")
            value = text in ("true", "1")
        elif kind in (1, 2):
            try:
                value = int(text)
            except ValueError as err:
                raise InvalidInput(f"invalid {FIELD_TYPES[kind]} value {text!r}") from err
            if kind == 2 and value < 0:
                raise InvalidInput(f"invalid UINT32 value {text!r}")
        else:
            value = text
        overlay: dict[str, Any] = {}
        node = overlay
        parts = path.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
        self.apply(overlay)


def osd_dict(o: OsdStream) -> dict[str, Any]:
    return {
        "stream_name": o.stream_name,
        "text_overlays": [dataclasses.asdict(t) for t in o.text_overlays],
        "datetime_overlays": [dataclasses.asdict(d) for d in o.datetime_overlays],
        "image_overlays": [dataclasses.asdict(i) for i in o.image_overlays],
    }


def merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``: objects merge key by key; streams merge by name; else replaced."""
    out = copy.deepcopy(base)
    for key, value in overlay.items():
        if key == "streams" and isinstance(value, list) and isinstance(out.get(key), list):
            by_name = {s.get("name"): s for s in out[key] if isinstance(s, dict)}
            for item in value:
                if isinstance(item, dict) and item.get("name") in by_name:
                    by_name[item["name"]].update(merge(by_name[item["name"]], item))
                else:
                    out[key].append(item)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# Validation ------------------------------------------------------------------------------------
def _obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidInput(f"{where} must be an object")
    return value


def _int(value: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInput(f"{where} must be an integer between {lo} and {hi}")
    return value


def _num(value: Any, where: str, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise InvalidInput(f"{where} must be a number between {lo:g} and {hi:g}")
    return float(value)


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{where} must be a boolean")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string")
    return value


def stream_config(name: str, enc: dict[str, Any]) -> StreamConfig:
    """An encoder entry, checked: codec, even size within limits, fps, bitrate, GOP."""
    where = f"streams.{name}.encoder"
    codec = _str(enc.get("codec", "h264"), f"{where}.codec")
    if codec not in CODECS:
        raise InvalidInput(f"{where}.codec must be h264 or h265")
    if codec != "h264":
        raise InvalidInput(f"{where}.codec h265 is not supported by this camera's encoder")
    width = _int(enc.get("width"), f"{where}.width", MIN_W, MAX_W)
    height = _int(enc.get("height"), f"{where}.height", MIN_H, MAX_H)
    if width % 2 or height % 2:
        raise InvalidInput(f"{where}: width and height must be even")
    fps = _int(enc.get("fps"), f"{where}.fps", 1, MAX_FPS)
    bitrate = _int(enc.get("bitrate_bps"), f"{where}.bitrate_bps", 10_000, 50_000_000)
    gop = _int(enc.get("gop"), f"{where}.gop", 1, 600)
    return StreamConfig(name, codec, width, height, fps, bitrate, gop)


def parse_osd_stream(item: Any) -> OsdStream:
    o = _obj(item, "osd stream")
    name = _str(o.get("stream_name"), "osd.stream_name")
    texts = []
    for i, t in enumerate(o.get("text_overlays") or []):
        t = _obj(t, "text overlay")
        texts.append(
            OsdText(
                _str(t.get("id", f"text{i}"), "text_overlays.id"),
                _str(t.get("text", ""), "text_overlays.text"),
                _num(t.get("x", 0.0), "text_overlays.x", 0, 1),
                _num(t.get("y", 0.0), "text_overlays.y", 0, 1),
                _num(t.get("font_size", 24.0), "text_overlays.font_size", 0, 4096),
                _int(t.get("text_color", 0xFFFFFF), "text_overlays.text_color", 0, 0xFFFFFFFF),
                _bool(t.get("enabled", True), "text_overlays.enabled"),
                _int(t.get("h_align", 0), "text_overlays.h_align", -(2**31), 2**31 - 1),
                _int(t.get("v_align", 0), "text_overlays.v_align", -(2**31), 2**31 - 1),
            )
        )
    dates = []
    for i, d in enumerate(o.get("datetime_overlays") or []):
        d = _obj(d, "datetime overlay")
        dates.append(
            OsdDatetime(
                _str(d.get("id", f"datetime{i}"), "datetime_overlays.id"),
                _num(d.get("x", 0.0), "datetime_overlays.x", 0, 1),
                _num(d.get("y", 0.0), "datetime_overlays.y", 0, 1),
                _str(d.get("format", "%Y-%m-%d %H:%M:%S"), "datetime_overlays.format"),
                _num(d.get("font_size", 24.0), "datetime_overlays.font_size", 0, 4096),
                _int(d.get("text_color", 0xFFFFFF), "datetime_overlays.text_color", 0, 0xFFFFFFFF),
                _bool(d.get("enabled", True), "datetime_overlays.enabled"),
                _int(d.get("h_align", 0), "datetime_overlays.h_align", -(2**31), 2**31 - 1),
                _int(d.get("v_align", 0), "datetime_overlays.v_align", -(2**31), 2**31 - 1),
            )
        )
    images = []
    for i, m in enumerate(o.get("image_overlays") or []):
        m = _obj(m, "image overlay")
        path = m.get("image_path")
        if path is None and m.get("name") is not None:  # a document from before image paths
            path = f"{OSD_IMAGE_DIR}/{_str(m['name'], 'image_overlays.name')}"
        images.append(
            OsdImage(
                _str(m.get("id", f"image{i}"), "image_overlays.id"),
                _str(path, "image_overlays.image_path"),
                _num(m.get("x", 0.0), "image_overlays.x", 0, 1),
                _num(m.get("y", 0.0), "image_overlays.y", 0, 1),
                _num(m.get("width", 0.1), "image_overlays.width", 0, 1),
                _num(m.get("height", 0.1), "image_overlays.height", 0, 1),
                _bool(m.get("enabled", True), "image_overlays.enabled"),
                _int(m.get("h_align", 0), "image_overlays.h_align", -(2**31), 2**31 - 1),
                _int(m.get("v_align", 0), "image_overlays.v_align", -(2**31), 2**31 - 1),
            )
        )
    return OsdStream(name, tuple(texts), tuple(dates), tuple(images))


def masks_dict(p: PrivacyMaskConfig) -> dict[str, Any]:
    """The daemon's ``privacy_mask`` block: ``GET media/privacy-mask``'s fields."""
    out = dataclasses.asdict(p)
    out["regions"] = [
        {**r, "points_x": list(r["points_x"]), "points_y": list(r["points_y"])} for r in out["regions"]
    ]
    return out


def parse_masks(value: Any) -> PrivacyMaskConfig:
    p = _obj(value, "privacy_mask")
    regions = []
    for i, r in enumerate(p.get("regions") or []):
        r = _obj(r, "privacy_mask.regions")
        xs, ys = r.get("points_x") or [], r.get("points_y") or []
        if not isinstance(xs, list) or not isinstance(ys, list) or len(xs) > 8 or len(ys) > 8:
            raise InvalidInput("privacy_mask.regions: at most 8 vertices")
        regions.append(
            PrivacyRegion(
                _str(r.get("id", f"region{i}"), "regions.id"),
                _str(r.get("name", ""), "regions.name"),
                _bool(r.get("enabled", False), "regions.enabled"),
                tuple(_num(v, "regions.points_x", 0, 1) for v in xs),
                tuple(_num(v, "regions.points_y", 0, 1) for v in ys),
            )
        )
    return PrivacyMaskConfig(
        enabled=_bool(p.get("enabled", False), "privacy_mask.enabled"),
        color=_int(p.get("color", 0), "privacy_mask.color", 0, 0xFFFFFF),
        blur_radius=_int(p.get("blur_radius", 0), "privacy_mask.blur_radius", 0, 64),
        regions=tuple(regions),
        dpm_enabled=_bool(p.get("dpm_enabled", False), "privacy_mask.dpm_enabled"),
        dpm_labels=_str(p.get("dpm_labels", ""), "privacy_mask.dpm_labels"),
        dpm_mode=_str(p.get("dpm_mode", ""), "privacy_mask.dpm_mode"),
        dpm_color=_int(p.get("dpm_color", 0), "privacy_mask.dpm_color", 0, 0xFFFFFF),
    )


def parse_image(value: Any) -> ImageSettings:
    """The four picture fields on -100..100, the daemon's other ISP fields as int32s or flags; a
    field left out keeps its default."""
    i = _obj(value, "image")
    fields: dict[str, Any] = {}
    for name, default in dataclasses.asdict(ImageSettings()).items():
        if isinstance(default, bool):
            fields[name] = _bool(i.get(name, default), f"image.{name}")
        elif name in ("brightness", "contrast", "saturation", "sharpness"):
            fields[name] = _int(i.get(name, default), f"image.{name}", -100, 100)
        else:
            fields[name] = _int(i.get(name, default), f"image.{name}", -(2**31), 2**31 - 1)
    return ImageSettings(**fields)


def parse_transform(value: Any) -> Transform:
    t = _obj(value, "transform")
    rotation = _int(t.get("rotation", 0), "transform.rotation", 0, 270)
    if rotation not in ROTATIONS:
        raise InvalidInput("transform.rotation must be 0, 90, 180 or 270")
    flags = ("flip", "mirror", "dewarp", "grayscale", "dis", "eis")
    return Transform(rotation=rotation, **{k: _bool(t.get(k, False), f"transform.{k}") for k in flags})


def parse_overlay(value: Any) -> AiOverlay:
    a = _obj(value, "ai_overlay")
    return AiOverlay(
        _bool(a.get("enabled", False), "ai_overlay.enabled"),
        _bool(a.get("show_label", True), "ai_overlay.show_label"),
        _bool(a.get("show_confidence", True), "ai_overlay.show_confidence"),
        _int(a.get("line_thickness", 2), "ai_overlay.line_thickness", 0, 2**32 - 1),
    )


def parse_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's typed fields, or ``InvalidInput`` naming the first bad one."""
    streams, enabled = [], {}
    items = doc.get("streams")
    if not isinstance(items, list) or not items:
        raise InvalidInput("streams must be a non-empty list")
    for item in items:
        s = _obj(item, "stream")
        name = _str(s.get("name"), "streams.name")
        if not name or "/" in name or ".." in name:
            raise InvalidInput("streams.name must be a plain name")
        if name in enabled:
            raise InvalidInput(f"stream {name} appears twice")
        streams.append(stream_config(name, _obj(s.get("encoder"), f"streams.{name}.encoder")))
        enabled[name] = _bool(s.get("enabled", True), f"streams.{name}.enabled")
    osd = {}
    for item in _obj(doc.get("osd", {}), "osd").get("streams") or []:
        o = parse_osd_stream(item)
        if o.stream_name not in enabled:
            raise InvalidInput(f"osd: unknown stream {o.stream_name}")
        osd[o.stream_name] = o
    rtsp = _obj(doc.get("rtsp", {}), "rtsp")
    frontend = _obj(_obj(doc.get("frontend", {}), "frontend").get("hailort", {}), "frontend.hailort")
    return {
        "streams": streams,
        "enabled": enabled,
        "image": parse_image(doc.get("image", {})),
        "transform": parse_transform(doc.get("transform", {})),
        "osd": osd,
        "privacy": parse_masks(doc.get("privacy_mask", {})),
        "overlay": parse_overlay(doc.get("ai_overlay", {})),
        "rtsp_enabled": _bool(rtsp.get("enabled", True), "rtsp.enabled"),
        "rtsp_port": _int(rtsp.get("port", RTSP_PORT), "rtsp.port", 1, 65535),
        "hailort_service": _bool(frontend.get("use-hailort-service", True), "use-hailort-service"),
        "profile": _str(doc.get("profile", "default"), "profile"),
    }
