"""Where a scenario's files may be: the fixtures it replays and the video files it plays resolve
inside the scenario's own directory or a directory the user allowed (``--scenario-files``), never
elsewhere on the host. A path outside them is a validation error that says only that: it is told
before anything is opened, so it never tells whether such a file exists or what it holds."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationInfo

FILES = "files"
"""Validation context key: the :class:`FileRoots` a scenario's paths must stay in (without it, as for
a scenario the caller itself checks, paths are taken as given)."""


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))  # links followed, whether or not the file exists


@dataclass(frozen=True)
class FileRoots:
    base: Path
    """Where a relative path starts."""
    roots: tuple[Path, ...]
    """A path must lead (links followed) inside one of these."""

    @classmethod
    def of(cls, base: Path, *allowed: Path) -> FileRoots:
        roots = (base, *allowed)
        return cls(_real(base), tuple(dict.fromkeys(_real(r) for r in roots)))

    def place(self, value: str) -> str:
        """The absolute path ``value`` names, or :class:`ValueError` when it leads outside the roots."""
        if "\x00" in value:
            raise ValueError("a file path has no NUL character")
        path = _real(self.base / Path(value).expanduser() if not Path(value).is_absolute() else Path(value))
        if not any(path == r or path.is_relative_to(r) for r in self.roots):
            dirs = ", ".join(str(r) for r in self.roots)
            raise ValueError(
                f"{value!r} is outside the directories a scenario may read ({dirs}); "
                "put the file there or allow its directory with --scenario-files"
            )
        return str(path)


def placed(value: str, info: ValidationInfo) -> str:
    """A pydantic validator: ``value`` placed inside the context's roots (unchanged without them)."""
    roots = (info.context or {}).get(FILES)
    return roots.place(value) if isinstance(roots, FileRoots) and isinstance(value, str) else value
