"""The automation server's administration: configuration export, import and validation, and the
archive of its own log files.

Configuration documents are the vendor's ``ConfigExport`` objects (mappings): ``version``,
``exported_at`` and the optional ``llm_settings``, ``devices``, ``rules``, ``alerts`` sections.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Administration(Protocol):
    def export(self) -> Mapping[str, Any]: ...

    def import_config(
        self, config: Mapping[str, Any], options: Mapping[str, Any] | None
    ) -> Mapping[str, Any]:
        """``imported`` (what was taken, as a ``ConfigExport``), ``skipped`` and ``errors`` (texts).
        ``options``: ``sections`` (``llm_settings``, ``devices``, ``rules``, ``alerts``) and
        ``overwrite``; ``None`` takes the vendor's defaults."""

    def validate(self, config: Mapping[str, Any]) -> Mapping[str, Any]:
        """``valid``, ``validation`` (per section) and ``errors``."""


@runtime_checkable
class ServerLogs(Protocol):
    """The server's own daily log files."""

    def archive(self, days: int | None) -> tuple[str, bytes]:
        """(file name, ZIP of the server's daily log files, newest first); ``days`` keeps the files of
        the last N days, today included. ``NotFound`` when no file is left."""
