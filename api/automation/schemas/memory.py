"""Wire shapes of system memory: raw JSON (no success envelope), as its handlers answer."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.memory import (
    MEMORY_TARGETS,
    CategoryContent,
    CustomFile,
    MemoryConfig,
    MemoryFile,
    MemoryStats,
)

U64_MAX = 2**64 - 1
Usize = Annotated[int, Field(ge=0, le=U64_MAX)]
"""A Rust ``usize``/``u64``: a JSON integer, never a float or a string."""
DEFAULTS = MemoryConfig()


class Body(BaseModel):
    """serde's reading of a body: strict types, unknown fields ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)


class ContentBody(Body):
    content: str


class ConfigFields(Body):
    """Every field has the server's default, so ``{}`` is a whole configuration."""

    enabled: bool = DEFAULTS.enabled
    storage_path: str = DEFAULTS.storage_path
    user_char_limit: Usize = DEFAULTS.user_char_limit
    knowledge_char_limit: Usize = DEFAULTS.knowledge_char_limit
    procedures_char_limit: Usize = DEFAULTS.procedures_char_limit
    agent_char_limit: Usize = DEFAULTS.agent_char_limit
    temp_file_ttl_days: Usize = DEFAULTS.temp_file_ttl_days
    system_context_interval_secs: Usize = DEFAULTS.system_context_interval_secs
    summary_interval_secs: Usize = DEFAULTS.summary_interval_secs
    summary_backend_id: str | None = None

    def to_port(self) -> MemoryConfig:
        return MemoryConfig(**self.model_dump())


class ConfigBody(Body):
    config: ConfigFields


# Memory ----------------------------------------------------------------------------------------
def memory_files(files: list[MemoryFile]) -> dict[str, Any]:
    return {"files": [dataclasses.asdict(f) for f in files], "total": len(files)}


def category(c: CategoryContent) -> dict[str, Any]:
    stats = {"entry_count": c.entry_count, "file_size": c.file_size, "modified_at": c.modified_at}
    return {"category": c.category, "content": c.content, "stats": stats}


def custom_file(f: CustomFile) -> dict[str, Any]:
    return {"name": f.name, "chars": f.chars}


def stats(s: MemoryStats) -> dict[str, Any]:
    return {
        "files": {t: {"chars": s.chars[t], "modified_at": 0} for t in MEMORY_TARGETS},
        "custom_files": [custom_file(f) for f in s.custom_files],
    }


def config(c: MemoryConfig) -> dict[str, Any]:
    return dataclasses.asdict(c)
