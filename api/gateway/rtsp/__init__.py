"""The camera's RTSP server: its streams over RTP/H.264, beside the gateway's HTTP API."""

from api.gateway.rtsp.server import RtspServer

__all__ = ["RtspServer"]
