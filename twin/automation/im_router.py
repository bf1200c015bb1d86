"""The IM bridges' router: the loop side of the bridges, handling the messages their pollers receive.

Incoming messages are handled one at a time in arrival order, as the server's router does:

1. ``/start <token>``: binds the chat with a one-time invite (before any allowlist check);
2. a sender or chat not on the allowlist is dropped, and a message id seen before too;
3. ``/reset`` drops the chat's session, ``/help`` answers the commands;
4. anything else goes to the agent on the chat's session (made on its first message) and the
   agent's answer goes back as one reply (``Failed to process: ...`` when the turn failed).

The agent's turn runs on the world clock; replies leave through the delivery outbox. The router is
the loop side of :class:`~twin.automation.im_bridges.ImBridgeRegistry`: it runs one poller per
running Telegram bridge and follows the registry (:meth:`ImRouter.reconcile`, which the registry calls
on each bridge call).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING

from hardware.ports.chat import ChatEventKind, ChatSessions, TurnRequest
from twin.automation.im_bridges import telegram_base
from twin.automation.im_links import Incoming, TelegramPoller

if TYPE_CHECKING:
    from twin.automation.im_bridges import ImBridgeRegistry

log = logging.getLogger(__name__)

QUEUE = 1000
MAX_SEEN = 10_000
NEED_TOKEN = "需要邀请码，请联系管理员获取"  # noqa: RUF001 (the server's own words)
BOUND = "✅ 绑定成功，现在可以与我对话了"  # noqa: RUF001
BAD_TOKEN = "邀请无效或已使用"
RESET = "会话已重置 ✅"
FAILED = "（处理失败：{}）"  # noqa: RUF001
HELP = "NeoMind IM Bridge\n/reset — 重置会话上下文\n/help — 显示此帮助\n直接发消息即可对话"


def _command(text: str, name: str) -> bool:
    return text == name or text.startswith(name + "@")


class ImRouter:
    def __init__(self, registry: ImBridgeRegistry, chat: ChatSessions) -> None:
        """Follows ``registry`` from now on (it calls :meth:`reconcile` on each bridge call)."""
        self.registry = registry
        self.chat = chat
        self.queue: asyncio.Queue[Incoming] = asyncio.Queue(QUEUE)
        self.seen: dict[str, None] = {}
        self.handled = 0
        self.pollers: dict[str, tuple[tuple[str, str], TelegramPoller]] = {}
        self._task: asyncio.Task[None] | None = None
        registry.followers.append(self.reconcile)

    @classmethod
    def following(cls, previous: ImRouter | None, registry: ImBridgeRegistry, chat: ChatSessions) -> ImRouter:
        """The router of ``registry``: ``previous`` while it is the same registry, else a new one (the
        world was rebuilt; the old router's pollers are closed)."""
        if previous is not None and previous.registry is registry:
            return previous
        if previous is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().create_task(previous.aclose())
        return cls(registry, chat)

    async def _consume(self) -> None:
        while True:
            incoming = await self.queue.get()
            try:
                await self.handle(incoming)
            except Exception:  # one message must not stop the others
                log.exception("IM message from %s could not be handled", incoming.platform)
            self.handled += 1

    async def handle(self, m: Incoming) -> None:
        reg, text = self.registry, m.text.strip()
        if _command(text, "/start") or text.startswith("/start "):
            words = text.split()
            if len(words) < 2:
                reg.reply(m.platform, m.chat_id, NEED_TOKEN)
            elif reg.consume_invite(words[1], m.chat_id):
                reg.reply(m.platform, m.chat_id, BOUND)
            else:
                reg.reply(m.platform, m.chat_id, BAD_TOKEN)
            return
        if not reg.is_allowed(m.sender_id, m.chat_id) or m.msg_id in self.seen:
            return
        self.seen[m.msg_id] = None
        while len(self.seen) > MAX_SEEN:
            del self.seen[next(iter(self.seen))]
        if _command(text, "/reset"):
            reg.drop_session(m.platform, m.chat_id)
            reg.reply(m.platform, m.chat_id, RESET)
            return
        if _command(text, "/help"):
            reg.reply(m.platform, m.chat_id, HELP)
            return
        record = reg.session_of(m.platform, m.chat_id)
        if record is None:
            record = reg.bind_session(m.platform, m.chat_id, self.chat.create_session())
        answer = await self.run(record["neo_session_id"], m.text)
        reg.touch_session(m.platform, m.chat_id)
        reg.reply(m.platform, m.chat_id, answer)

    async def run(self, session_id: str, text: str) -> str:
        """The agent's answer: its content, or the error it ended with when it wrote none."""
        try:
            turn = self.chat.start_turn(session_id, TurnRequest(message=text))
            out, error = [], None
            while (event := await turn.next()) is not None:
                if event.kind in (ChatEventKind.CONTENT, ChatEventKind.RESPONSE):
                    out.append(event.content)
                elif event.kind is ChatEventKind.ERROR:
                    error = event.message
        except Exception as err:
            return f"Failed to process: {getattr(err, 'message', err)}"
        answer = "".join(out)
        return FAILED.format(error) if not answer and error else answer

    # Pollers -------------------------------------------------------------------------------------
    def reconcile(self) -> None:
        """Pollers for exactly the running Telegram bridges (a changed token or base restarts one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._consume(), name="im-router")
        wanted = {}
        if self.registry.default_agent is not None:
            config = self.registry.running.get("telegram")
            if config is not None:
                wanted["telegram"] = (telegram_base(config.get("api_base")), config["bot_token"])
        for platform, (key, poller) in list(self.pollers.items()):
            if wanted.get(platform) != key:
                del self.pollers[platform]
                asyncio.get_running_loop().create_task(poller.aclose())
        for platform, key in wanted.items():
            if platform not in self.pollers:
                poller = TelegramPoller(*key, self.queue.put, functools.partial(self._named, platform))
                self.pollers[platform] = (key, poller)
                poller.start()

    def _named(self, platform: str, name: str) -> None:
        if platform in self.registry.running:
            self.registry.bot_names[platform] = name

    async def aclose(self) -> None:
        pollers = [p for _, p in self.pollers.values()]
        self.pollers.clear()
        for poller in pollers:
            await poller.aclose()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
