"""The automation backend's dashboards and their share links.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock. Dashboard
components are free-form mappings a client stores and reads back: the backend never interprets them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Dashboard:
    id: str
    name: str
    layout: Mapping[str, Any]
    components: tuple[Mapping[str, Any], ...]
    created_at: float
    updated_at: float
    is_default: bool = False
    sort_order: int | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ShareLink:
    token: str
    dashboard_id: str
    permissions: Mapping[str, Any]
    created_at: float
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class SharedDashboard:
    dashboard: Dashboard
    link: ShareLink


@runtime_checkable
class Dashboards(Protocol):
    def list_dashboards(self) -> list[Dashboard]: ...

    def create_dashboard(
        self,
        name: str,
        layout: Mapping[str, Any] | None = None,
        components: Sequence[Mapping[str, Any]] = (),
        description: str | None = None,
    ) -> Dashboard: ...

    def get_dashboard(self, dashboard_id: str) -> Dashboard: ...

    def update_dashboard(self, dashboard_id: str, changes: Mapping[str, Any]) -> Dashboard: ...

    def delete_dashboard(self, dashboard_id: str) -> None: ...

    def share(
        self, dashboard_id: str, permissions: Mapping[str, Any], expires_in_hours: float | None
    ) -> ShareLink: ...

    def shares(self, dashboard_id: str) -> list[ShareLink]: ...

    def revoke_share(self, dashboard_id: str, token: str) -> None: ...

    def shared(self, token: str) -> SharedDashboard:
        """``NotFound`` for an unknown token; ``NotFound`` with resource ``expired_share`` past expiry."""

    def proxy(self, token: str, method: str, path: str) -> Mapping[str, Any]:
        """What a shared dashboard's component fetches through the link (read-only data)."""

    def duplicate(self, dashboard_id: str) -> Dashboard: ...

    def add_component(self, dashboard_id: str, component: Mapping[str, Any]) -> Dashboard: ...

    def remove_component(self, dashboard_id: str, component_id: str) -> Dashboard: ...

    def reorder(self, dashboard_ids: Sequence[str]) -> list[Dashboard]:
        """Give the listed dashboards ``sort_order`` 0, 1, 2... in that order."""

    def templates(self) -> list[Mapping[str, Any]]: ...
