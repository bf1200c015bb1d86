"""Wire shapes of the gateway's media area: the streams' status."""

from __future__ import annotations

from typing import Any

from hardware.ports.media import StreamStatus


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
