"""Dashboards (jwt-or-api-key) and their share links; ``/share/:token`` is public. Enveloped.

An expired link answers 410 ``GONE``. The share proxy (``ANY /share/:token/proxy/*path``) reads
live data for a shared dashboard's components: ``GET`` only (other methods 405).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import ok
from api.automation.schemas.dashboards import (
    ComponentRef,
    CreateDashboard,
    ReorderBody,
    ShareBody,
    UpdateDashboard,
    dashboard_info,
    share_info,
)
from hardware.ports.errors import NotFound

PROXY_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


DashboardId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""


async def list_dashboards(backend: Backend) -> JSONResponse:
    rows = [dashboard_info(d) for d in backend.dashboards.list_dashboards()]
    return ok({"dashboards": rows, "count": len(rows)}, backend.clock.now())


async def create_dashboard(body: CreateDashboard, backend: Backend) -> JSONResponse:
    created = backend.dashboards.create_dashboard(body.name, body.layout, body.components, body.description)
    return ok(dashboard_info(created), backend.clock.now())


async def get_dashboard(dashboard_id: DashboardId, backend: Backend) -> JSONResponse:
    return ok(dashboard_info(backend.dashboards.get_dashboard(dashboard_id)), backend.clock.now())


async def update_dashboard(
    dashboard_id: DashboardId, body: UpdateDashboard, backend: Backend
) -> JSONResponse:
    updated = backend.dashboards.update_dashboard(dashboard_id, body.changes())
    return ok(dashboard_info(updated), backend.clock.now())


async def delete_dashboard(dashboard_id: DashboardId, backend: Backend) -> JSONResponse:
    backend.dashboards.delete_dashboard(dashboard_id)
    return ok({"id": dashboard_id, "deleted": True}, backend.clock.now())


async def set_default(dashboard_id: DashboardId, backend: Backend) -> JSONResponse:
    updated = backend.dashboards.update_dashboard(dashboard_id, {"is_default": True})
    return ok(dashboard_info(updated), backend.clock.now())


async def duplicate(dashboard_id: DashboardId, backend: Backend) -> JSONResponse:
    return ok(dashboard_info(backend.dashboards.duplicate(dashboard_id)), backend.clock.now())


async def reorder(body: ReorderBody, backend: Backend) -> JSONResponse:
    boards = backend.dashboards.reorder(body.dashboard_ids or body.order or [])
    rows = [dashboard_info(d) for d in boards]
    return ok({"dashboards": rows, "count": len(rows)}, backend.clock.now())


async def list_templates(backend: Backend) -> JSONResponse:
    rows = [dict(t) for t in backend.dashboards.templates()]
    return ok({"templates": rows, "count": len(rows)}, backend.clock.now())


async def get_template(template_id: DashboardId, backend: Backend) -> JSONResponse:
    found = next((dict(t) for t in backend.dashboards.templates() if t["id"] == template_id), None)
    if found is None:
        raise NotFound(f"Template {template_id}", resource="template")
    return ok(found, backend.clock.now())


async def add_component(dashboard_id: DashboardId, body: dict[str, Any], backend: Backend) -> JSONResponse:
    return ok(dashboard_info(backend.dashboards.add_component(dashboard_id, body)), backend.clock.now())


async def remove_component(
    dashboard_id: DashboardId,
    backend: Backend,
    component_id: str | None = None,
    body: ComponentRef | None = None,
) -> JSONResponse:
    wanted = component_id or (body.component_id if body else None) or ""
    return ok(dashboard_info(backend.dashboards.remove_component(dashboard_id, wanted)), backend.clock.now())


async def share(dashboard_id: DashboardId, backend: Backend, body: ShareBody | None = None) -> JSONResponse:
    body = body or ShareBody()
    link = backend.dashboards.share(dashboard_id, body.permissions.model_dump(), body.expires_in_hours)
    return ok(share_info(link), backend.clock.now())


async def list_shares(dashboard_id: DashboardId, backend: Backend) -> JSONResponse:
    rows = [share_info(s) for s in backend.dashboards.shares(dashboard_id)]
    return ok({"shares": rows, "count": len(rows)}, backend.clock.now())


async def revoke_share(dashboard_id: DashboardId, token: str, backend: Backend) -> JSONResponse:
    backend.dashboards.revoke_share(dashboard_id, token)
    return ok({"token": token, "revoked": True}, backend.clock.now())


async def shared(token: str, backend: Backend) -> JSONResponse:
    view = backend.dashboards.shared(token)
    expires = None if view.link.expires_at is None else int(view.link.expires_at)
    data = {
        "dashboard": dashboard_info(view.dashboard),
        "permissions": dict(view.link.permissions),
        "expires_at": expires,
    }
    return ok(data, backend.clock.now())


async def share_proxy(token: str, path: str, request: Request, backend: Backend) -> JSONResponse:
    return ok(dict(backend.dashboards.proxy(token, request.method, path)), backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/dashboards", list_dashboards),
    ("POST", "/dashboards", create_dashboard),
    ("GET", "/dashboards/{id}", get_dashboard),
    ("PUT", "/dashboards/{id}", update_dashboard),
    ("DELETE", "/dashboards/{id}", delete_dashboard),
    ("PUT", "/dashboards/reorder", reorder),
    ("GET", "/dashboards/templates", list_templates),
    ("GET", "/dashboards/templates/{id}", get_template),
    ("POST", "/dashboards/{id}/default", set_default),
    ("POST", "/dashboards/{id}/components", add_component),
    ("DELETE", "/dashboards/{id}/components", remove_component),
    ("POST", "/dashboards/{id}/duplicate", duplicate),
    ("POST", "/dashboards/{id}/share", share),
    ("GET", "/dashboards/{id}/share", list_shares),
    ("DELETE", "/dashboards/{id}/share/{token}", revoke_share),
    ("GET", "/share/{token}", shared),
    *((m, "/share/{token}/proxy/{path:path}", share_proxy) for m in PROXY_METHODS),
]


def router_for(release: str) -> APIRouter:
    """The dashboards routes; release 0.9.17 also serves the earlier ``GET /dashboards/shared/:token``."""
    router = catalogued_router(ROUTES, "dashboards")
    if release == "0.9.17":
        router.add_api_route("/dashboards/shared/{token}", shared, methods=["GET"])
    return router
