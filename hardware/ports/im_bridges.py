"""The automation backend's instant-messaging bridges: a chat platform's bot (Telegram, Feishu) wired to
the server's agent. A chat binds itself with a one-time invite token (``/start <token>``) and is then
on the allowlist; each chat has its own chat session with the agent.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

PLATFORMS = ("telegram", "feishu")
"""The platforms with a bridge; ``whatsapp`` is known but has none."""


@dataclass(frozen=True, slots=True)
class BridgeSpec:
    platform: str
    bot_token: str | None = None
    api_base: str | None = None
    app_id: str | None = None
    app_secret: str | None = None
    domain: str | None = None


@dataclass(frozen=True, slots=True)
class ImInvite:
    token: str
    created_at: int
    used: bool
    bound_chat_id: str | None
    bound_at: int | None


@dataclass(frozen=True, slots=True)
class ImSession:
    chat_id: str
    bound_agent_id: str
    neo_session_id: str
    last_active: int
    created_at: int


@runtime_checkable
class ImBridges(Protocol):
    """Every call raises ``Unavailable`` while the bridges' router is not running (no active agent
    when the server started) and ``InvalidInput`` for a platform without a bridge."""

    def list_bridges(self) -> list[str]:
        """The platforms with a running bridge, sorted."""
        ...

    def create_bridge(self, spec: BridgeSpec) -> str:
        """Start (or replace) the platform's bridge and keep its credentials; returns the platform."""
        ...

    def delete_bridge(self, platform: str) -> str:
        """``NotFound`` when the platform has no bridge."""
        ...

    def create_invite(self, platform: str) -> tuple[str, str | None]:
        """A new one-time token and the bot's deep link for it (``None`` when the bot is unknown)."""
        ...

    def list_invites(self, platform: str) -> list[ImInvite]: ...

    def revoke_invite(self, platform: str, token: str) -> None: ...

    def allowlist(self, platform: str) -> list[str]: ...

    def remove_allowed(self, platform: str, chat_id: str) -> None: ...

    def sessions(self, platform: str) -> list[ImSession]: ...

    def reset_session(self, platform: str, chat_id: str) -> None: ...
