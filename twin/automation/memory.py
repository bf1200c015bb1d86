"""System memory: the Markdown files under the server's ``data/memory``, one store document each.

The server's layout, kept as document ids (relative paths): ``USER.md``, ``KNOWLEDGE.md`` and
``PROCEDURES.md`` (the persistent files), ``custom/<name>.md``, and the legacy ``system.md``,
``agents/<id>.md``, ``chat/<id>.md`` and the four category files (``user_profile.md``...). The
persistent files and ``system.md`` are written with the server's default text when the world is
built without them (its start-up ``init``). A document holds the text and when it last changed
(whole seconds on the world clock). The configuration is a document of its own.

Quirks of the real handlers kept here: the API's writes check the *default* character limits
(the handlers' store is built without the saved configuration), while compression cuts to the
*configured* limits; stats report ``modified_at`` 0; a custom file that does not exist reads as
empty; export covers the legacy categories, not the persistent files. Failures carry the message
the vendor's handler sends, and the code of the status it sends it with.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InternalError, InvalidInput, NotFound
from hardware.ports.memory import (
    MEMORY_TARGETS,
    CategoryContent,
    CustomFile,
    MemoryConfig,
    MemoryFile,
    MemoryStats,
)

if TYPE_CHECKING:
    from twin.engine import Engine

BASE = "data/memory"
TARGET_FILES = {"user": "USER.md", "knowledge": "KNOWLEDGE.md", "procedures": "PROCEDURES.md"}
DEFAULT_TEXT = {
    "USER.md": "# User Profile\n\n> Last updated: \n\n",
    "KNOWLEDGE.md": (
        "# System Knowledge\n\n## System Resources\n\n<!-- auto-generated -->\n\n"
        "## Domain Knowledge\n\n<!-- AI-managed -->\n\n## Agent Experiences\n\n<!-- auto-generated -->\n\n"
    ),
    "PROCEDURES.md": (
        "# Procedures\n\n> SOPs, playbooks, and how-tos learned across sessions.\n"
        "> Add step-by-step procedures that future conversations should follow.\n\n"
    ),
    "system.md": (
        "# System Memory\n\n## User Profile\n\n## Domain Knowledge\n\n## Task Patterns\n\n"
        "## System Evolution\n"
    ),
}
API_LIMITS = MemoryConfig()
"""The limits the API's writes check: the defaults, whatever the configuration says."""
CATEGORIES = {
    "user_profile": "User Profile",
    "domain_knowledge": "Domain Knowledge",
    "task_patterns": "Task Patterns",
    "system_evolution": "System Evolution",
}
CATEGORY_ALIASES = {
    alias: key
    for key, aliases in {
        "user_profile": ("user profile", "userprofile", "用户画像", "preference", "preferences"),
        "domain_knowledge": (
            "domain knowledge",
            "domainknowledge",
            "领域知识",
            "entity",
            "entities",
            "fact",
            "facts",
        ),
        "task_patterns": ("task patterns", "taskpatterns", "任务模式", "pattern", "patterns"),
        "system_evolution": ("system evolution", "systemevolution", "系统进化"),
    }.items()
    for alias in aliases
}
VALID_CATEGORIES = ", ".join(CATEGORIES)
CUSTOM_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")
LEGACY_DIRS = {"agent": "agents", "chat": "chat"}
SOURCE_RANK = {"system": 0, "agent": 1, "chat": 2}
"""The order the server reads them in; newer files come first whatever their source."""


def rust_lines(text: str) -> list[str]:
    """``str::lines``: split on ``\\n``, no empty last line for a trailing newline, ``\\r`` dropped."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def evict_to_limit(content: str, max_chars: int) -> tuple[str, int]:
    """The server's compressor: keep the longest run of lines from the top that fits; the text
    kept and the number of lines removed."""
    if len(content) <= max_chars:
        return content, 0
    lines, used, keep = rust_lines(content), 0, 0
    for i, line in enumerate(lines):
        used += len(line) + (1 if i else 0)
        if used > max_chars:
            break
        keep = i + 1
    return "\n".join(lines[:keep]), len(lines) - keep


def replace_marker(text: str, marker: str, body: str) -> str:
    """``body`` between ``<!-- marker -->`` and ``<!-- /marker -->``, the pair appended if missing."""
    open_tag, close_tag = f"<!-- {marker} -->", f"<!-- /{marker} -->"
    start = text.find(open_tag)
    if start < 0:
        head = text if text.endswith("\n") else text + "\n"
        return f"{head}\n{open_tag}\n{body}\n{close_tag}\n"
    after = start + len(open_tag)
    end = text.find(close_tag, after)
    if end < 0:
        return f"{text[:after]}\n{body}\n{close_tag}\n"
    return f"{text[:after]}\n{body}\n{text[end:]}"


def parse_category(name: str) -> str | None:
    lowered = name.lower()
    return lowered if lowered in CATEGORIES else CATEGORY_ALIASES.get(lowered)


def _custom_name_error(name: str) -> str | None:
    if not name or len(name.encode()) > 32:
        return "Invalid input: Custom file name must be 1-32 characters"
    if not set(name) <= CUSTOM_NAME_CHARS:
        return (
            "Invalid input: Custom file name must only contain lowercase letters, digits, hyphens, "
            "and underscores"
        )
    return None


def _target_error(target: str) -> str:
    return f"Invalid target: {target}. Must be 'user', 'knowledge', or 'procedures'"


def _legacy_path(source_type: str, source_id: str) -> str:
    folder = LEGACY_DIRS.get(source_type)
    return f"{folder}/{source_id}.md" if folder else "system.md"


def _legacy_source(path: str) -> tuple[str, str, str] | None:
    """(id, display name, source type) of a legacy per-source file, or ``None``."""
    if path == "system.md":
        return "system", "System", "system"
    folder, _, rest = path.partition("/")
    source_type = next((t for t, f in LEGACY_DIRS.items() if f == folder), None)
    if source_type is None or "/" in rest or not rest.endswith(".md"):
        return None
    file_id = rest.removesuffix(".md")
    return file_id, file_id if source_type == "agent" else f"Chat {file_id[:8]}", source_type


def _not_found(path: str) -> str:
    return f'Storage error: Memory file not found: "{BASE}/{path}"'


def _config_from(doc: dict[str, Any]) -> MemoryConfig:
    names = {f.name for f in dataclasses.fields(MemoryConfig)}
    return MemoryConfig(**{k: v for k, v in doc.items() if k in names})


class SystemMemory:
    """Implements :class:`hardware.ports.memory.Memory` over the world's store."""

    def __init__(self, world: Engine) -> None:
        self.world = world
        self.files = world.store.collection("memory_files")
        self.settings = world.store.collection("memory_config")
        for path, text in DEFAULT_TEXT.items():
            if self.files.get(path) is None:
                self._put(path, text)

    # Documents --------------------------------------------------------------------------------
    def text(self, path: str) -> str | None:
        doc = self.files.get(path)
        return None if doc is None else doc["content"]

    def _put(self, path: str, content: str) -> None:
        self.files.put(path, {"content": content, "modified_at": int(self.world.now())})

    def replace_section(self, target: str, marker: str, body: str) -> bool:
        """Put ``body`` between the file's ``marker`` comments (no limit is checked, as on the
        server); False when that changes nothing."""
        path = TARGET_FILES[target]
        current = self.text(path) or ""
        updated = replace_marker(current, marker, body)
        if updated == current:
            return False
        self._put(path, updated)
        return True

    # The persistent files --------------------------------------------------------------------
    def read_file(self, target: str) -> str:
        if target not in TARGET_FILES:
            raise InvalidInput(_target_error(target), field="target")
        return self.text(TARGET_FILES[target]) or ""

    def write_file(self, target: str, content: str) -> None:
        if target not in TARGET_FILES:
            raise InvalidInput(_target_error(target), field="target")
        self._write_limited(target, content, f"Failed to write {target}: ")

    def _write_limited(self, target: str, content: str, prefix: str) -> None:
        limit = getattr(API_LIMITS, f"{target}_char_limit")
        if len(content) > limit:
            raise InvalidInput(
                f"{prefix}Invalid input: Content exceeds {target} char limit: {len(content)} > {limit}",
                field="content",
            )
        self._put(TARGET_FILES[target], content)

    def stats(self) -> MemoryStats:
        chars = {t: len(self.text(TARGET_FILES[t]) or "") for t in MEMORY_TARGETS}
        return MemoryStats(chars, tuple(self.custom_files()))

    # Custom files ----------------------------------------------------------------------------
    def custom_files(self) -> list[CustomFile]:
        found = [
            CustomFile(path[len("custom/") : -len(".md")], len(doc["content"]))
            for path, doc in self.files.items()
            if path.startswith("custom/") and path.endswith(".md")
        ]
        return sorted(found, key=lambda f: f.name)

    def read_custom(self, name: str) -> str:
        if (error := _custom_name_error(name)) is not None:
            raise NotFound(f"Custom file not found: {error}", resource="memory")
        return self.text(f"custom/{name}.md") or ""

    def write_custom(self, name: str, content: str) -> None:
        prefix = f"Failed to write custom file '{name}': "
        if (error := _custom_name_error(name)) is not None:
            raise InvalidInput(prefix + error, field="name")
        limit, chars = API_LIMITS.agent_char_limit, len(content)
        if chars > limit:
            raise InvalidInput(
                f"{prefix}Invalid input: Custom file content exceeds {name} char limit: {chars} > {limit}",
                field="content",
            )
        self._put(f"custom/{name}.md", content)

    def delete_custom(self, name: str) -> None:
        if (error := _custom_name_error(name)) is not None:
            raise InternalError(f"Failed to delete custom file '{name}': {error}", resource="memory")
        self.files.delete(f"custom/{name}.md")

    # Configuration and maintenance -----------------------------------------------------------
    def config(self) -> MemoryConfig:
        doc = self.settings.get("config")
        return MemoryConfig() if doc is None else _config_from(doc)

    def set_config(self, config: MemoryConfig) -> MemoryConfig:
        self.settings.put("config", dataclasses.asdict(config))
        return config

    def compress(self) -> int:
        config, removed = self.config(), 0
        for target in MEMORY_TARGETS:
            kept, lines = evict_to_limit(self.read_file(target), getattr(config, f"{target}_char_limit"))
            if lines:
                try:
                    self._write_limited(target, kept, "")
                except InvalidInput:  # past the API's limit: the server logs it and counts nothing
                    continue
                removed += lines
        return removed

    def export(self) -> str:
        now = datetime.fromtimestamp(self.world.now(), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        parts = [f"# NeoMind Memory Export\n\nGenerated: {now}\n\n"]
        for key, display in CATEGORIES.items():
            parts.append(f"---\n\n# {display}\n\n{self._category_text(key)}\n\n")
        return "".join(parts)

    # Legacy categories -----------------------------------------------------------------------
    def _category_text(self, key: str) -> str:
        stored = self.text(f"{key}.md")
        if stored is not None:
            return stored
        now = datetime.fromtimestamp(self.world.now(), UTC).strftime("%Y-%m-%d %H:%M")
        return f"# {CATEGORIES[key]}\n\n> Last updated: {now}\n> Total entries: 0\n\n"

    def read_category(self, category: str) -> CategoryContent:
        key = parse_category(category)
        if key is None:
            raise InvalidInput(f"Invalid category: {category}. Valid: {VALID_CATEGORIES}", field="category")
        return self._category(key)

    def write_category(self, category: str, content: str) -> CategoryContent:
        key = parse_category(category)
        if key is None:
            raise InvalidInput(f"Invalid category: {category}", field="category")
        self._put(f"{key}.md", content)
        return self._category(key)

    def _category(self, key: str) -> CategoryContent:
        doc = self.files.get(f"{key}.md")
        content = self._category_text(key) if doc is None else doc["content"]
        entries = sum(1 for line in rust_lines(content) if line.strip().startswith("-"))
        modified = 0 if doc is None else doc["modified_at"]
        return CategoryContent(key, CATEGORIES[key], content, entries, len(content.encode()), modified)

    # Legacy per-source files -----------------------------------------------------------------
    def list_files(self) -> list[MemoryFile]:
        found: list[MemoryFile] = []
        for path, doc in self.files.items():
            source = _legacy_source(path)
            if source is not None:
                content = doc["content"]
                entries = sum(1 for line in rust_lines(content) if line.startswith("-"))
                found.append(MemoryFile(*source, len(content.encode()), doc["modified_at"], entries))
        found.sort(key=lambda f: (-f.modified_at, SOURCE_RANK[f.source_type], f.id))
        return found

    def read_source(self, source_type: str, source_id: str) -> str:
        path = _legacy_path(source_type, source_id)
        text = self.text(path)
        if text is None:
            raise NotFound(f"Memory file not found: {_not_found(path)}", resource="memory")
        return text

    def write_source(self, source_type: str, source_id: str, content: str) -> None:
        self._put(_legacy_path(source_type, source_id), content)

    def delete_source(self, source_type: str, source_id: str) -> None:
        if source_type not in LEGACY_DIRS:
            raise InternalError(
                "Failed to delete memory: Storage error: Cannot delete system memory", resource="memory"
            )
        path = _legacy_path(source_type, source_id)
        if not self.files.delete(path):
            raise InternalError(f"Failed to delete memory: {_not_found(path)}", resource="memory")
