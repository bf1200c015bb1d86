"""Community dashboard components: installed from the component marketplace or uploaded (a ZIP
package, or a manifest and a bundle), kept durably (manifest and bundle per component), served to
the web app as JavaScript bundles. Built-in widget types are the web app's own; their ids are
reserved. Manifests are normalised as the vendor's ``ComponentManifest`` deserialises them.
"""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound, Unavailable
from hardware.ports.events import EventKind
from twin.automation.market import catalogue

if TYPE_CHECKING:
    from twin.automation.market import Marketplace
    from twin.engine import Engine

RESERVED_IDS = (
    "value-card", "led-indicator", "sparkline", "progress-bar", "line-chart", "area-chart", "bar-chart",
    "pie-chart", "toggle-switch", "image-display", "image-history", "web-display", "markdown-display",
    "map-display", "video-display", "custom-layer", "agent-monitor-widget", "ai-analyst",
)  # fmt: skip
SIZE_DEFAULTS = {"min_w": 1, "min_h": 1, "default_w": 2, "default_h": 2, "max_w": 12, "max_h": 12}
REQUIRED = ("id", "name", "description", "global_name")
OPTIONAL_NONE = ("author", "max_data_sources", "config_schema", "default_config", "variants", "export_name")
"""Left out of the manifest when absent (the vendor's ``skip_serializing_if``)."""


def check_id(component_id: str) -> None:
    if not component_id:
        raise InvalidInput("Component ID cannot be empty", field="component_id")
    if component_id in RESERVED_IDS:
        raise InvalidInput(
            f"Component ID '{component_id}' is reserved for built-in components", field="component_id"
        )
    if any(c in component_id for c in "./\\"):
        raise InvalidInput("Component ID contains invalid characters", field="component_id")


def normalise(raw: Any) -> dict[str, Any]:
    """A manifest with the vendor's defaults; ``InvalidInput`` as its JSON parser words it."""
    if not isinstance(raw, dict):
        raise InvalidInput("Invalid manifest JSON: invalid type: expected struct ComponentManifest")
    for key in REQUIRED:
        if key not in raw:
            raise InvalidInput(f"Invalid manifest JSON: missing field `{key}`")
    if not isinstance(raw["id"], str) or not isinstance(raw["global_name"], str):
        raise InvalidInput("Invalid manifest JSON: invalid type: expected a string")
    manifest = {
        "id": raw["id"],
        "name": raw["name"],
        "description": raw["description"],
        "icon": raw.get("icon", "Box"),
        "category": raw.get("category", "custom"),
        "version": raw.get("version", "1.0.0"),
        "size_constraints": {**SIZE_DEFAULTS, **(raw.get("size_constraints") or {})},
        "has_data_source": bool(raw.get("has_data_source", False)),
        "has_display_config": bool(raw.get("has_display_config", False)),
        "has_actions": bool(raw.get("has_actions", False)),
        "has_device_binding": bool(raw.get("has_device_binding", False)),
        "global_name": raw["global_name"],
        "installed_at": 0,
    }
    manifest.update({k: raw[k] for k in OPTIONAL_NONE if raw.get(k) is not None})
    if raw.get("device_type_filter"):
        manifest["device_type_filter"] = list(raw["device_type_filter"])
    return manifest


def unzip(package: bytes) -> tuple[str, bytes]:
    """``manifest.json`` and ``bundle.js`` of a ZIP package, at any depth."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(package))
        files = {info.filename.rsplit("/", 1)[-1]: info for info in archive.infolist()}
        manifest = archive.read(files["manifest.json"]).decode() if "manifest.json" in files else None
        bundle = archive.read(files["bundle.js"]) if "bundle.js" in files else None
    except (zipfile.BadZipFile, ValueError, KeyError, UnicodeDecodeError) as err:
        raise InvalidInput(f"Invalid ZIP file: {err}") from err
    if manifest is None:
        raise InvalidInput("ZIP must contain manifest.json")
    if bundle is None:
        raise InvalidInput("ZIP must contain bundle.js")
    return manifest, bundle


class ComponentStore:
    def __init__(self, world: Engine, *, market: Marketplace) -> None:
        self.world = world
        self.market = market
        self.docs = world.store.collection("community_components")

    def _install(self, manifest: dict[str, Any], bundle: bytes, source: str) -> dict[str, Any]:
        manifest = {**manifest, "installed_at": int(self.world.now()), "source": source}
        self.docs.put(manifest["id"], {"manifest": manifest, "bundle": base64.b64encode(bundle).decode()})
        self._lifecycle(manifest["id"], "installed")
        return manifest

    def _lifecycle(self, component_id: str, state: str) -> None:
        data = {"component_id": component_id, "state": state}
        self.world.emit(EventKind.CUSTOM, "frontend-components", custom_type="FrontendComponentLifecycle",
                        data=data, timestamp=int(self.world.now()))  # fmt: skip

    # The marketplace ------------------------------------------------------------------------------
    def market_index(self) -> tuple[str, list[Mapping[str, Any]]]:
        if not self.market.online:
            raise Unavailable(
                "Unable to connect to component marketplace. Please check your internet connection.",
                resource="marketplace",
            )
        section = catalogue()["components"]
        return section["version"], [{k: v for k, v in c.items() if k not in ("manifest", "bundle")}
                                    for c in section["items"]]  # fmt: skip

    def install_from_market(self, component_id: str) -> Mapping[str, Any]:
        component_id = component_id.strip()
        check_id(component_id)
        if not self.market.online:
            raise Unavailable(
                "Network error: Unable to connect to component marketplace.", resource="marketplace"
            )
        entry = next((c for c in catalogue()["components"]["items"] if c["id"] == component_id), None)
        if entry is None:
            raise NotFound(f"Component '{component_id}' not found in marketplace", resource="component")
        return self._install(normalise(entry["manifest"]), entry["bundle"].encode(), "marketplace")

    def updates(self) -> tuple[list[Mapping[str, Any]], bool]:
        installed = [d["manifest"] for d in self.docs.values()]
        if not installed:
            return [], True
        if not self.market.online:
            return [], False
        latest = {c["id"]: c["version"] for c in catalogue()["components"]["items"]}
        rows: list[Mapping[str, Any]] = [
            {
                "id": m["id"],
                "name": m["name"],
                "current_version": m["version"],
                "latest_version": latest[m["id"]],
            }
            for m in installed
            if m["id"] in latest and latest[m["id"]] != m["version"]
        ]
        return rows, True

    # Manual upload --------------------------------------------------------------------------------
    def upload(
        self, manifest_text: str | None, bundle: bytes | None, package: bytes | None
    ) -> Mapping[str, Any]:
        if package is not None:
            manifest_text, bundle = unzip(package)
        if manifest_text is None:
            raise InvalidInput("Missing 'manifest' or 'package' field", field="manifest")
        if bundle is None:
            raise InvalidInput("Missing 'bundle' or 'package' field", field="bundle")
        try:
            raw = json.loads(manifest_text)
        except ValueError as err:
            raise InvalidInput(f"Invalid manifest JSON: {err}") from err
        manifest = normalise(raw)
        check_id(manifest["id"])
        return self._install(manifest, bundle, "local")

    # Installed ------------------------------------------------------------------------------------
    def installed(self) -> list[Mapping[str, Any]]:
        return [d["manifest"] for d in self.docs.values()]

    def builtin_types(self) -> list[Mapping[str, Any]]:
        return list(catalogue()["builtin_widget_types"])

    def get(self, component_id: str) -> Mapping[str, Any]:
        builtin = next((t for t in catalogue()["builtin_widget_types"] if t["type_id"] == component_id), None)
        if builtin is not None or component_id in RESERVED_IDS:
            name = builtin["display_name"] if builtin else component_id.replace("-", " ").title()
            return {
                "id": component_id, "name": name, "description": "", "icon": "box",
                "category": builtin["category"] if builtin else "display", "version": "1.0.0",
                "author": "NeoMind", "size_constraints": dict(SIZE_DEFAULTS), "has_data_source": True,
                "has_display_config": True, "has_actions": False, "has_device_binding": False,
                "global_name": component_id.replace("-", "_"), "installed_at": 0,
            }  # fmt: skip
        doc = self.docs.get(component_id)
        if doc is None:
            raise NotFound(f"Component '{component_id}' not found", resource="component")
        return doc["manifest"]

    def bundle(self, component_id: str) -> bytes:
        check_id(component_id)
        doc = self.docs.get(component_id)
        if doc is None:
            raise NotFound(f"Bundle not found for component '{component_id}'", resource="component")
        return base64.b64decode(doc["bundle"])

    def remove(self, component_id: str) -> None:
        check_id(component_id)
        if not self.docs.delete(component_id):
            raise NotFound(f"Component '{component_id}' is not installed", resource="component")
        self._lifecycle(component_id, "uninstalled")
