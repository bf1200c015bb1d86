"""Model backends: the registry, the built-in simulated model and real HTTP clients.

Every model speaks one chat interface, :meth:`ChatModel.chat` (messages and tool definitions in,
text and tool calls out):

- :class:`SimulatedModel` is built in and always there. Its replies are a pure function of the
  world's seed and the conversation: it asks for the metrics of the devices an agent is bound to,
  sends the bound commands the prompt names, then writes a conclusion from the tool results. It
  never awaits anything, so an execution with it completes inside one SimPy step.
- :class:`OpenAICompatible` (``POST {endpoint}/chat/completions``) and :class:`OllamaCompatible`
  (``POST {endpoint}/api/chat``) are real HTTP clients (httpx). Every hosted kind of the vendor
  except Ollama speaks the OpenAI dialect here.

Registered backends are durable documents (``llm_backends``); API keys are stored, never logged
and never returned (only ``api_key_configured``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import httpx

from hardware.ports.agents import BackendSpec, BackendTest, BackendType, Capabilities, ModelBackend
from hardware.ports.errors import Conflict, InvalidInput, NotFound, Unavailable
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.world import World

T = TypeVar("T")
SIMULATED_ID = "simulated"
SIMULATED_MODEL = "twin-sim-1"
HTTP_TIMEOUT_S = 60.0
THINKING_EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")
MULTIMODAL_HINTS = ("vision", "-vl", "vl-", "llava", "gpt-4o", "gpt-4.1", "gemini", "claude", "qwen2.5vl")

# (id, name, default model, default endpoint, needs key, streaming, thinking, multimodal)
TYPES: tuple[BackendType, ...] = tuple(
    BackendType(t[0], t[1], f"{t[1]} models", t[2], t[3], t[4], True, t[5], t[6])
    for t in (
        ("ollama", "Ollama", "qwen3:8b", "http://localhost:11434", False, True, True),
        ("openai", "OpenAI", "gpt-4o-mini", "https://api.openai.com/v1", True, False, True),
        ("anthropic", "Anthropic", "claude-sonnet-4-5", "https://api.anthropic.com/v1", True, True, True),
        (
            "google",
            "Google",
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta/openai",
            True,
            True,
            True,
        ),
        ("xai", "xAI", "grok-3-mini", "https://api.x.ai/v1", True, True, False),
        ("qwen", "Qwen", "qwen-plus", "https://dashscope.aliyuncs.com/compatible-mode/v1", True, True, True),
        ("deepseek", "DeepSeek", "deepseek-chat", "https://api.deepseek.com/v1", True, True, False),
        ("glm", "GLM", "glm-4-flash", "https://open.bigmodel.cn/api/paas/v4", True, True, True),
        ("minimax", "MiniMax", "MiniMax-Text-01", "https://api.minimax.chat/v1", True, False, False),
        ("llamacpp", "llama.cpp", "default", "http://localhost:8080/v1", False, False, False),
    )
)
TYPE_IDS = tuple(t.id for t in TYPES)


# The chat interface ----------------------------------------------------------------------------
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
            return f"Nothing to observe for: {prompt[:80]}".strip()
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
        data = await _post_json(f"{self.endpoint}/chat/completions", body, self._headers())
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
        data = await _get_json(f"{self.endpoint}/models", self._headers())
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
        data = await _post_json(f"{self.endpoint}/api/chat", body, {})
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
        data = await _post_json(f"{self.endpoint}/api/show", {"model": self.model}, {})
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


async def _post_json(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    return await _request("POST", url, headers, body)


async def _get_json(url: str, headers: Mapping[str, str]) -> dict[str, Any]:
    return await _request("GET", url, headers, None)


async def _request(
    method: str, url: str, headers: Mapping[str, str], body: Mapping[str, Any] | None
) -> dict[str, Any]:
    """One HTTP exchange; transport failures and non-2xx answers become ``Unavailable``."""
    try:
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as client:
            resp = await client.request(method, url, json=body, headers=dict(headers))
    except httpx.HTTPError as err:
        raise Unavailable(f"model backend unreachable: {type(err).__name__}", resource="llm") from err
    if resp.status_code >= 400:
        raise Unavailable(f"model backend answered HTTP {resp.status_code}", resource="llm")
    try:
        data = resp.json()
    except ValueError as err:
        raise Unavailable("model backend answered with invalid JSON", resource="llm") from err
    return data if isinstance(data, dict) else {}


# The registry ----------------------------------------------------------------------------------
def _builtin(now: float) -> dict[str, Any]:
    return {
        "id": SIMULATED_ID,
        "name": "Simulated model (built in)",
        "backend_type": "simulated",
        "endpoint": None,
        "model": SIMULATED_MODEL,
        "api_key": None,
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": None,
        "max_tokens": None,
        "thinking_enabled": False,
        "thinking_effort": None,
        "probed": dataclasses.asdict(Capabilities(supports_tools=True, max_context=32_768)),
        "override": None,
        "updated_at": now,
        "healthy": True,
    }


class ModelBackendRegistry:
    """Implements :class:`hardware.ports.agents.ModelBackends` over the world's store."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.docs = world.store.collection("llm_backends")
        self.settings = world.store.collection("llm_settings")
        if self.docs.get(SIMULATED_ID) is None:
            self.docs.put(SIMULATED_ID, _builtin(world.now()))

    # Port ------------------------------------------------------------------------------------
    def types(self) -> list[BackendType]:
        return list(TYPES)

    def list_backends(self) -> list[ModelBackend]:
        return [self._value(doc) for doc in self.docs.values()]

    def active_id(self) -> str:
        doc = self.settings.get("active")
        active = doc["id"] if doc else SIMULATED_ID
        return active if self.docs.get(active) is not None else SIMULATED_ID

    async def create_backend(self, spec: BackendSpec) -> ModelBackend:
        self._check(spec.backend_type, spec.thinking_effort, spec.name, spec.model)
        kind = next(t for t in TYPES if t.id == spec.backend_type)
        if kind.requires_api_key and not spec.api_key:
            raise InvalidInput(f"{kind.name} needs an api_key", field="api_key")
        doc = {
            **dataclasses.asdict(spec),
            "id": str(uuid.UUID(bytes=secrets.token_bytes(16), version=4)),
            "endpoint": spec.endpoint or kind.default_endpoint,
            "override": None,
            "updated_at": self.world.now(),
        }
        doc.update(await self._probe(doc))
        self.docs.put(doc["id"], doc)
        return self._value(doc)

    def get_backend(self, backend_id: str) -> ModelBackend:
        return self._value(self._doc(backend_id))

    async def update_backend(self, backend_id: str, changes: Mapping[str, Any]) -> ModelBackend:
        doc = self._doc(backend_id)
        if backend_id == SIMULATED_ID:
            raise Conflict("the built-in simulated backend cannot be changed", resource="llm_backend")
        allowed = {f.name for f in dataclasses.fields(BackendSpec)} - {"backend_type"}
        doc.update({k: v for k, v in changes.items() if k in allowed})
        self._check(doc["backend_type"], doc.get("thinking_effort"), doc["name"], doc["model"])
        doc["updated_at"] = self.world.now()
        doc.update(await self._probe(doc))
        self.docs.put(backend_id, doc)
        return self._value(doc)

    def delete_backend(self, backend_id: str) -> None:
        self._doc(backend_id)
        if backend_id == SIMULATED_ID:
            raise Conflict("the built-in simulated backend cannot be deleted", resource="llm_backend")
        self.docs.delete(backend_id)
        if self.active_id() == backend_id:
            self.settings.delete("active")

    def activate(self, backend_id: str) -> ModelBackend:
        self._doc(backend_id)
        self.settings.put("active", {"id": backend_id})
        return self.get_backend(backend_id)

    def set_multimodal(self, backend_id: str, multimodal: bool | None) -> ModelBackend:
        doc = self._doc(backend_id)
        doc["override"] = multimodal
        doc["updated_at"] = self.world.now()
        self.docs.put(backend_id, doc)
        return self._value(doc)

    async def test_backend(self, backend_id: str) -> BackendTest:
        doc = self._doc(backend_id)
        messages = [{"role": "user", "content": "Reply with OK."}]
        started = time.perf_counter()
        try:
            reply = await self.model(backend_id).chat(messages, (), Hints())
        except Unavailable as err:
            return BackendTest(doc["id"], False, _ms_since(started), error=err.message)
        return BackendTest(doc["id"], True, _ms_since(started), reply=reply.content or "OK")

    async def ollama_models(self, endpoint: str | None = None) -> list[Mapping[str, Any]]:
        if endpoint is None:
            local = next((d for d in self.docs.values() if d["backend_type"] == "ollama"), None)
            endpoint = local["endpoint"] if local else TYPES[0].default_endpoint
        data = await _get_json(f"{(endpoint or '').rstrip('/')}/api/tags", {})
        return [
            {"name": m.get("name"), "size": m.get("size"), "modified_at": m.get("modified_at")}
            for m in data.get("models", [])
            if isinstance(m, dict)
        ]

    # For agents -------------------------------------------------------------------------------
    def model(self, backend_id: str | None) -> ChatModel:
        doc = self._doc(backend_id or self.active_id())
        kind = doc["backend_type"]
        if kind == "simulated":
            return SimulatedModel(self.world.streams.key("llm:simulated"))
        return self.model_for_doc(doc)

    def is_simulated(self, backend_id: str | None) -> bool:
        doc = self.docs.get(backend_id or self.active_id())
        return doc is None or doc["backend_type"] == "simulated"

    def exists(self, backend_id: str) -> bool:
        return self.docs.get(backend_id) is not None

    # Internals --------------------------------------------------------------------------------
    def _doc(self, backend_id: str) -> dict[str, Any]:
        doc = self.docs.get(backend_id)
        if doc is None:
            raise NotFound(f"LLM backend {backend_id}", resource="llm_backend")
        return doc

    @staticmethod
    def _check(backend_type: str, effort: str | None, name: str, model: str) -> None:
        if backend_type not in TYPE_IDS:
            raise InvalidInput(
                f"Unknown backend_type {backend_type!r}; expected one of {', '.join(TYPE_IDS)}",
                field="backend_type",
            )
        if effort is not None and effort not in THINKING_EFFORTS:
            raise InvalidInput(
                f"thinking_effort must be one of {', '.join(THINKING_EFFORTS)}", field="thinking_effort"
            )
        if not name.strip() or not model.strip():
            raise InvalidInput("name and model must not be empty", field="name")

    async def _probe(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Ask the backend what it can do; an unreachable backend is kept, marked unhealthy."""
        model = self.model_for_doc(doc)
        try:
            caps = await model.probe()
        except Unavailable:
            kind = next(t for t in TYPES if t.id == doc["backend_type"])
            caps = Capabilities(
                supports_streaming=kind.supports_streaming,
                supports_multimodal=kind.supports_multimodal,
                multimodal_source="default",
                supports_thinking=kind.supports_thinking,
            )
            return {"probed": dataclasses.asdict(caps), "healthy": False}
        return {"probed": dataclasses.asdict(caps), "healthy": True}

    def model_for_doc(self, doc: dict[str, Any]) -> OpenAICompatible | OllamaCompatible:
        options: dict[str, Any] = {"temperature": doc["temperature"], "top_p": doc["top_p"]}
        if doc["backend_type"] == "ollama":
            if doc.get("top_k") is not None:
                options["top_k"] = doc["top_k"]
            return OllamaCompatible(doc["endpoint"], doc["model"], options)
        if doc.get("max_tokens"):
            options["max_tokens"] = doc["max_tokens"]
        return OpenAICompatible(doc["endpoint"], doc["model"], doc.get("api_key"), options)

    def _value(self, doc: dict[str, Any]) -> ModelBackend:
        probed = Capabilities(**doc["probed"])
        override = doc.get("override")
        caps = dataclasses.replace(
            probed,
            supports_multimodal=probed.supports_multimodal if override is None else override,
            multimodal_user_override=override,
            multimodal_source=probed.multimodal_source if override is None else "user",
        )
        return ModelBackend(
            id=doc["id"],
            name=doc["name"],
            backend_type=doc["backend_type"],
            endpoint=doc.get("endpoint"),
            model=doc["model"],
            api_key_configured=bool(doc.get("api_key")),
            is_active=doc["id"] == self.active_id(),
            temperature=doc["temperature"],
            top_p=doc["top_p"],
            top_k=doc.get("top_k"),
            max_tokens=doc.get("max_tokens"),
            thinking_enabled=doc.get("thinking_enabled", False),
            thinking_effort=doc.get("thinking_effort"),
            capabilities=caps,
            updated_at=doc["updated_at"],
            healthy=doc.get("healthy", True),
        )


def _ms_since(started: float) -> int:
    # Wall time of a real HTTP exchange: reported, never used by the world.
    return round((time.perf_counter() - started) * 1000)
