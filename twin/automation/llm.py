"""Model backends: the registry of the built-in simulated backend and the clients' HTTP backends.

Registered backends are durable documents (``llm_backends``); API keys are stored, never logged
and never returned (only ``api_key_configured``). Creating or updating an HTTP backend probes it
(capabilities, model presence); a backend that cannot be reached is kept, marked unhealthy. Every
hosted kind of the vendor except Ollama speaks the OpenAI dialect here (:mod:`twin.automation.chat_models`).
"""

from __future__ import annotations

import dataclasses
import secrets
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import Conflict, InternalError, InvalidInput, NotFound, Unavailable
from hardware.ports.llm_backends import BackendSpec, BackendTest, BackendType, Capabilities, ModelBackend
from twin.automation import outbound
from twin.automation.chat_models import (
    ChatModel,
    Hints,
    OllamaCompatible,
    OpenAICompatible,
    SimulatedModel,
)

if TYPE_CHECKING:
    from twin.engine import Engine

SIMULATED_ID = "simulated"
OLLAMA_TIMEOUT_S = 30.0
"""The vendor's client timeout for the Ollama model list."""
SIMULATED_MODEL = "twin-sim-1"
THINKING_EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")

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
SIMULATED_TYPE = BackendType(
    "simulated",
    "Simulated (built in)",
    "The twin's own deterministic model: no endpoint, no API key, tools and streaming",
    SIMULATED_MODEL,
    None,
    False,
    True,
    False,
    False,
)
"""The built-in model's kind, listed first so a client's provider cards show it configured and
running; more backends of it can be created (each answers as the built-in one does)."""
TYPES = (SIMULATED_TYPE, *TYPES)
TYPE_IDS = tuple(t.id for t in TYPES)
OLLAMA_ENDPOINT = next(t.default_endpoint for t in TYPES if t.id == "ollama")


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

    def __init__(self, world: Engine) -> None:
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

    async def generate(self, prompt: str, backend_id: str | None = None) -> Mapping[str, Any]:
        if not prompt.strip():
            raise InvalidInput("prompt must not be empty", field="prompt")
        doc = self._doc(backend_id or self.active_id())
        reply = await self.model(doc["id"]).chat([{"role": "user", "content": prompt}], (), Hints())
        return {"text": reply.content, "backend_id": doc["id"], "model": doc["model"]}

    async def ollama_models(self, endpoint: str | None = None) -> list[Mapping[str, Any]]:
        """``GET <endpoint>/api/tags`` as the vendor's handler makes it (any endpoint the client names,
        default the registered Ollama's), fenced (:mod:`twin.automation.outbound`: never a link-local
        or metadata address); failures are the handler's 500s, and never carry the far end's body."""
        if endpoint is None:
            local = next((d for d in self.docs.values() if d["backend_type"] == "ollama"), None)
            endpoint = local["endpoint"] if local else OLLAMA_ENDPOINT
        url = f"{(endpoint or '').rstrip('/')}/api/tags"
        try:
            answer = await outbound.request("GET", url, outbound.METADATA_FENCE, timeout=OLLAMA_TIMEOUT_S)
        except outbound.OutboundError as err:
            raise InternalError(
                f"Failed to connect to Ollama: error sending request for url ({url})"
            ) from err
        if not 200 <= answer.status < 300:
            raise InternalError(f"Ollama returned status: {outbound.status_line(answer.status)}")
        try:
            data = answer.json()
            models = data["models"]
            if not isinstance(models, list):
                raise TypeError("models is not a list")
        except (ValueError, KeyError, TypeError) as err:
            raise InternalError("Failed to parse Ollama response: not an Ollama model list") from err
        return [
            {"name": m.get("name"), "size": m.get("size"), "modified_at": m.get("modified_at")}
            for m in models
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
        if doc["backend_type"] == SIMULATED_TYPE.id:
            return {"probed": _builtin(0.0)["probed"], "healthy": True}
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
