"""The kinds of notification channel: what each needs in its configuration, where a message sent on
one goes (transport and address) and what it carries there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hardware.ports.errors import InvalidInput
from hardware.ports.rules import ChannelKind, DeliveryResult
from twin.automation.outbound import status_line

KINDS: tuple[ChannelKind, ...] = (
    ChannelKind(
        "webhook", "Webhook", "Webhook", "POST the message as JSON to a URL", "以 JSON 推送到 URL", "webhook"
    ),
    ChannelKind("email", "Email", "邮件", "Send the message over SMTP", "通过 SMTP 发送邮件", "mail"),
    ChannelKind("telegram", "Telegram", "Telegram", "Telegram bot message", "Telegram 机器人消息", "send"),
    ChannelKind("wecom", "WeCom", "企业微信", "WeCom group robot", "企业微信群机器人", "message-square"),
    ChannelKind("dingtalk", "DingTalk", "钉钉", "DingTalk group robot", "钉钉群机器人", "message-circle"),
    ChannelKind("slack", "Slack", "Slack", "Slack incoming webhook", "Slack 传入 Webhook", "hash"),
    ChannelKind("feishu", "Feishu", "飞书", "Feishu group robot", "飞书群机器人", "feather"),
)

# What each kind needs in its configuration.
REQUIRED: dict[str, tuple[str, ...]] = {
    "webhook": ("url",),
    "email": ("smtp_server", "from_address"),
    "telegram": ("bot_token", "chat_id"),
    "wecom": ("webhook_url",),
    "dingtalk": ("webhook_url",),
    "slack": ("webhook_url",),
    "feishu": ("webhook_url",),
}
OPTIONAL: dict[str, tuple[str, ...]] = {
    "webhook": ("headers",),
    "email": ("smtp_port", "username", "password", "use_tls", "use_ssl", "recipients"),
    "telegram": ("api_url",),
    "wecom": (),
    "dingtalk": (),
    "slack": (),
    "feishu": (),
}
TELEGRAM_API = "https://api.telegram.org"


def _text(msg: dict[str, Any]) -> str:
    return f"[{msg['severity'].upper()}] {msg['title']}\n{msg['message']}"


def destination(channel: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(transport, transport config)`` of a channel, from its settings now."""
    kind, cfg = channel["channel_type"], channel["config"]
    if kind == "webhook":
        return "http", {"url": cfg["url"], "headers": cfg.get("headers") or {}}
    if kind == "email":
        return "smtp", dict(cfg)
    if kind == "telegram":
        base = str(cfg.get("api_url") or TELEGRAM_API).rstrip("/")
        return "http", {"url": f"{base}/bot{cfg['bot_token']}/sendMessage"}
    return "http", {"url": cfg["webhook_url"]}


def body(channel: dict[str, Any], msg: dict[str, Any]) -> Any:
    """What one message on one channel carries."""
    kind, cfg = channel["channel_type"], channel["config"]
    if kind == "webhook":
        out = {k: msg[k] for k in ("id", "category", "severity", "title", "message", "source", "source_type")}
        out["timestamp"] = int(msg["timestamp"])
        out["metadata"] = msg.get("metadata")
        out["channel"] = channel["name"]
        return out
    if kind == "email":
        recipients = list(channel.get("recipients") or cfg.get("recipients") or [])
        return {"recipients": recipients, "subject": msg["title"], "body": _text(msg)}
    text = _text(msg)
    if kind == "telegram":
        return {"chat_id": cfg["chat_id"], "text": text}
    if kind in ("wecom", "dingtalk"):
        return {"msgtype": "text", "text": {"content": text}}
    if kind == "slack":
        return {"text": text}
    return {"msg_type": "text", "content": {"text": text}}


def check_config(kind: str, config: Mapping[str, Any]) -> None:
    missing = [k for k in REQUIRED[kind] if not config.get(k)]
    if missing:
        raise InvalidInput(f"{kind} channel requires {', '.join(missing)}", field=missing[0])
    for key in ("url", "webhook_url", "api_url"):
        value = config.get(key)
        if value is not None and not str(value).startswith(("http://", "https://")):
            raise InvalidInput(f"{key} must be an http(s) URL", field=key)


def test_words(kind: str, outcome: DeliveryResult) -> tuple[str, str]:
    """What a channel test answers (the vendor's ``ChannelRegistry::test``), in English and Chinese:
    what went wrong in the channel's own terms (a status line, a request that failed), never what
    the far end's body said."""
    if outcome.success:
        return "Test message sent successfully", "测试消息发送成功"
    label = next((k.name for k in KINDS if k.id == kind), kind)
    if outcome.status_code is not None:
        reason = f"{label} returned error: {status_line(outcome.status_code)}"
    else:
        reason = f"{label} request failed: error sending request"
    return f"Failed to send test message: Send failed: {reason}", f"发送测试消息失败: Send failed: {reason}"
