"""Wire shapes of the marketplaces (extensions, dashboard components, cloud device types)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.market import CloudImport, ExtensionInstall

NETWORK_ERROR = "network_error"
UNREACHABLE = {
    "extensions": "Unable to connect to extension marketplace. Please check your internet connection.",
    "components": "Unable to connect to component marketplace. Please check your internet connection.",
    "device_types": "Unable to connect to cloud repository. Please check your internet connection.",
}


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ExtensionInstallBody(_Body):
    id: str
    version: str | None = None


class CloudImportBody(_Body):
    device_types: list[str]
    branch: str | None = None


def listing(key: str, version: str, items: list[Any], version_key: str = "market_version") -> dict[str, Any]:
    return {key: items, "total": len(items), version_key: version}


def unreachable(key: str, area: str) -> dict[str, Any]:
    """What a browsing route answers (200) when the marketplace cannot be reached."""
    return {key: [], "total": 0, "error": NETWORK_ERROR, "message": UNREACHABLE[area]}


def extension_install(r: ExtensionInstall) -> dict[str, Any]:
    return {
        "success": r.success,
        "extension_id": r.extension_id,
        "downloaded": r.downloaded,
        "installed": r.installed,
        "path": r.path,
        "error": r.error,
    }


def cloud_import(r: CloudImport) -> dict[str, Any]:
    failures = [{"device_type": t, "reason": why} for t, why in r.failures]
    return {"imported": r.imported, "skipped": r.skipped, "failed": r.failed, "failures": failures}
