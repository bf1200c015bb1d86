"""First-run guidance: the setup wizard's last steps (``/setup/complete``, ``/setup/llm-config``),
the getting-started checklist (``/onboarding/*``), the chat's input suggestions and the llama.cpp
server probe the LLM settings dialog uses. Raw JSON as the vendor's handlers answer, except the
probe (enveloped); errors in the envelope.
"""

from __future__ import annotations

from fastapi import Query
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import Json, ok
from api.automation.schemas.guidance import SETUP_COMPLETED, LlmConfigBody
from hardware.ports.guidance import SUGGESTION_CATEGORIES


async def complete_setup(backend: Backend) -> JSONResponse:
    backend.onboarding.complete_setup()
    return Json(SETUP_COMPLETED)


async def llm_config(body: LlmConfigBody, backend: Backend) -> JSONResponse:
    backend.onboarding.save_llm_setup(body.to_port())
    return Json({"message": "LLM configuration saved", "provider": body.provider, "model": body.model})


async def onboarding_status(backend: Backend) -> JSONResponse:
    return Json(dict(backend.onboarding.status()))


async def dismiss(backend: Backend) -> JSONResponse:
    backend.onboarding.set_dismissed(True)
    return Json({"success": True, "dismissed": True})


async def reset(backend: Backend) -> JSONResponse:
    backend.onboarding.set_dismissed(False)
    return Json({"success": True, "dismissed": False})


async def suggestions(
    backend: Backend,
    input: str = "",
    category: str | None = None,
    limit: int = Query(20, ge=0),
) -> JSONResponse:
    return Json(dict(backend.suggestions.suggestions(input, category, limit)))


async def categories() -> JSONResponse:
    return Json(list(SUGGESTION_CATEGORIES))


async def llamacpp_server_info(
    backend: Backend, endpoint: str | None = None, api_key: str | None = None
) -> JSONResponse:
    info = await backend.onboarding.llamacpp_server_info(endpoint, api_key)
    return ok(dict(info), backend.clock.now())


ROUTES: list[Route] = [
    ("POST", "/setup/complete", complete_setup),
    ("POST", "/setup/llm-config", llm_config),
    ("GET", "/onboarding/status", onboarding_status),
    ("POST", "/onboarding/dismiss", dismiss),
    ("POST", "/onboarding/reset", reset),
    ("GET", "/suggestions", suggestions),
    ("GET", "/suggestions/categories", categories),
    ("GET", "/llm-backends/llamacpp/server-info", llamacpp_server_info),
]


router = catalogued_router(ROUTES, "guidance")
