"""The edge gateway's media area: streams, encoders, media status and the live H.264 feed."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class GatewayMedia(Protocol):
    """A camera's video streams as its gateway serves them."""
