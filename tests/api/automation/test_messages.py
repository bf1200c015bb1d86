"""Messages and notification channels over HTTP, with real delivery to local servers: a webhook and a
chat kind over HTTP, email over SMTP; channel tests deliver for real and record the result; a dead
channel's circuit opens, its messages wait, and a test that gets through releases them."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from tests.conftest import _client, admin_token
from tests.receivers import HttpReceiver, SmtpReceiver, closed_port
from twin.automation import messages
from twin.automation.circuit import FAILURES_TO_OPEN
from twin.automation.server import automation_of
from twin.serve import Twin, build
from twin.settings import Settings

MESSAGE = {"category": "alert", "severity": "critical", "title": "Door open", "message": "Back door open"}


async def add_channel(client: httpx.AsyncClient, auth: dict[str, str], **body) -> httpx.Response:
    return await client.post("/api/messages/channels", json=body, headers=auth)


async def test_channel_kinds_are_public(automation: httpx.AsyncClient) -> None:
    resp = await automation.get("/api/messages/channels/types")
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["count"] == 7
    assert [t["id"] for t in data["types"]] == [
        "webhook",
        "email",
        "telegram",
        "wecom",
        "dingtalk",
        "slack",
        "feishu",
    ]
    assert set(data["types"][0]) == {
        "id",
        "name",
        "name_zh",
        "description",
        "description_zh",
        "icon",
        "category",
    }
    assert {t["category"] for t in data["types"]} == {"external"}


async def test_message_goes_out_on_webhook_slack_and_email(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    async with HttpReceiver() as hooks, SmtpReceiver() as smtp:
        assert (
            await add_channel(
                automation,
                auth,
                name="ops",
                channel_type="webhook",
                url=f"{hooks.url}/hook",
                headers={"X-Token": "abc"},
            )
        ).status_code == 200
        await add_channel(
            automation, auth, name="chat", channel_type="slack", webhook_url=f"{hooks.url}/slack"
        )
        mail = await add_channel(
            automation,
            auth,
            name="mail",
            channel_type="email",
            smtp_server="127.0.0.1",
            smtp_port=smtp.port,
            from_address="twin@example.com",
            password="hunter2",
            recipients=["ops@example.com"],
        )
        assert mail.json()["data"]["config"]["password"] == "***"
        assert mail.json()["data"]["recipients"] == ["ops@example.com"]
        await add_channel(
            automation, auth, name="off", channel_type="webhook", url=f"{hooks.url}/off", enabled=False
        )
        sent = await automation.post("/api/messages", json=MESSAGE, headers=auth)
        assert sent.status_code == 200
        data = sent.json()["data"]
        assert data["message"] == "Message created" and data["message_zh"]
        assert await automation_of(twin.world).outbox.flush() == 3
        by_path = {r.path: r for r in hooks.requests}
        assert set(by_path) == {"/hook", "/slack"}
        hook = by_path["/hook"]
        assert hook.method == "POST" and hook.headers["x-token"] == "abc"
        body = hook.json()
        assert body["id"] == data["id"] and body["title"] == "Door open" and body["severity"] == "critical"
        assert by_path["/slack"].json() == {"text": "[CRITICAL] Door open\nBack door open"}
        (received,) = smtp.mails
        assert received.sender == "twin@example.com" and received.recipients == ["ops@example.com"]
        assert "Subject: Door open" in received.data and "Back door open" in received.data
    channels = (await automation.get("/api/messages/channels", headers=auth)).json()["data"]
    stats = {c["name"]: c["stats"] for c in channels["channels"]}
    assert stats == {
        "ops": {"sent": 1, "failed": 0},
        "chat": {"sent": 1, "failed": 0},
        "mail": {"sent": 1, "failed": 0},
        "off": {"sent": 0, "failed": 0},
    }
    summary = (await automation.get("/api/messages/channels/stats", headers=auth)).json()["data"]
    assert summary["total"] == 4 and summary["enabled"] == 3


async def test_channel_test_delivers_for_real_and_records(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    async with HttpReceiver(statuses=[200]) as hooks:
        await add_channel(
            automation, auth, name="ops", channel_type="dingtalk", webhook_url=f"{hooks.url}/robot"
        )
        resp = await automation.post("/api/messages/channels/ops/test", headers=auth)
        data = resp.json()["data"]
        assert data["channel"] == "ops" and data["success"] is True and data["status_code"] == 200
        (request,) = hooks.requests
        assert request.json()["msgtype"] == "text" and "Test delivery" in request.json()["text"]["content"]
    await add_channel(
        automation, auth, name="dead", channel_type="webhook", url=f"http://127.0.0.1:{closed_port()}/x"
    )
    failed = (await automation.post("/api/messages/channels/dead/test", headers=auth)).json()["data"]
    assert failed["success"] is False and failed["message"]
    detail = (await automation.get("/api/messages/channels/dead", headers=auth)).json()["data"]
    assert detail["last_result"]["success"] is False


async def test_channel_update_and_delete(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await add_channel(automation, auth, name="ops", channel_type="webhook", url="http://127.0.0.1:1/a")
    resp = await automation.put(
        "/api/messages/channels/ops", json={"url": "http://127.0.0.1:1/b", "enabled": False}, headers=auth
    )
    data = resp.json()["data"]
    assert data["config"]["url"] == "http://127.0.0.1:1/b" and data["enabled"] is False
    gone = await automation.delete("/api/messages/channels/ops", headers=auth)
    assert gone.json()["data"] == {"name": "ops", "deleted": True}
    assert (await automation.get("/api/messages/channels/ops", headers=auth)).status_code == 404


async def test_channel_failures(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    ok = await add_channel(automation, auth, name="ops", channel_type="webhook", url="http://127.0.0.1:1/")
    assert ok.status_code == 200
    dup = await add_channel(automation, auth, name="ops", channel_type="webhook", url="http://127.0.0.1:1/")
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "CONFLICT"
    kind = await add_channel(automation, auth, name="x", channel_type="pager", url="http://127.0.0.1:1/")
    assert kind.status_code == 400 and kind.json()["error"]["code"] == "BAD_REQUEST"
    nourl = await add_channel(automation, auth, name="x", channel_type="webhook")
    assert nourl.status_code == 400 and "url" in nourl.json()["error"]["message"]
    scheme = await add_channel(
        automation, auth, name="x", channel_type="slack", webhook_url="file:///etc/passwd"
    )
    assert scheme.status_code == 400
    noname = await add_channel(automation, auth, channel_type="webhook", url="http://127.0.0.1:1/")
    assert noname.status_code == 422 and noname.json()["error"]["code"] == "VALIDATION_ERROR"
    for method, path in (
        ("GET", "/api/messages/channels/nope"),
        ("PUT", "/api/messages/channels/nope"),
        ("DELETE", "/api/messages/channels/nope"),
        ("POST", "/api/messages/channels/nope/test"),
    ):
        resp = await automation.request(method, path, json={} if method == "PUT" else None, headers=auth)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND", path
    for method, path in (
        ("GET", "/api/messages/channels"),
        ("POST", "/api/messages/channels"),
        ("POST", "/api/messages/channels/ops/test"),
        ("GET", "/api/messages"),
    ):
        resp = await automation.request(method, path)
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED", path


async def test_messages_list_filter_and_status(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    ids = []
    for severity in ("info", "warning", "critical"):
        resp = await automation.post("/api/messages", json={**MESSAGE, "severity": severity}, headers=auth)
        ids.append(resp.json()["data"]["id"])
    page = (await automation.get("/api/messages?limit=2", headers=auth)).json()["data"]
    assert page["total"] == 3 and page["limit"] == 2 and page["offset"] == 0
    assert [m["id"] for m in page["messages"]] == [ids[2], ids[1]]
    first = page["messages"][0]
    assert first["status"] == "active" and first["timestamp"] == "2026-01-01T00:00:00+00:00"
    assert first["source"] == "api" and first["tags"] == []
    warn = (await automation.get("/api/messages?severity=warning", headers=auth)).json()["data"]
    assert [m["id"] for m in warn["messages"]] == [ids[1]]
    acked = await automation.post(f"/api/messages/{ids[0]}/acknowledge", headers=auth)
    assert acked.json()["data"]["status"] == "acknowledged"
    assert (await automation.post(f"/api/messages/{ids[0]}/resolve", headers=auth)).json()["data"][
        "status"
    ] == "resolved"
    assert (await automation.get(f"/api/messages/{ids[0]}", headers=auth)).json()["data"][
        "status"
    ] == "resolved"
    assert (await automation.delete(f"/api/messages/{ids[0]}", headers=auth)).json()["data"][
        "deleted"
    ] is True
    assert (await automation.get(f"/api/messages/{ids[0]}", headers=auth)).status_code == 404
    assert (await automation.post("/api/messages/nope/archive", headers=auth)).status_code == 404


@pytest.mark.parametrize(
    "body",
    [
        {k: v for k, v in MESSAGE.items() if k != "title"},
        {**MESSAGE, "severity": "loud"},
        {**MESSAGE, "category": "gossip"},
        {**MESSAGE, "tags": "urgent"},
    ],
)
async def test_message_validation(automation: httpx.AsyncClient, auth: dict[str, str], body: dict) -> None:
    resp = await automation.post("/api/messages", json=body, headers=auth)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "VALIDATION_ERROR"


async def test_bulk_operations_stats_and_cleanup(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    ids = [
        (await automation.post("/api/messages", json={**MESSAGE, "severity": s}, headers=auth)).json()[
            "data"
        ]["id"]
        for s in ("info", "info", "warning")
    ]
    acked = await automation.post(
        "/api/messages/acknowledge", json={"message_ids": [ids[0], "nope"]}, headers=auth
    )
    assert acked.json()["data"] == {"acknowledged": 1}
    resolved = await automation.post("/api/messages/resolve", json={"message_ids": ids[:2]}, headers=auth)
    assert resolved.json()["data"] == {"resolved": 2}
    stats = (await automation.get("/api/messages/stats", headers=auth)).json()["data"]
    assert stats["total"] == 3 and stats["active"] == 1
    assert stats["by_severity"] == {"info": 2, "warning": 1, "critical": 0, "emergency": 0}
    assert stats["by_status"]["resolved"] == 2 and stats["by_category"]["alert"] == 3
    twin.clock.advance(2 * 86_400)
    kept = await automation.post("/api/messages/cleanup", json={"older_than_days": 3}, headers=auth)
    assert kept.json()["data"] == {"cleaned": 0}
    cleaned = await automation.post("/api/messages/cleanup", json={"older_than_days": 1}, headers=auth)
    assert cleaned.json()["data"] == {"cleaned": 2}
    deleted = await automation.post("/api/messages/delete", json={"message_ids": ids}, headers=auth)
    assert deleted.json()["data"] == {"deleted": 1}
    bad = await automation.post("/api/messages/acknowledge", json={"ids": ids}, headers=auth)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "VALIDATION_ERROR"
    negative = await automation.post("/api/messages/cleanup", json={"older_than_days": -1}, headers=auth)
    assert negative.status_code == 400


async def test_recipients_enabled_and_schema(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    schema = await automation.get("/api/messages/channels/types/email/schema")
    assert schema.status_code == 200
    body = schema.json()["data"]
    assert body["type"] == "email" and body["schema"]["required"] == ["smtp_server", "from_address"]
    assert body["schema"]["properties"]["smtp_port"] == {"type": "integer", "default": 25}
    assert (await automation.get("/api/messages/channels/types/pager/schema")).status_code == 404
    await add_channel(
        automation,
        auth,
        name="mail",
        channel_type="email",
        smtp_server="127.0.0.1",
        from_address="twin@example.com",
    )
    added = await automation.post(
        "/api/messages/channels/mail/recipients", json={"email": "a@example.com"}, headers=auth
    )
    assert added.json()["data"] == {"name": "mail", "recipients": ["a@example.com"], "count": 1}
    listed = (await automation.get("/api/messages/channels/mail/recipients", headers=auth)).json()["data"]
    assert listed["recipients"] == ["a@example.com"]
    bad = await automation.post(
        "/api/messages/channels/mail/recipients", json={"email": "nobody"}, headers=auth
    )
    assert bad.status_code == 400
    removed = await automation.delete("/api/messages/channels/mail/recipients/a@example.com", headers=auth)
    assert removed.json()["data"]["count"] == 0
    again = await automation.delete("/api/messages/channels/mail/recipients/a@example.com", headers=auth)
    assert again.status_code == 404
    off = await automation.put("/api/messages/channels/mail/enabled", json={"enabled": False}, headers=auth)
    assert off.json()["data"] == {"name": "mail", "enabled": False}
    missing = await automation.put(
        "/api/messages/channels/nope/enabled", json={"enabled": True}, headers=auth
    )
    assert missing.status_code == 404
    unauth = await automation.get("/api/messages/channels/mail/recipients")
    assert unauth.status_code == 401


async def test_telegram_goes_to_the_configured_api_and_hides_its_token(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    async with HttpReceiver(statuses=[200, 401]) as api:
        await add_channel(
            automation,
            auth,
            name="tg",
            channel_type="telegram",
            bot_token="123:SECRET",
            chat_id="42",
            api_url=api.url,
        )
        ok = (await automation.post("/api/messages/channels/tg/test", headers=auth)).json()["data"]
        assert ok["success"] is True
        assert (
            api.requests[0].path == "/bot123:SECRET/sendMessage" and api.requests[0].json()["chat_id"] == "42"
        )
        listed = (await automation.get("/api/messages/channels/tg", headers=auth)).json()["data"]
        assert listed["config"]["bot_token"] == "***"
        failed = await automation.post("/api/messages/channels/tg/test", headers=auth)
        assert failed.json()["data"]["success"] is False and "SECRET" not in failed.text
    await automation.put(
        "/api/messages/channels/tg", json={"api_url": "http://127.0.0.1:1/x y"}, headers=auth
    )
    broken = await automation.post("/api/messages/channels/tg/test", headers=auth)
    assert broken.json()["data"]["success"] is False and "SECRET" not in broken.text


async def test_earlier_release_sends_with_messages_send(settings: Settings) -> None:
    old = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(old.automation_app, "http://automation") as client:
        headers = {"Authorization": f"Bearer {await admin_token(client)}"}
        sent = await client.post("/api/messages/send", json=MESSAGE, headers=headers)
        assert sent.status_code == 200 and sent.json()["data"]["message"] == "Message created"
        assert (await client.get("/api/messages", headers=headers)).json()["data"]["total"] == 1
        assert (await client.post("/api/messages/send", json=MESSAGE)).status_code == 401


def circuit_of(metrics: str, channel: str) -> str | None:
    for line in metrics.splitlines():
        if line.startswith("neomind_delivery_circuit{") and f'owner_id="{channel}"' in line:
            return line.split('state="', 1)[1].split('"', 1)[0]
    return None


async def test_a_dead_channel_opens_its_circuit_and_a_passing_test_releases_its_messages(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    port = closed_port()
    await add_channel(automation, auth, name="dead", channel_type="webhook", url=f"http://127.0.0.1:{port}/x")
    ids = []
    for n in range(FAILURES_TO_OPEN + 1):
        sent = await automation.post("/api/messages", json={**MESSAGE, "title": f"m{n}"}, headers=auth)
        ids.append(sent.json()["data"]["id"])
    assert await automation_of(twin.world).outbox.flush() == FAILURES_TO_OPEN + 1
    assert circuit_of((await automation.get("/api/metrics")).text, "dead") == "open"
    twin.clock.advance(10)  # every retry came due behind the open circuit: none is attempted
    assert await automation_of(twin.world).outbox.flush() == 0
    detail = (await automation.get("/api/messages/channels/dead", headers=auth)).json()["data"]
    assert detail["stats"] == {"sent": 0, "failed": 0}
    assert {r["status"] for r in automation_of(twin.world).messages.delivery_records()} == {"retrying"}
    async with HttpReceiver(port=port) as hook:
        tested = (await automation.post("/api/messages/channels/dead/test", headers=auth)).json()["data"]
        assert tested["success"] is True  # the channel is back: its circuit closes...
        assert (
            await automation_of(twin.world).outbox.flush() == FAILURES_TO_OPEN + 1
        )  # ...and the messages go out
    assert sorted(r.json()["id"] for r in hook.requests[1:]) == sorted(ids)
    assert circuit_of((await automation.get("/api/metrics")).text, "dead") == "closed"
    detail = (await automation.get("/api/messages/channels/dead", headers=auth)).json()["data"]
    assert detail["stats"] == {"sent": FAILURES_TO_OPEN + 1, "failed": 0}
    assert {r["status"] for r in automation_of(twin.world).messages.delivery_records()} == {"success"}


async def test_delivery_records_keep_the_newest(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(messages, "MAX_DELIVERY_RECORDS", 3)
    async with HttpReceiver() as hook:
        await add_channel(automation, auth, name="ops", channel_type="webhook", url=hook.url)
        ids = []
        for n in range(5):
            sent = await automation.post("/api/messages", json={**MESSAGE, "title": f"m{n}"}, headers=auth)
            ids.append(sent.json()["data"]["id"])
            assert await automation_of(twin.world).outbox.flush() == 1
    assert [r["message_id"] for r in automation_of(twin.world).messages.delivery_records()] == ids[2:]


async def test_a_channel_given_a_working_url_gets_its_waiting_messages_there(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    await add_channel(
        automation, auth, name="dead", channel_type="slack", webhook_url=f"http://127.0.0.1:{closed_port()}/x"
    )
    for n in range(FAILURES_TO_OPEN):
        await automation.post("/api/messages", json={**MESSAGE, "title": f"m{n}"}, headers=auth)
    assert await automation_of(twin.world).outbox.flush() == FAILURES_TO_OPEN
    twin.clock.advance(10)
    assert await automation_of(twin.world).outbox.flush() == 0  # waiting behind the open circuit
    async with HttpReceiver() as hook:
        moved = {"webhook_url": f"{hook.url}/moved"}
        assert (
            await automation.put("/api/messages/channels/dead", json=moved, headers=auth)
        ).status_code == 200
        assert await automation_of(twin.world).outbox.flush() == FAILURES_TO_OPEN  # released, to the new URL
    assert [r.path for r in hook.requests] == ["/moved"] * FAILURES_TO_OPEN
    assert {r.json()["text"].split("\n")[0] for r in hook.requests} == {
        f"[CRITICAL] m{n}" for n in range(FAILURES_TO_OPEN)
    }
