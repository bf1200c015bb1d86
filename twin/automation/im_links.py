"""The IM bridges' network side: Telegram's long polling for incoming messages, and the Feishu transport
replies go out on (Feishu wants a tenant token first: the transport fetches one with the app's id
and secret, keeps it until a minute before it expires, and posts the text with it).

A Telegram bridge asks ``getMe`` for its bot's name (for invite deep links), then polls
``getUpdates`` (``offset``, ``timeout`` 30, ``allowed_updates`` ``["message"]``) and hands each text
message on; after a failed poll it waits 5 s (wall clock: the platform's own pace), and after an
empty answer one second, so a far end that answers at once is not hammered. Feishu's incoming
side (its WebSocket event stream) is not simulated: a Feishu bridge only replies.

Bot tokens sit in Telegram's URLs: the ``httpx`` logger's request lines are redacted here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from twin.automation.transports import BOT_TOKEN, TRANSPORTS, HttpTransport, answer, payload_bytes

log = logging.getLogger(__name__)

POLL_TIMEOUT_S = 30
RETRY_S = 5.0
IDLE_S = 1.0
TOKEN_MARGIN_S = 60


class _Redact(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "/bot" in message:
            record.msg, record.args = BOT_TOKEN.sub("/bot***/", message), ()
        return True


logging.getLogger("httpx").addFilter(_Redact())


@dataclass(frozen=True, slots=True)
class Incoming:
    platform: str
    chat_id: str
    sender_id: str
    text: str
    msg_id: str


def parse_update(update: Any) -> Incoming | None:
    """A Telegram update carrying a text message, else ``None``."""
    if not isinstance(update, dict):
        return None
    message = update.get("message")
    if not isinstance(message, dict):
        return None
    chat, sender, text = message.get("chat"), message.get("from"), message.get("text")
    ids = (
        chat.get("id") if isinstance(chat, dict) else None,
        sender.get("id") if isinstance(sender, dict) else None,
    )
    update_id = update.get("update_id")
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in (*ids, update_id)):
        return None
    if not isinstance(text, str):
        return None
    return Incoming("telegram", str(ids[0]), str(ids[1]), text, str(update_id))


class TelegramPoller:
    def __init__(
        self,
        base: str,
        token: str,
        deliver: Callable[[Incoming], Awaitable[None]],
        named: Callable[[str], None],
    ) -> None:
        self.base, self.token = base, token
        self.deliver = deliver
        self.named = named
        self.polls = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="im-telegram")

    def _url(self, method: str) -> str:
        return f"{self.base}/bot{self.token}/{method}"

    async def _run(self) -> None:
        timeout = httpx.Timeout(POLL_TIMEOUT_S + 5, connect=10)
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            try:
                me = (await client.post(self._url("getMe"))).json()
                self.named(str(me["result"]["username"]))
            except asyncio.CancelledError:
                raise
            except Exception as err:
                log.warning("telegram getMe failed (%s); deep links are unavailable", type(err).__name__)
            offset = 0
            while True:
                offset, pause = await self._poll(client, offset)
                if pause:
                    await asyncio.sleep(pause)

    async def _poll(self, client: httpx.AsyncClient, offset: int) -> tuple[int, float]:
        body = {"offset": offset, "timeout": POLL_TIMEOUT_S, "allowed_updates": ["message"]}
        self.polls += 1
        try:
            resp = await client.post(self._url("getUpdates"), json=body)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.warning("telegram poll error (%s)", type(err).__name__)
            return offset, RETRY_S
        if not resp.is_success:
            log.warning("telegram getUpdates answered %d", resp.status_code)
            return offset, RETRY_S
        try:
            updates = resp.json().get("result")
        except ValueError:
            updates = None
        if not isinstance(updates, list) or not updates:
            return offset, IDLE_S
        for update in updates:
            incoming = parse_update(update)
            if incoming is not None:
                await self.deliver(incoming)
            update_id = update.get("update_id") if isinstance(update, dict) else None
            if isinstance(update_id, int):
                offset = update_id + 1
        return offset, 0.0

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class FeishuTransport(HttpTransport):
    """Implements :class:`twin.automation.transports.Transport` for a Feishu app's replies, over the
    link's pooled HTTP client."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._token: tuple[str, float] | None = None

    async def _tenant_token(self, config: dict[str, Any]) -> str:
        now = time.monotonic()  # the platform's token lifetime runs on its clock, not the world's
        if self._token is not None and self._token[1] - now >= TOKEN_MARGIN_S:
            return self._token[0]
        url = f"{config['domain']}/open-apis/auth/v3/tenant_access_token/internal"
        resp = await self.http().post(
            url, json={"app_id": config["app_id"], "app_secret": config["app_secret"]}
        )
        body = resp.json() if resp.content else {}
        if (
            not resp.is_success
            or body.get("code") != 0
            or not isinstance(body.get("tenant_access_token"), str)
        ):
            raise RuntimeError(
                f"feishu tenant_access_token failed: HTTP {resp.status_code} code={body.get('code')}"
            )
        self._token = (body["tenant_access_token"], now + float(body.get("expire", 7200)))
        return self._token[0]

    async def send(self, config: dict[str, Any], payload: Any) -> tuple[bool, str, int | None]:
        token = await self._tenant_token(config)
        body = {
            "receive_id": payload["receive_id"],
            "msg_type": "text",
            "content": json.dumps({"text": payload["text"]}, ensure_ascii=False),
        }
        url = f"{config['domain']}/open-apis/im/v1/messages?receive_id_type=chat_id"
        resp = await self.http().post(
            url,
            content=payload_bytes(body),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        code = (
            resp.json().get("code")
            if resp.content and resp.headers.get("content-type", "").startswith("application/json")
            else None
        )
        return answer(resp, resp.is_success and code == 0)


TRANSPORTS.setdefault("feishu", FeishuTransport)
