"""Wire shapes of the edge gateway. Only here."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

from hardware.ports.errors import InvalidInput
from hardware.ports.media import StreamStatus
from hardware.ports.types import GatewayInfo, PublicKey


def ok(data: Any = None) -> JSONResponse:
    """``{"code":0,"message":"Success","data":…}``; ``data`` is omitted when None, like the device."""
    body: dict[str, Any] = {"code": 0, "message": "Success"}
    if data is not None:
        body["data"] = data
    return JSONResponse(body)


def parse_login(raw: bytes) -> tuple[str, str, int]:
    """``{username, password, timestamp?}``; anything else is the device's "Invalid input format"."""
    try:
        body = json.loads(raw)
    except ValueError as err:
        raise InvalidInput("Invalid input format") from err
    if not isinstance(body, dict):
        raise InvalidInput("Invalid input format")
    username, password = body.get("username"), body.get("password")
    timestamp = body.get("timestamp", 0)
    if timestamp is None:
        timestamp = 0
    if (
        not isinstance(username, str)
        or not username
        or not isinstance(password, str)
        or not password
        or isinstance(timestamp, bool)
        or not isinstance(timestamp, int)
    ):
        raise InvalidInput("Invalid input format")
    return username, password, timestamp


def login_response(token: str, username: str) -> dict[str, Any]:
    return {"token": f"Bearer {token}", "username": username}


def public_key(key: PublicKey) -> dict[str, Any]:
    return {"public_key": key.pem, "algorithm": key.algorithm, "unix_timestamp": key.unix_timestamp}


def health(now: float) -> dict[str, Any]:
    return {"status": "healthy", "time": int(now), "service": "platform-api"}


def system_info(info: GatewayInfo) -> dict[str, Any]:
    return {"version": info.version, "services": dict(info.services)}


def media_status(rows: list[StreamStatus]) -> dict[str, Any]:
    """``{streams:[{stream_id, status, has_encoder, codec, width, height, fps, bitrate_bps, gop,
    ms_since_last_frame (or null), measured_fps, status_detail}]}``."""
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
                "ms_since_last_frame": r.ms_since_last_frame,
                "measured_fps": r.measured_fps,
                "status_detail": r.status_detail,
            }
            for r in rows
        ]
    }
