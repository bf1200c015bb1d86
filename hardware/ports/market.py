"""The catalogues the automation server browses on the network (the extension marketplace, the
dashboard-component marketplace, the cloud repository of device types) and the community
dashboard components installed from them or uploaded.

Shapes are the vendor's JSON objects (mappings), as its handlers pass the remote index through.
An unreachable marketplace is not an error on the browsing routes (the vendor answers an empty list
with ``error: "network_error"``); it is on a component install (``Unavailable``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class ExtensionInstall:
    """The outcome of ``POST /extensions/market/install``: failures are outcomes, not errors."""

    extension_id: str
    success: bool
    downloaded: bool
    installed: bool
    path: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CloudImport:
    imported: int
    skipped: int
    failed: int
    failures: tuple[tuple[str, str], ...] = ()
    """(device type, reason)."""


@runtime_checkable
class Market(Protocol):
    def reachable(self) -> bool:
        """Whether the marketplaces and the cloud repository can be reached now."""

    # Extension marketplace ------------------------------------------------------------------------
    def extension_index(self) -> tuple[str, list[Mapping[str, Any]]]:
        """(market version, index entries); ``Unavailable`` when unreachable."""

    def extension_metadata(self, extension_id: str) -> Mapping[str, Any]:
        """``NotFound`` for an id the marketplace lacks; ``Unavailable`` when unreachable."""

    def extension_readme(self, extension_id: str) -> str | None:
        """``None`` when there is none or it cannot be fetched (never an error)."""

    def extension_updates(self) -> list[Mapping[str, Any]]:
        """Installed extensions with another version in the marketplace (none when unreachable)."""

    def install_extension(self, extension_id: str, version: str | None = None) -> ExtensionInstall: ...

    # Cloud device types ---------------------------------------------------------------------------
    def cloud_device_types(self) -> tuple[str, list[Mapping[str, Any]]]:
        """(index version, entries); ``Unavailable`` when unreachable."""

    def import_device_types(self, device_types: Sequence[str]) -> CloudImport:
        """Registers each named type (an existing one is updated); failures are counted."""


@runtime_checkable
class Components(Protocol):
    """Community dashboard components: the marketplace's index and the installed ones."""

    def market_index(self) -> tuple[str, list[Mapping[str, Any]]]:
        """(market version, entries); ``Unavailable`` when unreachable."""

    def install_from_market(self, component_id: str) -> Mapping[str, Any]:
        """The installed manifest. ``InvalidInput`` for an empty or reserved id, ``NotFound`` when the
        marketplace lacks it, ``Unavailable`` when the marketplace cannot be reached."""

    def upload(
        self, manifest_text: str | None, bundle: bytes | None, package: bytes | None
    ) -> Mapping[str, Any]:
        """A manual install: a ZIP ``package`` (``manifest.json`` + ``bundle.js``) or both parts.
        ``InvalidInput`` with the vendor's message when something is missing or malformed."""

    def installed(self) -> list[Mapping[str, Any]]: ...

    def builtin_types(self) -> list[Mapping[str, Any]]:
        """The built-in widget types (``type_id``, ``display_name``, ``category``)."""

    def get(self, component_id: str) -> Mapping[str, Any]:
        """A built-in component's manifest or an installed one's; ``NotFound`` otherwise."""

    def bundle(self, component_id: str) -> bytes:
        """``InvalidInput`` for a reserved or malformed id, ``NotFound`` when not installed."""

    def remove(self, component_id: str) -> None: ...

    def updates(self) -> tuple[list[Mapping[str, Any]], bool]:
        """(installed components with another version in the marketplace, whether it was reached)."""
