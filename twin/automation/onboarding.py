"""The setup wizard's last steps and the getting-started checklist, over the world.

Onboarding's ``dismissed`` flag and the LLM settings the setup wizard saves live in the durable
``settings`` collection under the vendor's keys (``onboarding_dismissed``, ``llm``). The checklist
is read off the world: an LLM backend is configured, devices exist.

``llamacpp_server_info`` probes a llama.cpp server as the vendor's handler does (``/health``, then
``/v1/models`` and ``/props``), over real HTTP to the address the client gives, like the model
backends' own probes; the latency is the real round trip.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import Conflict, InvalidInput, Unavailable
from hardware.ports.guidance import SETUP_PROVIDERS, LlmSetup
from twin.automation.chat_models import get_json
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.store import Collection
    from twin.world import World

DISMISSED = "onboarding_dismissed"
LLM = "llm"
LLAMACPP_DEFAULT = "http://127.0.0.1:8080"
VISION = re.compile(r"vision|-vl\b|\bvl-|llava|minicpm-v|gemma-?3|pixtral|qwen2\.5-vl|moondream")
THINKING = re.compile(r"r1|qwq|think|reason|qwen3")


class TwinOnboarding:
    def __init__(self, world: World) -> None:
        self.world = world

    def _settings(self) -> Collection:
        """The server's settings (the collection :mod:`twin.automation.settings` keeps its keys in)."""
        return self.world.store.collection("settings")

    # Onboarding -----------------------------------------------------------------------------------
    def status(self) -> Mapping[str, Any]:
        dismissed = (self._settings().get(DISMISSED) or {}).get("value") == "true"
        has_llm = bool(automation_of(self.world).llm.list_backends())
        count = automation_of(self.world).devices.list(1, 1, None, None).total
        return {
            "dismissed": dismissed,
            "system_status": {"has_llm_backend": has_llm, "has_devices": count > 0, "device_count": count},
            "steps": {"llm": {"completed": has_llm}, "device": {"completed": count > 0}},
        }

    def set_dismissed(self, dismissed: bool) -> None:
        self._settings().put(DISMISSED, {"value": "true" if dismissed else "false"})

    # Setup ----------------------------------------------------------------------------------------
    def complete_setup(self) -> None:
        if automation_of(self.world).users.setup_required():
            raise InvalidInput(
                "Cannot complete setup before creating an admin account", resource="setup_incomplete"
            )

    def save_llm_setup(self, setup: LlmSetup) -> None:
        if not automation_of(self.world).users.setup_required():
            raise Conflict(
                "LLM config can only be set via the setup endpoint before the first user is created. "
                "Use PUT /api/config/llm instead.",
                resource="setup",
            )
        if setup.provider not in SETUP_PROVIDERS:
            raise InvalidInput(f"Provider must be one of: {', '.join(SETUP_PROVIDERS)}", resource="provider")
        if not setup.model and setup.provider != "llamacpp":
            raise InvalidInput("Model name cannot be empty", resource="model")
        doc = {
            "backend": setup.provider,
            "endpoint": setup.endpoint,
            "model": setup.model,
            "api_key": setup.api_key,
            "temperature": 0.7,
            "top_p": 0.9,
            "max_tokens": 2048,
        }
        self._settings().put(LLM, doc)

    def llm_settings(self) -> Mapping[str, Any] | None:
        doc = self._settings().get(LLM)
        return None if doc is None else {k: v for k, v in doc.items() if k != "api_key"}

    # llama.cpp ------------------------------------------------------------------------------------
    async def llamacpp_server_info(self, endpoint: str | None, api_key: str | None) -> Mapping[str, Any]:
        base = (endpoint or LLAMACPP_DEFAULT).rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        server: dict[str, Any] = {"model_name": None, "n_ctx": None, "total_slots": None, "version": None}
        caps: dict[str, Any] = {
            "supports_streaming": True,
            "supports_multimodal": False,
            "supports_thinking": True,
            "supports_tools": True,
            "max_context": 4096,
        }
        started = time.perf_counter()
        try:
            await get_json(f"{base}/health", headers)
            status = "ok"
        except Unavailable as err:
            code = re.search(r"HTTP (\d+)", err.message)
            why = err.message.removeprefix("model backend unreachable: ")
            status = f"error: HTTP {code.group(1)}" if code else f"unreachable: {why}"
        health = {"status": status, "latency_ms": int((time.perf_counter() - started) * 1000)}
        if status == "ok":
            await self._describe(base, headers, server, caps)
        return {"status": "ok" if status == "ok" else "error", "health": health, "server": server,
                "capabilities": caps}  # fmt: skip

    async def _describe(
        self, base: str, headers: Mapping[str, str], server: dict[str, Any], caps: dict[str, Any]
    ) -> None:
        try:
            first = ((await get_json(f"{base}/v1/models", headers)).get("data") or [{}])[0]
        except (Unavailable, IndexError):
            first = {}
        if isinstance(first, dict) and first.get("id"):
            server["model_name"] = first["id"]
        train = (first.get("meta") or {}).get("n_ctx_train") if isinstance(first, dict) else None
        if isinstance(train, int):
            caps["max_context"] = train
        try:
            props = await get_json(f"{base}/props", headers)
        except Unavailable:
            props = {}
        if server["model_name"] is None:
            alias, path = props.get("model_alias"), props.get("model_path")
            server["model_name"] = alias or (
                path.rsplit("/", 1)[-1] if isinstance(path, str) and path else None
            )
        settings = props.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") or (settings.get("params") or {}).get("n_ctx")
        server["n_ctx"] = n_ctx
        if caps["max_context"] == 4096 and isinstance(n_ctx, int):
            caps["max_context"] = n_ctx
        server["total_slots"] = props.get("total_slots")
        server["version"] = props.get("build_info")
        name = (server["model_name"] or "").lower()
        if name:
            caps["supports_multimodal"] = bool(VISION.search(name))
            if caps["supports_multimodal"]:
                caps["multimodal_source"] = "heuristic"
            caps["supports_thinking"] = bool(THINKING.search(name))
        vision = (props.get("modalities") or {}).get("vision")
        if isinstance(vision, bool):
            caps["supports_multimodal"] = vision
