"""Wire shapes of the IM bridges (both releases)."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.im_bridges import BridgeSpec, ImInvite, ImSession


class BridgeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    platform: str
    bot_token: str | None = None
    api_base: str | None = None
    app_id: str | None = None
    app_secret: str | None = None
    domain: str | None = None
    allowlist: list[str] | None = None
    """Accepted and ignored, as the server does: chats bind themselves with invites."""

    def spec(self) -> BridgeSpec:
        return BridgeSpec(**self.model_dump(exclude={"allowlist"}))


def bridge(platform: str, status: str = "running") -> dict[str, Any]:
    return {"id": platform, "platform": platform, "status": status}


def invites(items: list[ImInvite]) -> dict[str, Any]:
    return {"invites": [dataclasses.asdict(i) for i in items]}


def sessions(items: list[ImSession]) -> dict[str, Any]:
    return {"sessions": [dataclasses.asdict(s) for s in items]}
