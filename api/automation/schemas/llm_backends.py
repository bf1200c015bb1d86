"""Wire shapes of the model backends area: request bodies, backend types, instances and capabilities
(an API key is never part of a response: only ``api_key_configured``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool

from hardware.ports.llm_backends import BackendSpec, BackendType, Capabilities, ModelBackend


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CreateBackend(_Body):
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

    def to_port(self) -> BackendSpec:
        return BackendSpec(**self.model_dump())


class UpdateBackend(_Body):
    name: str | None = None
    model: str | None = None
    endpoint: str | None = None
    api_key: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    thinking_enabled: bool | None = None
    thinking_effort: str | None = None

    def changes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.model_fields_set}


class GenerateBody(_Body):
    prompt: str
    backend_id: str | None = None


class CapabilitiesPatch(_Body):
    multimodal: StrictBool | None = None


def type_info(t: BackendType) -> dict[str, Any]:
    return {
        "id": t.id,
        "name": t.name,
        "description": t.description,
        "default_model": t.default_model,
        "default_endpoint": t.default_endpoint,
        "requires_api_key": t.requires_api_key,
        "supports_streaming": t.supports_streaming,
        "supports_thinking": t.supports_thinking,
        "supports_multimodal": t.supports_multimodal,
    }


def capabilities(c: Capabilities) -> dict[str, Any]:
    out: dict[str, Any] = {
        "supports_streaming": c.supports_streaming,
        "supports_multimodal": c.supports_multimodal,
        "multimodal_source": c.multimodal_source,
        "supports_thinking": c.supports_thinking,
        "supports_tools": c.supports_tools,
        "max_context": c.max_context,
    }
    if c.multimodal_user_override is not None:
        out["multimodal_user_override"] = c.multimodal_user_override
    return out


def backend_info(b: ModelBackend) -> dict[str, Any]:
    return {
        "id": b.id,
        "name": b.name,
        "backend_type": b.backend_type,
        "endpoint": b.endpoint,
        "model": b.model,
        "api_key_configured": b.api_key_configured,
        "is_active": b.is_active,
        "temperature": b.temperature,
        "top_p": b.top_p,
        "top_k": b.top_k,
        "max_tokens": b.max_tokens,
        "thinking_enabled": b.thinking_enabled,
        "thinking_effort": b.thinking_effort,
        "capabilities": capabilities(b.capabilities),
        "updated_at": int(b.updated_at),
        "healthy": b.healthy,
    }
