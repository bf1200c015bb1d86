"""Streaming chat with an HTTP model backend, as the chat needs it: text and reasoning as they are
generated, tool calls and token usage at the end.

- OpenAI dialect (every hosted kind but Ollama): ``POST {endpoint}/chat/completions`` with
  ``stream: true``; Server-Sent Events ``data: {chunk}`` until ``data: [DONE]``; ``delta.content``,
  ``delta.reasoning_content``, ``delta.tool_calls`` (arguments arrive in pieces, by ``index``).
- Ollama: ``POST {endpoint}/api/chat`` with ``stream: true``; one JSON object a line,
  ``message.content``/``message.thinking``/``message.tool_calls``, ``done`` and
  ``prompt_eval_count`` on the last.

Each dialect also writes its own assistant and tool messages for the conversation. Transport
failures and non-2xx answers become ``Unavailable``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from hardware.ports.errors import Unavailable
from twin.automation.chat_models import HTTP_TIMEOUT_S, OllamaCompatible, OpenAICompatible, ToolCall

Model = OpenAICompatible | OllamaCompatible


@dataclass(frozen=True, slots=True)
class Delta:
    content: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int | None = None


def assistant_message(model: Any, content: str, calls: Sequence[ToolCall]) -> dict[str, Any]:
    """An assistant message with its tool calls in the model's dialect (Ollama's, else OpenAI's)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls and isinstance(model, OllamaCompatible):
        message["tool_calls"] = [
            {"function": {"name": c.name, "arguments": dict(c.arguments)}} for c in calls
        ]
    elif calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
    return message


async def stream(
    model: Model,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    overrides: Mapping[str, Any],
) -> AsyncIterator[Delta]:
    """The model's answer as it streams; ``overrides`` (a session's ``model``, ``temperature``)
    replace the backend's settings."""
    name = overrides.get("model") or model.model
    if isinstance(model, OllamaCompatible):
        options = {
            **model.options,
            **({"temperature": overrides["temperature"]} if "temperature" in overrides else {}),
        }
        body: dict[str, Any] = {"model": name, "messages": list(messages), "stream": True, "options": options}
        if tools:
            body["tools"] = list(tools)
        async for delta in _ollama(f"{model.endpoint}/api/chat", body):
            yield delta
        return
    body = {"model": name, "messages": list(messages), "stream": True, **model.options}
    body["stream_options"] = {"include_usage": True}
    if "temperature" in overrides:
        body["temperature"] = overrides["temperature"]
    if tools:
        body["tools"] = list(tools)
    headers = {"Authorization": f"Bearer {model.api_key}"} if model.api_key else {}
    async for delta in _openai(f"{model.endpoint}/chat/completions", body, headers):
        yield delta


async def _lines(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> AsyncIterator[str]:
    try:
        async with (
            httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client,
            client.stream("POST", url, json=body, headers=dict(headers)) as resp,
        ):
            if resp.status_code >= 400:
                raise Unavailable(f"model backend answered HTTP {resp.status_code}", resource="llm")
            async for line in resp.aiter_lines():
                if line.strip():
                    yield line.strip()
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeEncodeError) as err:  # nor sent: a bad URL or header
        raise Unavailable(f"model backend unreachable: {type(err).__name__}", resource="llm") from err


def _object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as err:
        raise Unavailable("model backend streamed invalid JSON", resource="llm") from err
    return value if isinstance(value, dict) else {}


async def _openai(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> AsyncIterator[Delta]:
    parts: dict[int, dict[str, str]] = {}
    usage: int | None = None
    async for line in _lines(url, body, headers):
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        chunk = _object(data)
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"].get("prompt_tokens", usage)
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            for call in delta.get("tool_calls") or ():
                part = parts.setdefault(
                    int(call.get("index", len(parts))), {"id": "", "name": "", "arguments": ""}
                )
                fn = call.get("function") or {}
                part["id"] = call.get("id") or part["id"]
                part["name"] += fn.get("name") or ""
                part["arguments"] += fn.get("arguments") or ""
            if delta.get("content") or delta.get("reasoning_content"):
                yield Delta(content=delta.get("content") or "", thinking=delta.get("reasoning_content") or "")
    calls = tuple(
        ToolCall(p["name"], _arguments(p["arguments"]), p["id"] or f"call_{i}")
        for i, p in sorted(parts.items())
    )
    yield Delta(tool_calls=calls, prompt_tokens=usage)


async def _ollama(url: str, body: Mapping[str, Any]) -> AsyncIterator[Delta]:
    calls: list[ToolCall] = []
    usage: int | None = None
    async for line in _lines(url, body, {}):
        chunk = _object(line)
        if chunk.get("error"):
            raise Unavailable(f"model backend failed: {chunk['error']}", resource="llm")
        message = chunk.get("message") or {}
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            calls.append(
                ToolCall(str(fn.get("name", "")), dict(fn.get("arguments") or {}), f"call_{len(calls)}")
            )
        if message.get("content") or message.get("thinking"):
            yield Delta(content=message.get("content") or "", thinking=message.get("thinking") or "")
        if chunk.get("done"):
            usage = chunk.get("prompt_eval_count")
            break
    yield Delta(tool_calls=tuple(calls), prompt_tokens=usage)


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
