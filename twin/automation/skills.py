"""Skills: the built-in scenario guides and the user's own, by id.

The loaded set lives in memory and is built at start (and by reload): the built-in files
(``skill_builtins/``), then the stored user files over them (``data/skills/<id>.md`` on the server:
one store document per file, keyed by the file's id, holding its text). The built-in files are the
twin's own: they carry the server's built-in ids, names, categories, priorities, token budgets,
trigger and anti-trigger keywords, tool targets and example requests, so a query ranks the same
skill first (scores differ slightly: the descriptions are other text), but their descriptions and
bodies are written for the twin and much shorter. A created
or updated skill is stored under its id when the id is safe for a file name (letters, digits,
``-`` and ``_``, at most 128); otherwise it is loaded but not stored, and a restart forgets it.
A deleted built-in skill is gone until the next reload or restart. An updated skill keeps the id
it was updated under while loaded; its stored file is read again by the id its text names.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.memory import Skill, SkillMatch
from twin.automation.skill_match import ParseError, match_skills, parse_skill

if TYPE_CHECKING:
    from twin.engine import Engine

BUILTINS = Path(__file__).with_name("skill_builtins")
SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


@functools.cache
def builtin_skills() -> tuple[Skill, ...]:
    return tuple(parse_skill(path.read_text(), "builtin") for path in sorted(BUILTINS.glob("*.md")))


def not_found(skill_id: str) -> NotFound:
    return NotFound(f"Skill '{skill_id}' not found", resource="skill")


def _parse(content: str) -> Skill:
    try:
        return parse_skill(content)
    except ParseError as err:
        raise InvalidInput(f"Parse error: {err}", field="content") from err


class SkillRegistry:
    """Implements :class:`hardware.ports.memory.Skills` over the world's store."""

    def __init__(self, world: Engine) -> None:
        self.files = world.store.collection("skill_files")
        self.loaded: dict[str, Skill] = {}
        self.reload_skills()

    def reload_skills(self) -> int:
        self.loaded = {s.id: s for s in builtin_skills()}
        for _, doc in self.files.items():
            try:
                skill = parse_skill(doc["content"])
            except (ParseError, KeyError, TypeError, AttributeError):
                continue  # the server skips a file it cannot parse
            self.loaded[skill.id] = skill
        return len(self.loaded)

    def list_skills(self) -> list[Skill]:
        return [self.loaded[k] for k in sorted(self.loaded)]

    def get_skill(self, skill_id: str) -> Skill:
        skill = self.loaded.get(skill_id)
        if skill is None:
            raise not_found(skill_id)
        return skill

    def create_skill(self, content: str) -> Skill:
        skill = _parse(content)
        self.loaded[skill.id] = skill
        self._store(skill.id, content)
        return skill

    def update_skill(self, skill_id: str, content: str) -> Skill:
        self.get_skill(skill_id)
        skill = _parse(content)
        skill = dataclasses.replace(skill, id=skill_id)
        self.loaded[skill_id] = skill
        self._store(skill_id, content)
        return skill

    def delete_skill(self, skill_id: str) -> None:
        if self.loaded.pop(skill_id, None) is None:
            raise not_found(skill_id)
        if SAFE_ID.fullmatch(skill_id):
            self.files.delete(skill_id)

    def match_skills(self, query: str, context_size: int) -> list[SkillMatch]:
        return match_skills(self.list_skills(), query, context_size)

    def _store(self, skill_id: str, content: str) -> None:
        if SAFE_ID.fullmatch(skill_id):
            self.files.put(skill_id, {"content": content})
