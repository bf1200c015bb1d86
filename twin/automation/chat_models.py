"""The chat interface every model backend speaks, the built-in simulated model and the HTTP clients.

:meth:`ChatModel.chat` takes messages and tool definitions and returns text and tool calls:

- :class:`SimulatedModel` is a pure function of the world's seed and the conversation: it asks for
  the metrics of the devices an agent is bound to, sends the bound commands the prompt names, then
  writes a conclusion from the tool results. It never awaits anything, so :func:`run_now` can drive
  it to its answer inside one SimPy step.
- :class:`OpenAICompatible` (``POST {endpoint}/chat/completions``) and :class:`OllamaCompatible`
  (``POST {endpoint}/api/chat``) are real HTTP clients (httpx); transport failures and non-2xx
  answers become ``Unavailable``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import httpx

from hardware.ports.errors import Unavailable
from hardware.ports.llm_backends import Capabilities
from twin.rng import hash_uniform

T = TypeVar("T")
HTTP_TIMEOUT_S = 60.0
MULTIMODAL_HINTS = ("vision", "-vl", "vl-", "llava", "gpt-4o", "gpt-4.1", "gemini", "claude", "qwen2.5vl")


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class Reply:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    confidence: float = 1.0
    assistant: dict[str, Any] = field(default_factory=dict)
    """The assistant message to append to the conversation before the tool results."""


@dataclass(frozen=True, slots=True)
class Hints:
    """Structured context of an agent; the simulated model reads it, HTTP models get it as text."""

    devices: tuple[str, ...] = ()
    commands: tuple[tuple[str, str, Mapping[str, Any]], ...] = ()
    """(device_id, command, parameters) the agent may send."""


class ChatModel(Protocol):
    async def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], hints: Hints
    ) -> Reply: ...

    def tool_message(self, call: ToolCall, content: str) -> dict[str, Any]: ...


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (the simulated model's path) to its result, synchronously."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the coroutine suspended; it needs an event loop")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9_\-]+", text.lower()))


class SimulatedModel:
    """Deterministic replies from (seed, conversation): a pure function, so traces repeat."""

    def __init__(self, seed_key: int) -> None:
        self.seed_key = seed_key

    def _uniform(self, messages: Sequence[Mapping[str, Any]]) -> float:
        digest = hashlib.blake2b(
            json.dumps(list(messages), sort_keys=True, default=str).encode(), digest_size=8
        )
        return float(hash_uniform(self.seed_key, int.from_bytes(digest.digest(), "big") >> 2))

    async def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], hints: Hints
    ) -> Reply:
        u = self._uniform(messages)
        results = [m for m in messages if m.get("role") == "tool"]
        prompt = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
        names = {t.get("function", {}).get("name") for t in tools}
        if not results and names:
            calls = self._plan(prompt, hints, names)
            if calls:
                return Reply("", calls, round(0.6 + 0.4 * u, 2))
        return Reply(self._conclude(prompt, results, u), (), round(0.6 + 0.4 * u, 2))

    @staticmethod
    def _plan(prompt: str, hints: Hints, names: set[Any]) -> tuple[ToolCall, ...]:
        words = _words(prompt)
        calls: list[ToolCall] = []
        if "get_device_metrics" in names:
            devices = hints.devices or tuple(d for d in words if d.count("-") and d in words)
            calls += [
                ToolCall("get_device_metrics", {"device_id": d}, f"call-{i}") for i, d in enumerate(devices)
            ]
        if "send_device_command" in names:
            for device_id, command, params in hints.commands:
                if command.lower() in words or command.lower().replace("_", " ") in prompt.lower():
                    args = {"device_id": device_id, "command": command, "params": dict(params)}
                    calls.append(ToolCall("send_device_command", args, f"call-{len(calls)}"))
        return tuple(calls)

    @staticmethod
    def _conclude(prompt: str, results: Sequence[Mapping[str, Any]], u: float) -> str:
        if not results:
            return f"Acknowledged: {prompt[:80]}".strip()
        parts = []
        for message in results:
            try:
                data = json.loads(str(message.get("content", "")))
            except ValueError:
                continue
            if "values" in data:
                shown = ", ".join(f"{k}={v}" for k, v in sorted(data["values"].items()))
                parts.append(f"{data.get('device_id')}: {shown}")
            elif data.get("sent"):
                parts.append(f"sent {data.get('command')} to {data.get('device_id')}")
            elif "error" in data:
                parts.append(f"failed: {data['error']}")
        verdict = ("All readings are within their usual range.", "One reading deserves a look.")[u > 0.8]
        return "; ".join(parts) + ". " + verdict

    def tool_message(self, call: ToolCall, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": content}


class OpenAICompatible:
    """``POST {endpoint}/chat/completions`` (OpenAI and every OpenAI-dialect host)."""

    def __init__(self, endpoint: str, model: str, api_key: str | None, options: Mapping[str, Any]) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.options = options

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], hints: Hints
    ) -> Reply:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), **self.options}
        if tools:
            body["tools"] = list(tools)
        data = await post_json(f"{self.endpoint}/chat/completions", body, self._headers())
        try:
            message = data["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as err:
            raise Unavailable("the model backend answered without a message", resource="llm") from err
        calls = []
        for i, call in enumerate(message.get("tool_calls") or ()):
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls.append(ToolCall(str(fn.get("name", "")), args, str(call.get("id", f"call-{i}"))))
        assistant = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        return Reply(str(message.get("content") or ""), tuple(calls), 1.0, assistant)

    def tool_message(self, call: ToolCall, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.call_id, "content": content}

    async def probe(self) -> Capabilities:
        data = await get_json(f"{self.endpoint}/models", self._headers())
        ids = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]
        if ids and self.model not in ids:
            raise Unavailable(f"model {self.model} is not served by this backend", resource="llm")
        lowered = self.model.lower()
        return Capabilities(
            supports_streaming=True,
            supports_multimodal=any(h in lowered for h in MULTIMODAL_HINTS),
            supports_tools=True,
            supports_thinking=any(h in lowered for h in ("o1", "o3", "o4", "reasoner", "thinking")),
            max_context=128_000,
        )


class OllamaCompatible:
    """``POST {endpoint}/api/chat`` with ``stream: false``; capabilities from ``POST /api/show``."""

    def __init__(self, endpoint: str, model: str, options: Mapping[str, Any]) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.model = model
        self.options = options

    async def chat(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], hints: Hints
    ) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "stream": False,
            "options": dict(self.options),
        }
        if tools:
            body["tools"] = list(tools)
        data = await post_json(f"{self.endpoint}/api/chat", body, {})
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, dict):
            raise Unavailable("the model backend answered without a message", resource="llm")
        calls = tuple(
            ToolCall(
                str(c.get("function", {}).get("name", "")), dict(c.get("function", {}).get("arguments") or {})
            )
            for c in message.get("tool_calls") or ()
        )
        assistant = {"role": "assistant", "content": message.get("content") or ""}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        return Reply(str(message.get("content") or ""), calls, 1.0, assistant)

    def tool_message(self, call: ToolCall, content: str) -> dict[str, Any]:
        return {"role": "tool", "content": content}

    async def probe(self) -> Capabilities:
        data = await post_json(f"{self.endpoint}/api/show", {"model": self.model}, {})
        caps = set(data.get("capabilities") or ())
        info = data.get("model_info") or {}
        context = next((int(v) for k, v in info.items() if k.endswith(".context_length")), 4096)
        return Capabilities(
            supports_streaming=True,
            supports_multimodal="vision" in caps,
            supports_tools="tools" in caps,
            supports_thinking="thinking" in caps,
            max_context=context,
        )


async def post_json(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    return await _request("POST", url, headers, body)


async def get_json(url: str, headers: Mapping[str, str]) -> dict[str, Any]:
    return await _request("GET", url, headers, None)


async def _request(
    method: str, url: str, headers: Mapping[str, str], body: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One HTTP exchange; transport failures and non-2xx answers become ``Unavailable``."""
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client:
            resp = await client.request(method, url, json=body, headers=dict(headers))
    except (httpx.HTTPError, httpx.InvalidURL, UnicodeEncodeError) as err:  # nor sent: a bad URL or header
        raise Unavailable(f"model backend unreachable: {type(err).__name__}", resource="llm") from err
    if resp.status_code >= 400:
        raise Unavailable(f"model backend answered HTTP {resp.status_code}", resource="llm")
    try:
        data = resp.json()
    except ValueError as err:
        raise Unavailable("model backend answered with invalid JSON", resource="llm") from err
    return data if isinstance(data, dict) else {}
