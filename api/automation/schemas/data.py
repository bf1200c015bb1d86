"""Wire shapes of the data views."""

from __future__ import annotations

from typing import Any

from hardware.ports.extensions import Extension


def extension_data_sources(ext: Extension) -> list[dict[str, Any]]:
    """``GET /extensions/:id/data-sources``: one row per declared metric."""
    return [
        {
            "id": f"extension:{ext.id}:{m.name}",
            "extension_id": ext.id,
            "command": "",
            "field": m.name,
            "display_name": f"{ext.name}: {m.display_name}",
            "data_type": m.data_type.capitalize(),
            "unit": m.unit or None,
            "description": m.display_name,
            "aggregatable": True,
            "default_agg_func": "last",
        }
        for m in ext.metrics
    ]
