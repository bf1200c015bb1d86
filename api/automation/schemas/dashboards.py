"""Wire shapes of the dashboards area: request bodies, dashboards (times in Unix seconds) and share links."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.dashboards import Dashboard, ShareLink


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CreateDashboard(_Body):
    name: str
    description: str | None = None
    layout: dict[str, Any] | None = None
    components: list[dict[str, Any]] = []


class UpdateDashboard(_Body):
    name: str | None = None
    description: str | None = None
    layout: dict[str, Any] | None = None
    components: list[dict[str, Any]] | None = None
    is_default: bool | None = None
    sort_order: int | None = None

    def changes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.model_fields_set}


class ComponentRef(_Body):
    component_id: str


class ReorderBody(_Body):
    dashboard_ids: list[str] | None = None
    order: list[str] | None = None


class Permissions(_Body):
    allow_interactive: bool = False


class ShareBody(_Body):
    permissions: Permissions = Permissions()
    expires_in_hours: float | None = None


def dashboard_info(d: Dashboard) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": d.id,
        "name": d.name,
        "layout": dict(d.layout),
        "components": [dict(c) for c in d.components],
        "created_at": int(d.created_at),
        "updated_at": int(d.updated_at),
        "is_default": d.is_default,
    }
    if d.sort_order is not None:
        out["sort_order"] = d.sort_order
    if d.description is not None:
        out["description"] = d.description
    return out


def share_info(link: ShareLink) -> dict[str, Any]:
    out: dict[str, Any] = {
        "token": link.token,
        "dashboard_id": link.dashboard_id,
        "permissions": dict(link.permissions),
        "created_at": int(link.created_at),
        "share_url": f"/share/{link.token}",
    }
    if link.expires_at is not None:
        out["expires_at"] = int(link.expires_at)
    return out
