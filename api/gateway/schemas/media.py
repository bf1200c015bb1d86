"""Wire shapes of the gateway's media area (``handlers/media.go``): the streams' status and the
picture settings' requests and answers."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Callable
from typing import Any

from api import json_input
from api.gateway.schemas.binding import bind, check
from hardware.ports.camera_hw import (
    OSD_IMAGE_DIR,
    OsdDatetime,
    OsdImage,
    OsdStream,
    OsdText,
    PrivacyMaskConfig,
    PrivacyRegion,
)
from hardware.ports.errors import InvalidInput
from hardware.ports.media import StreamStatus


def media_status(rows: list[StreamStatus]) -> dict[str, Any]:
    """``{streams:[{stream_id, status, has_encoder, codec, width, height, fps, bitrate_bps, gop,
    ms_since_last_frame (a uint64, or null), measured_fps, status_detail}]}``."""
    return {
        "streams": [
            {
                "stream_id": r.config.stream_id,
                "status": r.status,
                "has_encoder": r.has_encoder,
                "codec": r.config.codec,
                "width": r.config.width,
                "height": r.config.height,
                "fps": r.config.fps,
                "bitrate_bps": r.config.bitrate_bps,
                "gop": r.config.gop,
                "ms_since_last_frame": None
                if r.ms_since_last_frame is None
                else round(r.ms_since_last_frame),
                "measured_fps": r.measured_fps,
                "status_detail": r.status_detail,
            }
            for r in rows
        ]
    }


# The picture settings ----------------------------------------------------------------------------
AI_OVERLAY_REQ = {
    "enabled": "bool",
    "show_label": "bool",
    "show_confidence": "bool",
    "line_thickness": "uint32",
}


def parse_ai_overlay(raw: bytes) -> dict[str, Any]:
    """``UpdateAiOverlay``'s struct, every field as sent or its zero value; any failure is the bare
    ``Invalid request body``."""
    try:
        body = bind(raw, "", AI_OVERLAY_REQ)
    except InvalidInput as err:
        raise InvalidInput("Invalid request body") from err
    return {"enabled": False, "show_label": False, "show_confidence": False, "line_thickness": 0, **body}


MASK_REQ = {
    "enabled": "*bool",
    "color": "*uint32",
    "blur_radius": "*int32",
    "blurRadius": "*int32",
    "regions": "[]handlers.privacyMaskRegionUpdate",
    "dpm_enabled": "*bool",
    "dpmEnabled": "*bool",
    "dpm_labels": "*string",
    "dpmLabels": "*string",
    "dpm_mode": "*string",
    "dpmMode": "*string",
    "dpm_color": "*uint32",
    "dpmColor": "*uint32",
}
"""``UpdatePrivacyMaskConfig``'s request (decoded strictly: an unknown field is refused)."""
REGION_REQ = {
    "id": "string",
    "name": "string",
    "enabled": "*bool",
    "points_x": "[]float32",
    "pointsX": "[]float32",
    "points_y": "[]float32",
    "pointsY": "[]float32",
}
ALIASES = ("blur_radius", "dpm_enabled", "dpm_labels", "dpm_mode", "dpm_color")
DPM_MODES = ("", "mosaic", "blur", "overlay")
BAD = "Invalid request body"
BAD_BODY = BAD + ": "


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _strict(body: dict[str, Any], fields: dict[str, str]) -> None:
    for key in body:
        if key not in fields:
            raise InvalidInput(f'{BAD_BODY}json: unknown field "{key}"')


def _merged(body: dict[str, Any], name: str) -> Any:
    snake, camel = body.get(name), body.get(_camel(name))
    if snake is not None and camel is not None and snake != camel:
        raise InvalidInput(f"{name} and its camelCase alias disagree")
    return snake if snake is not None else camel


def _points(region: dict[str, Any], name: str) -> list[float]:
    values = _merged(region, name) or []
    for v in values:
        check(v, "float32", "privacyMaskRegionUpdate", f"regions.{name}", BAD)
    return [float(v) for v in values]


def parse_privacy_mask(raw: bytes, current: PrivacyMaskConfig) -> PrivacyMaskConfig:
    """The fields sent (snake_case or camelCase) merged over ``current``, checked as the handler does."""
    if not raw.strip():
        raise InvalidInput(f"{BAD_BODY}EOF")
    body = bind(raw, "", MASK_REQ)
    try:
        whole = json_input.loads(raw, json_input.GO)
    except ValueError as err:  # pragma: no cover - bind has refused it already
        raise InvalidInput(f"{BAD_BODY}invalid JSON") from err
    _strict(whole, MASK_REQ)
    regions = body.get("regions")
    for region in regions or []:
        check(region, "handlers.privacyMaskRegionUpdate", "", "regions", BAD)
        _strict(region, REGION_REQ)
        for key, go_type in REGION_REQ.items():
            if region.get(key) is not None:
                check(region[key], go_type, "privacyMaskRegionUpdate", f"regions.{key}", BAD)
    merged = {name: _merged(body, name) for name in ALIASES}
    sent = [body.get("enabled"), body.get("color"), regions, *merged.values()]
    if all(v is None for v in sent):
        raise InvalidInput("No supported privacy mask fields were provided")
    blur = merged["blur_radius"]
    if blur is not None and not 0 <= blur <= 64:
        raise InvalidInput("blur_radius must be in [0, 64]")
    if merged["dpm_mode"] is not None and merged["dpm_mode"] not in DPM_MODES:
        raise InvalidInput("dpm_mode must be one of: mosaic, blur, overlay")
    if merged["dpm_color"] is not None and merged["dpm_color"] > 0xFFFFFF:
        raise InvalidInput("dpm_color must be a 24-bit RGB value")
    parsed = []
    for region in regions or []:
        xs, ys = _points(region, "points_x"), _points(region, "points_y")
        if len(xs) > 8 or len(ys) > 8:
            raise InvalidInput("Each region must have at most 8 vertices")
        for name, values in (("points_x", xs), ("points_y", ys)):
            if any(not 0.0 <= v <= 1.0 for v in values):
                raise InvalidInput(f"{name} must be in [0.0, 1.0]")
        parsed.append(
            PrivacyRegion(
                region.get("id") or "",
                region.get("name") or "",
                bool(region.get("enabled")),
                tuple(xs),
                tuple(ys),
            )
        )
    changes: dict[str, Any] = {k: v for k, v in merged.items() if v is not None}
    if body.get("enabled") is not None:
        changes["enabled"] = body["enabled"]
    if body.get("color") is not None:
        changes["color"] = body["color"]
    if regions is not None:
        changes["regions"] = tuple(parsed)
    return dataclasses.replace(current, **changes)


def privacy_mask(p: PrivacyMaskConfig) -> dict[str, Any]:
    """``GetPrivacyMaskConfig``'s ``gin.H``: every key present."""
    return {
        "enabled": p.enabled,
        "color": p.color,
        "blur_radius": p.blur_radius,
        "regions": [
            {
                "id": r.id,
                "name": r.name,
                "enabled": r.enabled,
                "points_x": list(r.points_x),
                "points_y": list(r.points_y),
            }
            for r in p.regions
        ],
        "dpm_enabled": p.dpm_enabled,
        "dpm_labels": p.dpm_labels,
        "dpm_mode": p.dpm_mode,
        "dpm_color": p.dpm_color,
    }


# OSD -------------------------------------------------------------------------------------------
_ALIGN = {"h_align": "int32", "v_align": "int32"}
TEXT_REQ = {"id": "string", "text": "string", "x": "float32", "y": "float32", "font_size": "float32"}
TEXT_REQ |= {"text_color": "uint32", **_ALIGN, "enabled": "bool"}
DATETIME_REQ = {"id": "string", "x": "float32", "y": "float32", "format": "string", "font_size": "float32"}
DATETIME_REQ |= {"text_color": "uint32", **_ALIGN, "enabled": "bool"}
IMAGE_REQ = {"id": "string", "image_path": "string", "x": "float32", "y": "float32", "width": "float32"}
IMAGE_REQ |= {"height": "float32", **_ALIGN, "enabled": "bool"}
OVERLAYS = {"text_overlays": TEXT_REQ, "datetime_overlays": DATETIME_REQ, "image_overlays": IMAGE_REQ}


def _typed(value: Any, fields: dict[str, str]) -> dict[str, Any]:
    """One object of ``UpdateOsdConfig``'s request: every field present with its Go value."""
    if not isinstance(value, dict):
        raise InvalidInput(BAD)
    out = {}
    for name, go_type in fields.items():
        v = value.get(name)
        if v is not None:
            check(v, go_type, "", name)
        zero = {"string": "", "bool": False}.get(go_type, 0)
        out[name] = zero if v is None else float(v) if go_type == "float32" else v
    return out


def _unit(v: float) -> float:
    """``clampOsdUnit``."""
    return min(max(v, 0.0), 1.0)


def parse_osd(raw: bytes, image_exists: Callable[[str], bool]) -> tuple[OsdStream, ...]:
    """``UpdateOsdConfig``: any bind failure is the bare ``Invalid request body``; then, as the handler
    does, a stream without a name, an overlay without an id and an image overlay whose ``image_path`` is
    not an uploaded PNG/BMP under :data:`OSD_IMAGE_DIR` or whose size is outside (0, 1] are dropped, and
    ``x``/``y`` are clamped to [0, 1]."""
    try:
        body = bind(raw, "", {"streams": "[]object", "suppress_bake": "bool"})
        streams = []
        for item in body.get("streams") or []:
            s = _typed(item, {"stream_name": "string", **dict.fromkeys(OVERLAYS, "[]object")})
            lists = {k: [_typed(v, OVERLAYS[k]) for v in s[k] or []] for k in OVERLAYS}
            streams.append((s["stream_name"].strip(), lists))
    except InvalidInput as err:
        raise InvalidInput(BAD) from err
    out = []
    for name, lists in streams:
        if not name:
            continue
        texts = tuple(_text(t) for t in lists["text_overlays"] if t["id"].strip())
        dates = tuple(_datetime(d) for d in lists["datetime_overlays"] if d["id"].strip())
        images = tuple(
            _image(m, path)
            for m in lists["image_overlays"]
            if m["id"].strip()
            and (path := _image_path(m["image_path"], image_exists))
            and 0 < m["width"] <= 1
            and 0 < m["height"] <= 1
        )
        out.append(OsdStream(name, texts, dates, images))
    return tuple(out)


def _text(t: dict[str, Any]) -> OsdText:
    x, y, size, color = _unit(t["x"]), _unit(t["y"]), t["font_size"], t["text_color"]
    return OsdText(t["id"].strip(), t["text"], x, y, size, color, t["enabled"], t["h_align"], t["v_align"])


def _datetime(d: dict[str, Any]) -> OsdDatetime:
    x, y, size, color = _unit(d["x"]), _unit(d["y"]), d["font_size"], d["text_color"]
    return OsdDatetime(
        d["id"].strip(), x, y, d["format"], size, color, d["enabled"], d["h_align"], d["v_align"]
    )


def _image(m: dict[str, Any], path: str) -> OsdImage:
    x, y, w, h = _unit(m["x"]), _unit(m["y"]), m["width"], m["height"]
    return OsdImage(m["id"].strip(), path, x, y, w, h, m["enabled"], m["h_align"], m["v_align"])


def _image_path(raw: str, image_exists: Callable[[str], bool]) -> str:
    """``validOsdImagePath``: the cleaned path if it names an uploaded PNG/BMP, else empty."""
    path = posixpath.normpath(raw.strip()) if raw.strip() else ""
    name = posixpath.basename(path)
    ok = posixpath.dirname(path) == OSD_IMAGE_DIR and name.lower().endswith((".png", ".bmp"))
    return path if ok and image_exists(name) else ""


def osd(streams: tuple[OsdStream, ...], image_size: Callable[[str], int]) -> dict[str, Any]:
    """``GetOsdConfig``'s ``gin.H`` rows, every key present (an image's size 0 when it is gone)."""
    return {
        "streams": [
            {
                "stream_name": o.stream_name,
                "text_overlays": [{k: getattr(t, k) for k in TEXT_REQ} for t in o.text_overlays],
                "datetime_overlays": [{k: getattr(d, k) for k in DATETIME_REQ} for d in o.datetime_overlays],
                "image_overlays": [
                    {
                        "id": i.id,
                        "image_path": i.image_path,
                        "image_size": image_size(posixpath.basename(i.image_path)),
                        **{k: getattr(i, k) for k in IMAGE_REQ if k not in ("id", "image_path")},
                    }
                    for i in o.image_overlays
                ],
            }
            for o in streams
        ]
    }


def osd_upload_name(filename: str) -> str:
    """``UploadOsdImage``: the base name of a PNG or BMP, 1001 otherwise."""
    name = posixpath.basename(filename.replace("\\", "/"))
    if not name.lower().endswith((".png", ".bmp")):
        raise InvalidInput("only PNG and BMP images are supported")
    return name
