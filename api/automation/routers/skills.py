"""Skills (jwt-or-api-key): list, read, create, update, delete, reload and a match test. Raw JSON;
failures are ``{"error": ...}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query

from api.automation.deps import Backend, current_user
from api.automation.schemas import Json
from api.automation.schemas import skills as wire
from api.automation.schemas.memory import ContentBody

router = APIRouter(tags=["skills"], dependencies=[Depends(current_user)])
SkillId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""
U32 = Query(ge=0, le=wire.U32_MAX)
DEFAULT_CONTEXT = 8000
ACTIONS = ("match", "reload")
"""``/skills/match`` and ``/skills/reload`` take only POST: for another method the vendor's router
answers 405 instead of trying ``/skills/:id``."""


async def skill_id_of(skill_id: SkillId) -> str:
    if skill_id in ACTIONS:
        raise HTTPException(405)
    return skill_id


TargetId = Annotated[str, Depends(skill_id_of)]


@router.get("/skills")
async def list_skills(
    backend: Backend,
    page: Annotated[int, U32] = 1,
    page_size: Annotated[int, U32] = 20,
    origin: str | None = None,
) -> Json:
    return Json(wire.skill_page(backend.skills.list_skills(), page, page_size, origin))


@router.post("/skills/match")
async def match_skills(body: wire.MatchBody, backend: Backend) -> Json:
    context = DEFAULT_CONTEXT if body.context_size is None else body.context_size
    return Json(wire.skill_matches(body.query, backend.skills.match_skills(body.query, context)))


@router.post("/skills/reload")
async def reload_skills(backend: Backend) -> Json:
    return Json({"message": "Skills reloaded", "total": backend.skills.reload_skills()})


@router.get("/skills/{id}")
async def get_skill(skill_id: TargetId, backend: Backend) -> Json:
    return Json(wire.skill_detail(backend.skills.get_skill(skill_id)))


@router.post("/skills")
async def create_skill(body: ContentBody, backend: Backend) -> Json:
    return Json(wire.skill_detail(backend.skills.create_skill(body.content)), status_code=201)


@router.put("/skills/{id}")
async def update_skill(skill_id: TargetId, body: ContentBody, backend: Backend) -> Json:
    return Json(wire.skill_detail(backend.skills.update_skill(skill_id, body.content)))


@router.delete("/skills/{id}")
async def delete_skill(skill_id: TargetId, backend: Backend) -> Json:
    backend.skills.delete_skill(skill_id)
    return Json({"message": f"Skill '{skill_id}' deleted"})
