"""Images devices send: an ingested metric value that is an image (binary, or base64 text as
webhooks carry it, with or without a ``data:image/...;base64,`` prefix) is stored and the value
becomes its URL, ``/api/images/<device>/<metric>/<timestamp>_<content id>.<ext>``, as the vendor's
image storage does (the content id is the UUID v5 of the bytes, so the same frame maps to the same
URL). The server keeps image files under its data directory; the twin keeps them in the store
(the newest :data:`MAX_IMAGES`), never on the host's file system.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import uuid
from typing import TYPE_CHECKING, Any

from hardware.ports.data import StoredImage
from hardware.ports.errors import InvalidInput, NotFound

if TYPE_CHECKING:
    from twin.engine import Engine

MAX_IMAGES = 500
EXTENSIONS = ("png", "jpg", "jpeg", "webp", "gif", "bmp", "tiff", "bin")
MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
        "gif": "image/gif", "bmp": "image/bmp", "tiff": "image/tiff"}  # fmt: skip
BASE64_PREFIXES = ("/9j/", "iVBORw0KGgo", "R0lGOD", "UklGR", "Qk", "SUk", "TU0")
"""What image base64 starts with (JPEG, PNG, GIF, WebP, BMP, TIFF): the vendor's cheap reject."""
SAFE = re.compile(r"[A-Za-z0-9._-]+")


def detect_extension(data: bytes) -> str:
    if data[:3] == b"\xff\xd8\xff":
        return "jpg"
    if data[:4] == b"\x89PNG":
        return "png"
    if data[:4] == b"GIF8":
        return "gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:2] == b"BM":
        return "bmp"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    return "bin"


def decode_image(value: str) -> bytes | None:
    """The image a string carries, or ``None``."""
    if value.startswith("data:image/"):
        raw = value.partition(";base64,")[2]
        if not raw:
            return None
    elif len(value) > 100 and value.lstrip().startswith(BASE64_PREFIXES):
        raw = value
    else:
        return None
    cleaned = "".join(raw.split()).rstrip("=")
    padded = cleaned + "=" * (-len(cleaned) % 4)
    for decode in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            data = decode(padded)
        except (binascii.Error, ValueError):
            continue
        if len(data) >= 4 and detect_extension(data) != "bin":
            return data
    return None


def content_id(data: bytes) -> str:
    """``uuid::Uuid::new_v5(&NAMESPACE_URL, bytes).simple()``."""
    digest = hashlib.sha1(uuid.NAMESPACE_URL.bytes + data).digest()
    return uuid.UUID(bytes=digest[:16], version=5).hex


def safe(component: str) -> bool:
    return bool(SAFE.fullmatch(component)) and not component.startswith(".") and ".." not in component


class ImageStore:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.docs = world.store.collection("images")
        self._order: list[str] | None = None
        """Stored paths, oldest first (read from the store on first use)."""

    def convert(self, device_id: str, metric: str, ts: float, value: Any) -> Any:
        """``value``, or the URL of the image it carries once stored."""
        if isinstance(value, bytes | bytearray):
            data = bytes(value)
            if detect_extension(data) == "bin":
                return value
        elif isinstance(value, str):
            decoded = decode_image(value)
            if decoded is None:
                return value
            data = decoded
        else:
            return value
        if not (safe(device_id) and safe(metric)):
            return value  # the vendor logs the failure and keeps the value
        path = f"{device_id}/{metric}/{int(ts)}_{content_id(data)}.{detect_extension(data)}"
        if self.docs.get(path) is None:
            self.docs.put(path, {"data": base64.b64encode(data).decode(), "at": ts})
            order = self._paths()
            order.append(path)
            while len(order) > MAX_IMAGES:
                self.docs.delete(order.pop(0))
        return f"/api/images/{path}"

    def _paths(self) -> list[str]:
        if self._order is None:
            self._order = [p for p, _ in sorted(self.docs.items(), key=lambda kv: kv[1].get("at", 0))]
        return self._order

    def get(self, path: str) -> StoredImage:
        parts = path.split("/")
        if len(parts) != 3:
            raise InvalidInput("invalid path format, expected: /api/images/device_id/metric/timestamp.ext")
        device_id, metric, name = parts
        if not (safe(device_id) and safe(metric)):
            raise InvalidInput("invalid device_id or metric")
        ext = name.lower().rsplit(".", 1)[-1]
        if not safe(name) or "." not in name or ext not in EXTENSIONS:
            raise InvalidInput("invalid filename")
        doc = self.docs.get(path)
        if doc is None:
            raise NotFound("image not found", resource="image")
        return StoredImage(base64.b64decode(doc["data"]), MIME.get(ext, "image/jpeg"))
