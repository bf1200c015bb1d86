"""The marketplaces the automation server reaches over the internet, served from a catalogue shipped
with the twin (``market_catalogue.json``): the extension marketplace (index, per-extension metadata
and README, packages), the dashboard-component marketplace and the cloud repository of device
types. Nothing is fetched from the network.

``online`` false is the fault "marketplace unreachable" (a scenario action switches it): the
browsing routes then answer as the vendor's do when GitHub cannot be reached, installs fail.

An extension installed from the marketplace is a manifest dropped into the server's (virtual)
extensions directory and loaded from there, replacing an installed one of the same id (an upgrade);
an upgraded built-in keeps its simulated behaviour.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import DomainError, NotFound, Unavailable
from hardware.ports.market import CloudImport, ExtensionInstall
from twin.automation.device_types import from_doc

if TYPE_CHECKING:
    from twin.automation.device_types import DeviceTypeRegistry
    from twin.automation.extensions import ExtensionRegistry
    from twin.engine import Engine

UNREACHABLE = "Unable to connect to extension marketplace. Please check your internet connection."


@functools.cache
def catalogue() -> dict[str, Any]:
    """The shipped catalogue (read once; treat as read-only)."""
    return json.loads(resources.files("twin.automation").joinpath("market_catalogue.json").read_text())


def _public(item: Mapping[str, Any], *private: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in private}


class Marketplace:
    def __init__(
        self, world: Engine, *, extensions: ExtensionRegistry, device_types: DeviceTypeRegistry
    ) -> None:
        self.world = world
        self.extensions = extensions
        self.device_types = device_types
        self.online = True
        """False while the marketplaces cannot be reached (a fault)."""

    def reachable(self) -> bool:
        return self.online

    def _section(self, name: str) -> dict[str, Any]:
        if not self.online:
            raise Unavailable(UNREACHABLE, resource="marketplace")
        return catalogue()[name]

    # Extension marketplace ------------------------------------------------------------------------
    def _extension(self, extension_id: str) -> Mapping[str, Any]:
        item = next((e for e in self._section("extensions")["items"] if e["id"] == extension_id), None)
        if item is None:
            raise NotFound(f"Extension {extension_id} not found in marketplace", resource="market_extension")
        return item

    def extension_index(self) -> tuple[str, list[Mapping[str, Any]]]:
        section = self._section("extensions")
        items: list[Mapping[str, Any]] = [
            _public(e, "metadata", "readme", "manifest") for e in section["items"]
        ]
        return section["version"], items

    def extension_metadata(self, extension_id: str) -> Mapping[str, Any]:
        return self._extension(extension_id)["metadata"]

    def extension_readme(self, extension_id: str) -> str | None:
        try:
            return self._extension(extension_id)["readme"]
        except DomainError:
            return None

    def extension_updates(self) -> list[Mapping[str, Any]]:
        if not self.online:
            return []
        market = {e["id"]: e for e in catalogue()["extensions"]["items"]}
        return [
            {
                "id": ext.id,
                "name": ext.name,
                "current_version": ext.version,
                "latest_version": market[ext.id]["version"],
                "categories": market[ext.id]["categories"],
            }
            for ext in self.extensions.list_extensions()
            if ext.id in market and market[ext.id]["version"] != ext.version
        ]

    def install_extension(self, extension_id: str, version: str | None = None) -> ExtensionInstall:
        if not self.online:
            return ExtensionInstall(extension_id, False, False, False, error=f"Network error: {UNREACHABLE}")
        try:
            item = self._extension(extension_id)
        except NotFound:
            return ExtensionInstall(
                extension_id, False, False, False, error="Extension not found: 404 Not Found"
            )
        manifest = dict(item["manifest"])
        installed = {e.id for e in self.extensions.list_extensions()}
        if extension_id in installed:
            current = self.extensions.installed.get(extension_id)
            assert current is not None  # listed as installed just above
            if current["manifest"].get("builtin"):
                manifest["builtin"] = True
            self.extensions.uninstall(extension_id)
        file_name = f"{extension_id}.json"
        try:
            self.extensions.place_manifest(file_name, manifest)
            ext = self.extensions.register(file_name)
        except DomainError as err:
            return ExtensionInstall(
                extension_id, False, True, False, error=f"Failed to load extension: {err}"
            )
        return ExtensionInstall(extension_id, True, True, True, path=ext.file_path)

    # Cloud device types -----------------------------------------------------------------------------
    def cloud_device_types(self) -> tuple[str, list[Mapping[str, Any]]]:
        section = self._section("device_types")
        return section["version"], [_public(t, "template") for t in section["items"]]

    def import_device_types(self, device_types: Sequence[str]) -> CloudImport:
        imported, failures = 0, []
        for name in device_types:
            if not self.online:
                failures.append((name, f"Network error: {UNREACHABLE}"))
                continue
            item = next((t for t in catalogue()["device_types"]["items"] if t["device_type"] == name), None)
            if item is None:
                failures.append((name, "HTTP status: 404 Not Found"))
                continue
            try:
                self.device_types.create(from_doc(item["template"]))
            except DomainError as err:
                failures.append((name, f"Registration failed: {err.message}"))
                continue
            imported += 1
        return CloudImport(imported, 0, len(failures), tuple(failures))
