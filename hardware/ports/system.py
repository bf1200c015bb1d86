"""The automation backend's system area: settings, capabilities, tools, network info, statistics."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class AutomationSystem(Protocol):
    """Server-wide settings and self-description that are not tied to one resource."""
