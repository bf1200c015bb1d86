"""First-run guidance of the automation server: the setup wizard's last steps, the getting-started
checklist (onboarding) and the chat's input suggestions.

Shapes are the vendor's JSON objects (mappings). Onboarding's dismissal and the setup's LLM
settings are durable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

SETUP_PROVIDERS = ("ollama", "openai", "anthropic", "google", "xai", "llamacpp")
SUGGESTION_CATEGORIES = ("device", "automation", "alert", "analytics", "agent", "settings", "general")


@dataclass(frozen=True, slots=True)
class LlmSetup:
    provider: str
    model: str
    endpoint: str | None = None
    api_key: str | None = None


@runtime_checkable
class Onboarding(Protocol):
    def status(self) -> Mapping[str, Any]:
        """``dismissed``, ``system_status`` (LLM backend present, devices and their count), ``steps``."""

    def set_dismissed(self, dismissed: bool) -> None: ...

    def complete_setup(self) -> None:
        """``InvalidInput`` (resource ``setup_incomplete``) while no user exists."""

    def save_llm_setup(self, setup: LlmSetup) -> None:
        """Only before the first user exists (``Conflict``, resource ``setup``, afterwards);
        ``InvalidInput`` with resource ``provider`` or ``model`` for a bad provider or empty model."""

    def llm_settings(self) -> Mapping[str, Any] | None:
        """The saved LLM settings (``backend``, ``endpoint``, ``model``, ``temperature``, ``top_p``,
        ``max_tokens``; never the key), or ``None``."""

    async def llamacpp_server_info(self, endpoint: str | None, api_key: str | None) -> Mapping[str, Any]:
        """A llama.cpp server's health, loaded model and capabilities, probed over HTTP; an unreachable
        server is an outcome (``status: "error"``), not an error."""


@runtime_checkable
class Suggestions(Protocol):
    def suggestions(self, text: str, category: str | None, limit: int) -> Mapping[str, Any]:
        """``suggestions`` (id, label, prompt, icon, category, priority?, context?), highest priority
        first, and their ``context`` (timestamp, learned_patterns_count, device_count, time_context)."""
