"""The automation backend's model backends: the LLM servers agents and chat run on.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class BackendType:
    id: str
    name: str
    description: str
    default_model: str
    default_endpoint: str | None
    requires_api_key: bool
    supports_streaming: bool
    supports_thinking: bool
    supports_multimodal: bool


@dataclass(frozen=True, slots=True)
class Capabilities:
    supports_streaming: bool = False
    supports_multimodal: bool = False
    multimodal_user_override: bool | None = None
    multimodal_source: str = "probe"
    """``probe`` (what the model reported), ``default`` (not probed) or ``user`` (overridden)."""
    supports_thinking: bool = False
    supports_tools: bool = True
    max_context: int = 4096


@dataclass(frozen=True, slots=True)
class BackendSpec:
    name: str
    backend_type: str
    model: str
    endpoint: str | None = None
    api_key: str | None = None
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int | None = None
    max_tokens: int | None = None
    thinking_enabled: bool = False
    thinking_effort: str | None = None


@dataclass(frozen=True, slots=True)
class ModelBackend:
    id: str
    name: str
    backend_type: str
    endpoint: str | None
    model: str
    api_key_configured: bool
    is_active: bool
    temperature: float
    top_p: float
    top_k: int | None
    max_tokens: int | None
    thinking_enabled: bool
    thinking_effort: str | None
    capabilities: Capabilities
    updated_at: float
    healthy: bool


@dataclass(frozen=True, slots=True)
class BackendTest:
    backend_id: str
    success: bool
    latency_ms: int
    reply: str | None = None
    error: str | None = None


@runtime_checkable
class ModelBackends(Protocol):
    def types(self) -> list[BackendType]: ...

    def list_backends(self) -> list[ModelBackend]: ...

    def active_id(self) -> str | None: ...

    async def create_backend(self, spec: BackendSpec) -> ModelBackend:
        """Registers and probes the backend (real HTTP for the HTTP kinds)."""

    def get_backend(self, backend_id: str) -> ModelBackend: ...

    async def update_backend(self, backend_id: str, changes: Mapping[str, Any]) -> ModelBackend: ...

    def delete_backend(self, backend_id: str) -> None: ...

    def activate(self, backend_id: str) -> ModelBackend: ...

    def set_multimodal(self, backend_id: str, multimodal: bool | None) -> ModelBackend:
        """``None`` clears the user's override: the probed value applies again."""

    async def test_backend(self, backend_id: str) -> BackendTest: ...

    async def generate(self, prompt: str, backend_id: str | None = None) -> Mapping[str, Any]:
        """One completion without tools: ``text``, ``backend_id``, ``model``."""

    async def ollama_models(self, endpoint: str | None = None) -> list[Mapping[str, Any]]:
        """The models a local Ollama server has (``GET {endpoint}/api/tags``)."""
