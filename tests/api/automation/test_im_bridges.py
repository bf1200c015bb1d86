"""IM bridges over HTTP, against real local stand-ins of the chat platforms: a Telegram bot API that
answers getMe, long-polls getUpdates and records sendMessage, and Feishu's token and message
endpoints. Invites bind chats, the agent answers on each chat's session, replies leave over real
HTTP through the delivery outbox; everything is kept across a restart; refusals in the server's
shapes (503 while no agent was active at start)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.api.support import assert_error
from tests.conftest import _client, admin_token
from tests.receivers import Request, read_request
from tests.sockets import until
from twin.automation import im_router
from twin.automation.im_links import Incoming
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

TOKEN = "123456:secret-token"
AGENT = {
    "name": "Concierge",
    "user_prompt": "Answer questions about the plant",
    "schedule": {"schedule_type": "interval", "interval_seconds": 3600},
    "execution_mode": "free",
}


class FakeChatPlatform:
    """Telegram's bot API (``/bot<token>/...``) and Feishu's open API on one loopback port."""

    def __init__(self) -> None:
        self.updates: list[dict] = []
        self.offsets: list[int] = []
        self.sent: list[Request] = []
        self.pending = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.next_update = 1

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    def say(self, chat: int, sender: int, text: str, update_id: int | None = None) -> None:
        update_id = update_id or self.next_update
        self.next_update = update_id + 1
        message = {"message_id": update_id, "chat": {"id": chat}, "from": {"id": sender}, "text": text}
        self.updates.append({"update_id": update_id, "message": message})
        self.pending.set()  # every poll waiting now answers
        self.pending = asyncio.Event()

    async def __aenter__(self) -> FakeChatPlatform:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _answer(self, path: str, body: dict) -> dict:
        if path.endswith("/getMe"):
            return {"ok": True, "result": {"id": 1, "username": "testbot"}}
        if path.endswith("/getUpdates"):
            self.offsets.append(body["offset"])
            pending = self.pending
            if not any(u["update_id"] >= body["offset"] for u in self.updates):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(pending.wait(), body["timeout"])
            return {"ok": True, "result": [u for u in self.updates if u["update_id"] >= body["offset"]]}
        if path.endswith("/tenant_access_token/internal"):
            return {"code": 0, "msg": "ok", "tenant_access_token": "t-feishu", "expire": 7200}
        return {
            "ok": True,
            "code": 0,
            "result": {"message_id": len(self.sent)},
            "data": {"message_id": "om_1"},
        }

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await read_request(reader)
            if not request.path.endswith(("/getMe", "/getUpdates")):
                self.sent.append(request)
            answer = await self._answer(request.path, request.json() if request.body else {})
            reply = json.dumps(answer).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + f"Content-Length: {len(reply)}\r\n\r\n".encode()
                + reply
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, asyncio.CancelledError):
            pass  # a poll still waiting when the test ends
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def backend(state: Path, *, agent: bool = True) -> AsyncIterator[tuple[Twin, httpx.AsyncClient, dict]]:
    """The automation API on ``state``; with ``agent``, started again after an agent was made (the
    bridges' router starts only when an agent is active at start)."""
    twin = build(Settings(state_dir=state, step=True))
    client = _client(twin.automation_app, "http://automation")
    try:
        login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
        token = login.json()["token"] if login.status_code == 200 else await admin_token(client)
        auth = {"Authorization": f"Bearer {token}"}
        if agent and automation_of(twin.world).im_bridges.default_agent is None:
            made = await client.post("/api/agents", json=AGENT, headers=auth)
            assert made.status_code == 200, made.text
            await client.aclose()
            twin.world.store.close()
            async with backend(state) as again:
                yield again
            return
        yield twin, client, auth
    finally:
        with contextlib.suppress(Exception):
            await twin.automation.im_router.aclose()
        await client.aclose()
        twin.world.store.close()


async def answered(twin: Twin, count: int) -> None:
    """Until the router has handled ``count`` messages, moving world time while the agent thinks."""
    router = twin.automation.im_router

    def done() -> bool:
        if twin.clock.waiting:
            twin.clock.advance(0.25)
        return router.handled >= count

    await until(done, attempts=1500)


async def test_refusals_in_the_servers_shapes(tmp_path: Path) -> None:
    async with backend(tmp_path, agent=False) as (_, client, auth):
        assert_error(await client.get("/api/im-bridges"), 401, "UNAUTHORIZED")
        assert_error(await client.post("/api/im-bridges", json={"platform": "telegram"}), 401, "UNAUTHORIZED")
        # No agent was active when the server started: the router is not running.
        for method, path in [
            ("GET", "/api/im-bridges"),
            ("POST", "/api/im-bridges/telegram/invites"),
            ("GET", "/api/im-bridges/feishu/allowlist"),
            ("POST", "/api/im-bridges/telegram/sessions/1/reset"),
        ]:
            resp = await client.request(method, path, headers=auth)
            assert_error(resp, 503, "SERVICE_UNAVAILABLE", "IM router not started")
        unknown = "Unknown platform 'irc'. Supported: telegram, feishu"
        assert_error(
            await client.get("/api/im-bridges/irc/invites", headers=auth), 400, "BAD_REQUEST", unknown
        )

    async with backend(tmp_path) as (_, client, auth):
        post = lambda body: client.post("/api/im-bridges", json=body, headers=auth)  # noqa: E731
        assert_error(await post({}), 422, "VALIDATION_ERROR")
        assert_error(await post({"platform": 7}), 422, "VALIDATION_ERROR")
        assert_error(await post({"platform": "telegram", "bot_token": 5}), 422, "VALIDATION_ERROR")
        assert_error(
            await post({"platform": "whatsapp"}), 400, "BAD_REQUEST",
            "Unsupported platform 'whatsapp': only 'telegram' and 'feishu' are available",
        )  # fmt: skip
        assert_error(
            await post({"platform": "irc"}),
            400,
            "BAD_REQUEST",
            "Unknown platform 'irc'. Supported: telegram, feishu",
        )
        assert_error(
            await post({"platform": "telegram", "bot_token": "  "}), 400, "BAD_REQUEST",
            "platform 'telegram' requires a non-empty 'bot_token'",
        )  # fmt: skip
        assert_error(
            await post({"platform": "feishu", "app_id": "cli_1"}), 400, "BAD_REQUEST",
            "platform 'feishu' requires a non-empty 'app_secret'",
        )  # fmt: skip
        gone = await client.delete("/api/im-bridges/feishu", headers=auth)
        assert_error(gone, 404, "NOT_FOUND", "IM bridge 'feishu' not found")
        assert (await client.get("/api/im-bridges", headers=auth)).json()["data"] == {
            "bridges": [],
            "count": 0,
        }


async def test_a_telegram_chat_binds_with_an_invite_and_talks_to_the_agent(tmp_path: Path) -> None:
    async with FakeChatPlatform() as tg, backend(tmp_path) as (twin, client, auth):
        body = {
            "platform": "telegram",
            "bot_token": TOKEN,
            "api_base": tg.url + "/",
            "allowlist": ["ignored"],
        }
        made = await client.post("/api/im-bridges", json=body, headers=auth)
        assert made.json()["data"] == {"id": "telegram", "platform": "telegram", "status": "running"}
        listed = (await client.get("/api/im-bridges", headers=auth)).json()["data"]
        assert listed == {
            "bridges": [{"id": "telegram", "platform": "telegram", "status": "running"}],
            "count": 1,
        }
        registry = automation_of(twin.world).im_bridges
        await until(lambda: registry.bot_names.get("telegram") == "testbot")
        invite = (await client.post("/api/im-bridges/telegram/invites", headers=auth)).json()["data"]
        assert invite["deep_link"] == f"https://t.me/testbot?start={invite['token']}"
        assert len(invite["token"]) == 43  # 32 random bytes, base64url without padding

        # A stranger is ignored; /start with the invite binds the chat.
        tg.say(chat=222, sender=9, text="hello?")
        tg.say(chat=111, sender=7, text=f"/start {invite['token']}")
        await answered(twin, 2)
        assert await automation_of(twin.world).outbox.flush() == 1
        sent = tg.sent.pop()
        assert sent.path == f"/bot{TOKEN}/sendMessage"
        assert sent.json() == {"chat_id": "111", "text": im_router.BOUND}
        assert (await client.get("/api/im-bridges/telegram/allowlist", headers=auth)).json()["data"] == {
            "allowlist": ["111"]
        }
        invites = (await client.get("/api/im-bridges/telegram/invites", headers=auth)).json()["data"][
            "invites"
        ]
        now = int(twin.world.now())
        assert invites == [
            {
                "token": invite["token"],
                "created_at": now,
                "used": True,
                "bound_chat_id": "111",
                "bound_at": now,
            }
        ]
        tg.say(chat=333, sender=8, text=f"/start {invite['token']}")  # used already
        await answered(twin, 3)
        await automation_of(twin.world).outbox.flush()
        assert tg.sent.pop().json() == {"chat_id": "333", "text": im_router.BAD_TOKEN}

        # The bound chat talks to the agent on a session of its own; a repeated update id is ignored.
        tg.say(chat=111, sender=7, text="What is the temperature?", update_id=10)
        await answered(twin, 4)
        await automation_of(twin.world).outbox.flush()
        answer = tg.sent.pop().json()
        assert answer["chat_id"] == "111" and answer["text"]
        sessions = (await client.get("/api/im-bridges/telegram/sessions", headers=auth)).json()["data"][
            "sessions"
        ]
        assert [(s["chat_id"], s["bound_agent_id"]) for s in sessions] == [("111", registry.default_agent)]
        assert twin.automation.chat.exists(sessions[0]["neo_session_id"])
        assert tg.offsets[-1] == 11
        tg.say(chat=111, sender=7, text="/help@testbot", update_id=12)
        await answered(twin, 5)
        await twin.automation.im_router.handle(Incoming("telegram", "111", "7", "again", "12"))
        await automation_of(twin.world).outbox.flush()
        assert [r.json()["text"] for r in tg.sent] == [im_router.HELP]
        tg.sent.clear()

        reset = await client.post("/api/im-bridges/telegram/sessions/111/reset", headers=auth)
        assert reset.json()["data"] == {"chat_id": "111", "reset": True}
        assert (await client.get("/api/im-bridges/telegram/sessions", headers=auth)).json()["data"] == {
            "sessions": []
        }
        removed = await client.delete("/api/im-bridges/telegram/allowlist/111", headers=auth)
        assert removed.json()["data"] == {"chat_id": "111", "removed": True}
        tg.say(chat=111, sender=7, text="still there?")
        await answered(twin, 6)
        assert await automation_of(twin.world).outbox.flush() == 0
        revoked = await client.delete(f"/api/im-bridges/telegram/invites/{invite['token']}", headers=auth)
        assert revoked.json()["data"] == {"token": invite["token"], "revoked": True}

        stopped = await client.delete("/api/im-bridges/telegram", headers=auth)
        assert stopped.json()["data"] == {"id": "telegram", "platform": "telegram", "status": "stopped"}
        assert twin.automation.im_router.pollers == {}


async def test_bridges_and_their_chats_survive_a_restart(tmp_path: Path) -> None:
    async with FakeChatPlatform() as tg:
        async with backend(tmp_path) as (twin, client, auth):
            body = {"platform": "telegram", "bot_token": TOKEN, "api_base": tg.url}
            await client.post("/api/im-bridges", json=body, headers=auth)
            token = (await client.post("/api/im-bridges/telegram/invites", headers=auth)).json()["data"][
                "token"
            ]
            tg.say(chat=5, sender=5, text=f"/start {token}")
            await answered(twin, 1)
        async with backend(tmp_path) as (twin, client, auth):
            listed = (await client.get("/api/im-bridges", headers=auth)).json()["data"]
            assert [b["id"] for b in listed["bridges"]] == ["telegram"]
            allowed = (await client.get("/api/im-bridges/telegram/allowlist", headers=auth)).json()["data"]
            assert allowed == {"allowlist": ["5"]}
            # The reply queued before the restart is delivered after it; the bridge polls again.
            assert await automation_of(twin.world).outbox.flush() == 1
            assert tg.sent.pop().json() == {"chat_id": "5", "text": im_router.BOUND}
            tg.say(chat=5, sender=5, text="/help")
            await answered(twin, 1)


async def test_replies_are_split_for_telegram_and_go_to_feishu_with_a_tenant_token(tmp_path: Path) -> None:
    async with FakeChatPlatform() as chat, backend(tmp_path) as (twin, client, auth):
        registry = automation_of(twin.world).im_bridges
        await client.post(
            "/api/im-bridges",
            json={"platform": "telegram", "bot_token": TOKEN, "api_base": chat.url},
            headers=auth,
        )
        assert registry.reply("telegram", "42", "a" * 9000) == 3
        body = {"platform": "feishu", "app_id": "cli_1", "app_secret": "s3cret", "domain": chat.url}
        made = await client.post("/api/im-bridges", json=body, headers=auth)
        assert made.json()["data"]["status"] == "running"
        assert registry.reply("feishu", "oc_9", "hello") == 1
        assert await automation_of(twin.world).outbox.flush() == 4
        parts = [r.json()["text"] for r in chat.sent if r.path.endswith("/sendMessage")]
        assert [len(p) for p in parts] == [4000, 4000, 1000]
        token, message = [r for r in chat.sent if r.path.startswith("/open-apis")]
        assert token.json() == {"app_id": "cli_1", "app_secret": "s3cret"}
        assert message.path == "/open-apis/im/v1/messages?receive_id_type=chat_id"
        assert message.headers["authorization"] == "Bearer t-feishu"
        assert message.json() == {"receive_id": "oc_9", "msg_type": "text", "content": '{"text": "hello"}'}
        invite = (await client.post("/api/im-bridges/feishu/invites", headers=auth)).json()["data"]
        assert invite["deep_link"] is None
        assert registry.sent == 4


@pytest.mark.parametrize("text", ["/start", "/start@testbot"])
async def test_start_without_a_token_asks_for_one(tmp_path: Path, text: str) -> None:
    async with FakeChatPlatform() as tg, backend(tmp_path) as (twin, client, auth):
        await client.post(
            "/api/im-bridges",
            json={"platform": "telegram", "bot_token": TOKEN, "api_base": tg.url},
            headers=auth,
        )
        tg.say(chat=1, sender=1, text=text)
        await answered(twin, 1)
        await automation_of(twin.world).outbox.flush()
        assert tg.sent.pop().json() == {"chat_id": "1", "text": im_router.NEED_TOKEN}
