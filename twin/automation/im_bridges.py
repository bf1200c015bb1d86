"""Instant-messaging bridges: a Telegram or Feishu bot wired to the server's agent.

Durable, as the real server keeps them: each platform's credentials (``im_bridges``: a bridge comes
back when the server starts), the one-time invite tokens (``im_invites``), the chats bound with them
(``im_allowlist``) and each chat's session with the agent (``im_sessions``, keyed
``<platform>:<chat_id>``). Invites and the allowlist are shared by every platform, as on the server.

The bridges' router starts with the server only when an agent is active then (it is the chats'
default agent); without one every call answers ``Unavailable`` ("IM router not started") until the
next start. Outgoing replies go through the delivery outbox (owner kind ``im_bridge``); incoming
messages come from each bridge's poller (:mod:`twin.automation.im_links`) to the router
(:mod:`twin.automation.im_router`), which the backend attaches with the chat it runs the agent on.
"""

from __future__ import annotations

import base64
import logging
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound, Unavailable
from hardware.ports.im_bridges import PLATFORMS, BridgeSpec, ImInvite, ImSession
from hardware.ports.rules import DeliveryResult
from twin.automation.delivery import RetryPolicy

if TYPE_CHECKING:
    from twin.automation.agents import AgentRegistry
    from twin.automation.delivery import Outbox
    from twin.engine import Engine

log = logging.getLogger(__name__)

OWNER = "im_bridge"
TELEGRAM_API = "https://api.telegram.org"
FEISHU_API = "https://open.feishu.cn"
CHUNK = 4000
"""Telegram takes at most 4096 characters a message; the server sends 4000 at a time."""
RETRY = RetryPolicy(jitter=0.1)
REQUIRED = {"telegram": ("bot_token",), "feishu": ("app_id", "app_secret")}
CONFIG_FIELDS = ("bot_token", "api_base", "app_id", "app_secret", "domain")


def check_platform(platform: str) -> str:
    if platform in PLATFORMS:
        return platform
    if platform == "whatsapp":
        raise InvalidInput(
            "Unsupported platform 'whatsapp': only 'telegram' and 'feishu' are available", field="platform"
        )
    raise InvalidInput(f"Unknown platform '{platform}'. Supported: telegram, feishu", field="platform")


def telegram_base(api_base: str | None) -> str:
    base = (api_base or "").strip()
    if not base:
        return TELEGRAM_API
    return base.rstrip("/") if base.startswith(("http://", "https://")) else f"https://{base}"


def _session_key(platform: str, chat_id: str) -> str:
    return f"{platform}:{chat_id}"


def _checked(platform: str, config: dict[str, Any]) -> dict[str, Any]:
    """The credentials a bridge needs, present and not blank (``InvalidInput`` naming the first missing)."""
    for field in REQUIRED[platform]:
        value = config.get(field)
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"platform '{platform}' requires a non-empty '{field}'", field=field)
    return {**config, **{f: config[f].strip() for f in REQUIRED[platform]}}


class ImBridgeRegistry:
    def __init__(self, world: Engine, *, agents: AgentRegistry, outbox: Outbox) -> None:
        self.world = world
        self.outbox = outbox
        self.configs = world.store.collection("im_bridges")
        self.invites = world.store.collection("im_invites")
        self.allowed = world.store.collection("im_allowlist")
        self.chat_sessions = world.store.collection("im_sessions")
        active = [a for a in agents.list_agents() if a.status == "active"]
        self.default_agent: str | None = active[0].id if active else None
        """The chats' agent; ``None``: the router did not start."""
        self.running: dict[str, dict[str, Any]] = {}
        """Platform → credentials of each bridge running now."""
        self.bot_names: dict[str, str] = {}
        """Platform → the bot's user name, once its platform told the poller."""
        self.sent = self.failed = 0
        self.followers: list[Callable[[], None]] = []
        """Called on each bridge call (list, create, delete): the router's pollers follow the bridges."""
        outbox.register(OWNER, self._delivered)
        if self.default_agent is not None:
            for platform, doc in self.configs.items():  # the bridges kept from earlier runs
                try:
                    self.running[check_platform(platform)] = _checked(platform, doc)
                except InvalidInput as err:
                    log.warning("IM bridge %s kept from an earlier run skipped: %s", platform, err.message)

    def _router(self) -> None:
        if self.default_agent is None:
            raise Unavailable("IM router not started", resource="im_router")

    def _checked(self, platform: str) -> str:
        platform = check_platform(platform)
        self._router()
        return platform

    # Bridges -------------------------------------------------------------------------------------
    def _follow(self) -> None:
        for follower in self.followers:
            follower()

    def list_bridges(self) -> list[str]:
        self._follow()
        self._router()
        return sorted(self.running)

    def create_bridge(self, spec: BridgeSpec) -> str:
        platform = self._checked(spec.platform)
        given = {f: getattr(spec, f) for f in CONFIG_FIELDS if getattr(spec, f) is not None}
        self.running[platform] = _checked(platform, given)
        self.bot_names.pop(platform, None)
        self.configs.put(platform, given)
        self._follow()
        return platform

    def delete_bridge(self, platform: str) -> str:
        platform = self._checked(platform)
        if self.running.pop(platform, None) is None:
            raise NotFound(f"IM bridge '{platform}' not found", resource="im_bridge")
        self.bot_names.pop(platform, None)
        self.configs.delete(platform)
        self._follow()
        return platform

    # Invites, allowlist, sessions ----------------------------------------------------------------
    def create_invite(self, platform: str) -> tuple[str, str | None]:
        platform = self._checked(platform)
        token = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
        self.invites.put(
            token,
            {"created_at": int(self.world.now()), "used": False, "bound_chat_id": None, "bound_at": None},
        )
        bot = self.bot_names.get(platform) if platform in self.running else None
        return token, (f"https://t.me/{bot}?start={token}" if platform == "telegram" and bot else None)

    def list_invites(self, platform: str) -> list[ImInvite]:
        self._checked(platform)
        return [ImInvite(token, **doc) for token, doc in sorted(self.invites.items())]

    def revoke_invite(self, platform: str, token: str) -> None:
        self._checked(platform)
        self.invites.delete(token)

    def consume_invite(self, token: str, chat_id: str) -> bool:
        doc = self.invites.get(token)
        if doc is None or doc["used"]:
            return False
        doc.update(used=True, bound_chat_id=chat_id, bound_at=int(self.world.now()))
        self.invites.put(token, doc)
        self.allowed.put(chat_id, {"added_at": int(self.world.now())})
        return True

    def allowlist(self, platform: str) -> list[str]:
        self._checked(platform)
        return sorted(chat for chat, _ in self.allowed.items())

    def is_allowed(self, *ids: str) -> bool:
        return any(i in self.allowed for i in ids)

    def remove_allowed(self, platform: str, chat_id: str) -> None:
        self._checked(platform)
        self.allowed.delete(chat_id)

    def sessions(self, platform: str) -> list[ImSession]:
        platform = self._checked(platform)
        prefix = platform + ":"
        return [
            ImSession(key.split(":", 1)[1], **doc)
            for key, doc in sorted(self.chat_sessions.items())
            if key.startswith(prefix)
        ]

    def reset_session(self, platform: str, chat_id: str) -> None:
        self.drop_session(self._checked(platform), chat_id)

    def drop_session(self, platform: str, chat_id: str) -> None:
        self.chat_sessions.delete(_session_key(platform, chat_id))

    def session_of(self, platform: str, chat_id: str) -> dict[str, Any] | None:
        return self.chat_sessions.get(_session_key(platform, chat_id))

    def bind_session(self, platform: str, chat_id: str, session_id: str) -> dict[str, Any]:
        """The chat's session record, made with ``session_id`` if it has none (an existing one stays)."""
        doc = self.session_of(platform, chat_id)
        if doc is None:
            now = int(self.world.now())
            doc = {
                "bound_agent_id": self.default_agent,
                "neo_session_id": session_id,
                "last_active": now,
                "created_at": now,
            }
            self.chat_sessions.put(_session_key(platform, chat_id), doc)
        return doc

    def touch_session(self, platform: str, chat_id: str) -> None:
        doc = self.session_of(platform, chat_id)
        if doc is not None:
            doc["last_active"] = int(self.world.now())
            self.chat_sessions.put(_session_key(platform, chat_id), doc)

    # Replies -------------------------------------------------------------------------------------
    def reply(self, platform: str, chat_id: str, text: str) -> int:
        """Queue ``text`` to the chat through the platform's bridge; the number of messages queued
        (none when the bridge is gone; Telegram's come in 4000-character parts)."""
        config = self.running.get(platform)
        if config is None:
            return 0
        if platform == "telegram":
            url = f"{telegram_base(config.get('api_base'))}/bot{config['bot_token']}/sendMessage"
            parts = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
            for part in parts:
                self.outbox.enqueue(
                    OWNER, platform, "http", {"url": url}, {"chat_id": chat_id, "text": part}, RETRY
                )
            return len(parts)
        domain = (config.get("domain") or FEISHU_API).rstrip("/")
        creds = {"domain": domain, "app_id": config["app_id"], "app_secret": config["app_secret"]}
        self.outbox.enqueue(OWNER, platform, "feishu", creds, {"receive_id": chat_id, "text": text}, RETRY)
        return 1

    def _delivered(self, job: dict[str, Any], result: DeliveryResult, final: bool) -> None:
        if result.success:
            self.sent += 1
        elif final:
            self.failed += 1
            log.warning("IM bridge %s: a reply was not delivered: %s", job["owner_id"], result.message)
