"""Dashboards: durable layouts of components, and share links with an expiry.

A share link's token is ``ds_`` + 32 hex digits (unguessable: it is the only credential of
``/share/:token``). Past ``expires_at`` on the world clock a link answers *gone*. The share proxy
lets a shared dashboard's components read live data without an account: only ``GET``, only the
current values and details of devices the dashboard's components name in their ``data_source``.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hardware.ports.dashboards import Dashboard, SharedDashboard, ShareLink
from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind

if TYPE_CHECKING:
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine

DEFAULT_LAYOUT: dict[str, Any] = {
    "columns": 12,
    "rows": "auto",
    "breakpoints": {"lg": 1200, "md": 996, "sm": 768, "xs": 480},
}
POSITION_KEYS = ("x", "y", "w", "h")
MAX_SHARE_HOURS = 24 * 365
TEMPLATES: tuple[dict[str, Any], ...] = (
    {
        "id": "overview",
        "name": "Overview",
        "description": "A device status grid and a line chart.",
        "layout": DEFAULT_LAYOUT,
        "components": [
            {"id": "status", "type": "device_status", "position": {"x": 0, "y": 0, "w": 12, "h": 3}},
            {"id": "trend", "type": "line_chart", "position": {"x": 0, "y": 3, "w": 12, "h": 5}},
        ],
    },
    {
        "id": "single-metric",
        "name": "Single metric",
        "description": "One gauge and its history.",
        "layout": DEFAULT_LAYOUT,
        "components": [
            {"id": "gauge", "type": "gauge", "position": {"x": 0, "y": 0, "w": 4, "h": 4}},
            {"id": "history", "type": "line_chart", "position": {"x": 4, "y": 0, "w": 8, "h": 4}},
        ],
    },
)
DEVICE_SOURCE = re.compile(r"device:([^:]+)(?::.*)?$")


def not_found(dashboard_id: str) -> NotFound:
    return NotFound(f"Dashboard {dashboard_id}", resource="dashboard")


def _check_layout(layout: Mapping[str, Any]) -> dict[str, Any]:
    merged = {**DEFAULT_LAYOUT, **layout}
    columns = merged["columns"]
    if not isinstance(columns, int) or isinstance(columns, bool) or not 1 <= columns <= 48:
        raise InvalidInput("layout.columns must be an integer from 1 to 48", field="layout")
    rows = merged["rows"]
    if rows != "auto" and (not isinstance(rows, int) or isinstance(rows, bool) or rows < 1):
        raise InvalidInput("layout.rows must be 'auto' or a positive integer", field="layout")
    return merged


def _check_components(components: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for i, comp in enumerate(components):
        if not isinstance(comp, Mapping):
            raise InvalidInput(f"components[{i}] must be an object", field="components")
        cid, ctype, pos = comp.get("id"), comp.get("type"), comp.get("position")
        if not isinstance(cid, str) or not cid or not isinstance(ctype, str) or not ctype:
            raise InvalidInput(f"components[{i}] needs a string id and type", field="components")
        if cid in seen:
            raise InvalidInput(f"components[{i}]: duplicate id {cid!r}", field="components")
        seen.add(cid)
        if not isinstance(pos, Mapping) or any(
            not isinstance(pos.get(k), int) or isinstance(pos.get(k), bool) for k in POSITION_KEYS
        ):
            raise InvalidInput(f"components[{i}].position needs integer x, y, w and h", field="components")
        if pos["x"] < 0 or pos["y"] < 0 or pos["w"] < 1 or pos["h"] < 1:
            raise InvalidInput(f"components[{i}].position is out of range", field="components")
        out.append(dict(comp))
    return out


class DashboardRegistry:
    """Implements :class:`hardware.ports.agents.Dashboards` over the world's store."""

    def __init__(self, world: Engine, *, devices: DeviceRegistry) -> None:
        self.world = world
        self.devices = devices
        self.docs = world.store.collection("dashboards")
        self.links = world.store.collection("dashboard_shares")

    def list_dashboards(self) -> list[Dashboard]:
        boards = self.docs.values_as(self._value)
        boards.sort(key=lambda d: (d.sort_order is None, d.sort_order or 0))
        return boards

    def create_dashboard(
        self,
        name: str,
        layout: Mapping[str, Any] | None = None,
        components: Sequence[Mapping[str, Any]] = (),
        description: str | None = None,
    ) -> Dashboard:
        if not name.strip():
            raise InvalidInput("name must not be empty", field="name")
        now = self.world.now()
        drawn = uuid.UUID(bytes=self.world.streams.get("automation.dashboards").bytes(16), version=4)
        doc: dict[str, Any] = {
            "id": f"dashboard_{drawn}",  # as the handler names them
            "name": name,
            "description": description,
            "layout": _check_layout(layout or {}),
            "components": _check_components(components),
            "created_at": now,
            "updated_at": now,
            "is_default": len(self.docs) == 0,
            "sort_order": None,
        }
        self.docs.put(doc["id"], doc)
        self._emit(doc["id"], "created")
        return self._value(doc)

    def get_dashboard(self, dashboard_id: str) -> Dashboard:
        return self._value(self._doc(dashboard_id))

    def update_dashboard(self, dashboard_id: str, changes: Mapping[str, Any]) -> Dashboard:
        doc = self._doc(dashboard_id)
        if "name" in changes:
            if not isinstance(changes["name"], str) or not changes["name"].strip():
                raise InvalidInput("name must not be empty", field="name")
            doc["name"] = changes["name"]
        if "description" in changes:
            doc["description"] = changes["description"]
        if changes.get("layout") is not None:
            doc["layout"] = _check_layout({**doc["layout"], **changes["layout"]})
        if changes.get("components") is not None:
            doc["components"] = _check_components(changes["components"])
        if "sort_order" in changes:
            doc["sort_order"] = changes["sort_order"]
        doc["updated_at"] = self.world.now()
        with self.world.store.atomic():
            if changes.get("is_default"):
                for other_id, other in self.docs.items():
                    if other.get("is_default") and other_id != dashboard_id:
                        self.docs.put(other_id, {**other, "is_default": False})
                doc["is_default"] = True
            self.docs.put(dashboard_id, doc)
        self._emit(dashboard_id, "updated")
        return self._value(doc)

    def delete_dashboard(self, dashboard_id: str) -> None:
        self._doc(dashboard_id)
        with self.world.store.atomic():
            self.docs.delete(dashboard_id)
            for token, link in self.links.items():
                if link.get("dashboard_id") == dashboard_id:
                    self.links.delete(token)
        self._emit(dashboard_id, "deleted")

    def duplicate(self, dashboard_id: str) -> Dashboard:
        doc = self._doc(dashboard_id)
        copy = self.create_dashboard(
            f"{doc['name']} (copy)", doc["layout"], doc["components"], doc.get("description")
        )
        return copy

    def add_component(self, dashboard_id: str, component: Mapping[str, Any]) -> Dashboard:
        doc = self._doc(dashboard_id)
        return self.update_dashboard(dashboard_id, {"components": [*doc["components"], dict(component)]})

    def remove_component(self, dashboard_id: str, component_id: str) -> Dashboard:
        doc = self._doc(dashboard_id)
        kept = [c for c in doc["components"] if c.get("id") != component_id]
        if len(kept) == len(doc["components"]):
            raise NotFound(f"Component {component_id}", resource="component")
        return self.update_dashboard(dashboard_id, {"components": kept})

    def reorder(self, dashboard_ids: Sequence[str]) -> list[Dashboard]:
        docs = [self._doc(d) for d in dashboard_ids]
        with self.world.store.atomic():
            for order, doc in enumerate(docs):
                doc["sort_order"] = order
                self.docs.put(doc["id"], doc)
        return self.list_dashboards()

    def templates(self) -> list[Mapping[str, Any]]:
        return list(TEMPLATES)

    # Sharing ----------------------------------------------------------------------------------
    def share(
        self, dashboard_id: str, permissions: Mapping[str, Any], expires_in_hours: float | None
    ) -> ShareLink:
        self._doc(dashboard_id)
        if expires_in_hours is not None and not 0 < expires_in_hours <= MAX_SHARE_HOURS:
            raise InvalidInput(
                f"expires_in_hours must be in (0, {MAX_SHARE_HOURS}]", field="expires_in_hours"
            )
        now = self.world.now()
        link: dict[str, Any] = {
            "token": "ds_" + secrets.token_hex(16),
            "dashboard_id": dashboard_id,
            "permissions": {"allow_interactive": bool(permissions.get("allow_interactive", False))},
            "created_at": now,
            "expires_at": None if expires_in_hours is None else now + expires_in_hours * 3600,
        }
        self.links.put(link["token"], link)
        return ShareLink(**link)

    def shares(self, dashboard_id: str) -> list[ShareLink]:
        self._doc(dashboard_id)
        return [link for link in self.links.values_as(_link) if link.dashboard_id == dashboard_id]

    def revoke_share(self, dashboard_id: str, token: str) -> None:
        link = self.links.get_as(token, _link)
        if link is None or link.dashboard_id != dashboard_id:
            raise NotFound("Share link", resource="share")
        self.links.delete(token)

    def shared(self, token: str) -> SharedDashboard:
        link = self.links.get_as(token, _link)
        if link is None or self.docs.get_as(link.dashboard_id, self._value) is None:
            raise NotFound("Share link", resource="share")
        if link.expires_at is not None and self.world.now() >= link.expires_at:
            raise NotFound("Share link has expired", resource="expired_share")
        return SharedDashboard(self.get_dashboard(link.dashboard_id), link)

    def proxy(self, token: str, method: str, path: str) -> Mapping[str, Any]:
        shared = self.shared(token)
        if method != "GET":
            raise InvalidInput("Only GET is allowed through a share link", resource="method", field="method")
        parts = [p for p in path.split("/") if p]
        if len(parts) in (2, 3) and parts[0] == "devices" and parts[2:] in ([], ["current"]):
            device_id = parts[1]
            if device_id not in _referenced_devices(shared.dashboard):
                raise NotFound(f"Device {device_id} is not on this dashboard", resource="share")
            current = self.devices.current(device_id)
            return {
                "device_id": device_id,
                "status": current.device.status,
                "values": {m.name: m.value for m in current.metrics},
            }
        raise NotFound(f"Nothing shared at {path}", resource="share")

    # Internals --------------------------------------------------------------------------------
    def _doc(self, dashboard_id: str) -> dict[str, Any]:
        """The stored document; a damaged one (skipped and counted by the store) is not found."""
        doc = self.docs.get_as(dashboard_id, self._readable)
        if doc is None:
            raise not_found(dashboard_id)
        return doc

    @classmethod
    def _readable(cls, doc: dict[str, Any]) -> dict[str, Any]:
        cls._value(doc)
        return doc

    def _emit(self, dashboard_id: str, change: str) -> None:
        self.world.emit(EventKind.DASHBOARD_UPDATED, dashboard_id, dashboard_id=dashboard_id, change=change)

    @staticmethod
    def _value(doc: dict[str, Any]) -> Dashboard:
        """The dashboard a document holds; ``TypeError`` or ``KeyError`` if it is damaged."""
        board = Dashboard(
            id=doc["id"],
            name=doc["name"],
            layout=doc["layout"],
            components=tuple(doc["components"]),
            created_at=float(doc["created_at"]),
            updated_at=float(doc["updated_at"]),
            is_default=doc.get("is_default", False),
            sort_order=doc.get("sort_order"),
            description=doc.get("description"),
        )
        if not isinstance(board.layout, dict) or not all(isinstance(c, dict) for c in board.components):
            raise TypeError("layout and components must be objects")
        if board.sort_order is not None and not isinstance(board.sort_order, int | float):
            raise TypeError("sort_order must be a number")
        return board


def _link(doc: dict[str, Any]) -> ShareLink:
    return ShareLink(**doc)


def _referenced_devices(dashboard: Dashboard) -> set[str]:
    """Device ids named by the components' ``data_source`` (``device_id``, or ``device:<id>:<metric>``)."""
    found: set[str] = set()
    for comp in dashboard.components:
        sources = comp.get("data_source")
        for source in sources if isinstance(sources, list) else [sources]:
            if not isinstance(source, Mapping):
                continue
            if isinstance(source.get("device_id"), str):
                found.add(source["device_id"])
            for key in ("source", "source_id"):
                match = DEVICE_SOURCE.match(str(source.get(key, "")))
                if match:
                    found.add(match.group(1))
    return found
