"""The automation backend's system memory (Markdown files the assistant reads and keeps) and its
skills (scenario guides matched against what a user asks).

Memory: three persistent files (``user``, ``knowledge``, ``procedures``) with character limits,
custom files (``custom:<name>``), the legacy per-source files (``system``, ``agent/<id>``,
``chat/<id>``) and the legacy categories (``user_profile``, ``domain_knowledge``,
``task_patterns``, ``system_evolution``). Skills: YAML front matter + Markdown body, built in or
the user's own. Value types are plain frozen data; timestamps are Unix seconds on the backend's
clock. Failures carry the vendor's message in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

MEMORY_TARGETS = ("user", "knowledge", "procedures")


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    enabled: bool = True
    storage_path: str = "data/memory"
    user_char_limit: int = 2000
    knowledge_char_limit: int = 3000
    procedures_char_limit: int = 3000
    agent_char_limit: int = 20000
    """Also the limit of each custom file."""
    temp_file_ttl_days: int = 7
    system_context_interval_secs: int = 600
    summary_interval_secs: int = 7200
    summary_backend_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryFile:
    """One legacy per-source file, as ``GET /memory`` lists it."""

    id: str
    name: str
    source_type: str
    """``system``, ``agent`` or ``chat``."""
    size: int
    """Bytes."""
    modified_at: int
    entry_count: int


@dataclass(frozen=True, slots=True)
class CategoryContent:
    category: str
    """The canonical key (``user_profile``...), whatever alias was asked for."""
    display_name: str
    content: str
    entry_count: int
    file_size: int
    modified_at: int
    """0 while the category has no file of its own (its content is then the default)."""


@dataclass(frozen=True, slots=True)
class CustomFile:
    name: str
    chars: int


@dataclass(frozen=True, slots=True)
class MemoryStats:
    chars: dict[str, int]
    """Characters of each of :data:`MEMORY_TARGETS`."""
    custom_files: tuple[CustomFile, ...]


@dataclass(frozen=True, slots=True)
class ToolTarget:
    tool: str
    actions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Skill:
    id: str
    name: str
    description: str
    category: str
    """``device``, ``rule``, ``agent``, ``message``, ``extension`` or ``general``."""
    origin: str
    """``builtin`` or ``user``."""
    priority: int
    token_budget: int
    keywords: tuple[str, ...]
    tool_targets: tuple[ToolTarget, ...]
    anti_trigger_keywords: tuple[str, ...]
    body: str


@dataclass(frozen=True, slots=True)
class SkillMatch:
    skill_id: str
    skill_name: str
    score: float
    body: str
    """The body as injected: cut to the skill's and the context's token budgets."""


@runtime_checkable
class Memory(Protocol):
    # The persistent files and custom files.
    def read_file(self, target: str) -> str:
        """``InvalidInput`` for a target outside :data:`MEMORY_TARGETS`."""

    def write_file(self, target: str, content: str) -> None:
        """``InvalidInput`` for an unknown target or content past the file's limit."""

    def stats(self) -> MemoryStats: ...

    def custom_files(self) -> list[CustomFile]:
        """By name."""

    def read_custom(self, name: str) -> str:
        """``""`` for a name with no file; ``NotFound`` for a name that is not valid."""

    def write_custom(self, name: str, content: str) -> None:
        """``InvalidInput`` for a name that is not valid or content past the limit."""

    def delete_custom(self, name: str) -> None:
        """Nothing to delete is fine; ``InternalError`` for a name that is not valid."""

    # Configuration and maintenance.
    def config(self) -> MemoryConfig: ...

    def set_config(self, config: MemoryConfig) -> MemoryConfig: ...

    def compress(self) -> int:
        """Cut each persistent file to its configured limit from the bottom; the lines removed."""

    def export(self) -> str:
        """The legacy categories as one Markdown document."""

    # Legacy categories and per-source files.
    def read_category(self, category: str) -> CategoryContent:
        """``InvalidInput`` for an unknown category."""

    def write_category(self, category: str, content: str) -> CategoryContent: ...

    def list_files(self) -> list[MemoryFile]:
        """Newest first."""

    def read_source(self, source_type: str, source_id: str) -> str:
        """``NotFound`` when the file does not exist."""

    def write_source(self, source_type: str, source_id: str, content: str) -> None: ...

    def delete_source(self, source_type: str, source_id: str) -> None:
        """``InternalError`` for a missing file and for the system file."""


@runtime_checkable
class Skills(Protocol):
    def list_skills(self) -> list[Skill]:
        """By id."""

    def get_skill(self, skill_id: str) -> Skill:
        """``NotFound`` for an unknown id."""

    def create_skill(self, content: str) -> Skill:
        """``InvalidInput`` when the content does not parse; a skill with the id of one already
        loaded replaces it."""

    def update_skill(self, skill_id: str, content: str) -> Skill:
        """The content replaces the skill under ``skill_id`` (whatever id the content names)."""

    def delete_skill(self, skill_id: str) -> None: ...

    def reload_skills(self) -> int:
        """Built-in skills, then the stored user skills over them; how many are loaded."""

    def match_skills(self, query: str, context_size: int) -> list[SkillMatch]:
        """The skills ``query`` triggers, best first, within the budget of a model whose context
        holds ``context_size`` tokens."""
