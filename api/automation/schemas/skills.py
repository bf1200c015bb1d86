"""Wire shapes of skills: raw JSON (no success envelope), as their handlers answer."""

from __future__ import annotations

import math
from typing import Any

from api.automation.schemas.memory import Body, Usize
from hardware.ports.memory import Skill, SkillMatch

U32_MAX = 2**32 - 1
PREVIEW_CHARS = 200


class MatchBody(Body):
    query: str
    context_size: Usize | None = None


def skill_summary(s: Skill) -> dict[str, Any]:
    """The server labels every skill ``origin: "user"``, built-in ones too."""
    return {
        "id": s.id,
        "name": s.name,
        "category": s.category,
        "origin": "user",
        "priority": s.priority,
        "token_budget": s.token_budget,
        "keywords": list(s.keywords),
        "body_length": len(s.body.encode()),
    }


def skill_detail(s: Skill) -> dict[str, Any]:
    out = skill_summary(s)
    del out["body_length"]
    tools = [{"tool": t.tool, "actions": list(t.actions)} for t in s.tool_targets]
    return {
        **out,
        "tool_targets": tools,
        "anti_trigger_keywords": list(s.anti_trigger_keywords),
        "body": s.body,
    }


def skill_page(skills: list[Skill], page: int, page_size: int, origin: str | None) -> dict[str, Any]:
    page, page_size = max(page, 1), min(max(page_size, 1), 100)
    rows = [skill_summary(s) for s in skills]
    if origin:  # compared with the label, so "builtin" finds nothing
        rows = [r for r in rows if r["origin"] == origin]
    start = (page - 1) * page_size
    return {
        "skills": rows[start : start + page_size],
        "total": len(rows),
        "page": page,
        "page_size": page_size,
        "total_pages": math.ceil(len(rows) / page_size),
    }


def skill_matches(query: str, matches: list[SkillMatch]) -> dict[str, Any]:
    rows = [
        {
            "skill_id": m.skill_id,
            "skill_name": m.skill_name,
            "score": m.score,
            "body_preview": m.body[:PREVIEW_CHARS],
        }
        for m in matches
    ]
    return {"query": query, "matches": rows}
