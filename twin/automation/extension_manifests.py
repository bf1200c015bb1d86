"""What the simulated extensions directory holds: the manifests of the built-in extensions, one
sample, and the manifest check. Plain data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DIRECTORY = "/var/lib/neomind/extensions"
MAX_SESSIONS = 4

ASSET_TYPES = {
    ".js": "application/javascript",
    ".css": "text/css",
    ".json": "application/json",
    ".svg": "image/svg+xml",
}

WEATHER: dict[str, Any] = {
    "id": "weather-forecast",
    "name": "Weather Forecast",
    "version": "1.2.0",
    "description": "Current weather and a short forecast for a city (simulated).",
    "author": "twin",
    "type": "tool",
    "builtin": True,
    "commands": [
        {
            "id": "get_current",
            "display_name": "Current weather",
            "description": "Temperature, humidity and wind now.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "output_fields": [{"name": "temperature_c"}, {"name": "humidity"}, {"name": "wind_kmh"}],
        },
        {
            "id": "get_forecast",
            "display_name": "Forecast",
            "description": "Hourly temperatures for the next hours.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "hours": {"type": "integer", "minimum": 1, "maximum": 48},
                },
                "required": ["city"],
            },
            "output_fields": [{"name": "hourly"}],
        },
    ],
    "metrics": [
        {"name": "temperature_c", "display_name": "Temperature", "data_type": "float", "unit": "°C"},
        {"name": "humidity", "display_name": "Humidity", "data_type": "float", "unit": "%"},
    ],
    "components": [{"id": "weather-card", "name": "Weather card", "entry": "assets/weather-card.js"}],
    "assets": {"weather-card.js": "export default function WeatherCard(){return null}\n"},
}
CAMERA: dict[str, Any] = {
    "id": "camera-stream",
    "name": "Camera Stream",
    "version": "0.4.1",
    "description": "Live JPEG frames of the simulated camera, pushed over a stream session.",
    "author": "twin",
    "type": "video",
    "builtin": True,
    "commands": [
        {
            "id": "snapshot",
            "display_name": "Snapshot",
            "description": "Size of one frame and the objects in view now.",
            "input_schema": {"type": "object", "properties": {}},
            "output_fields": [{"name": "width"}, {"name": "height"}, {"name": "objects"}],
        }
    ],
    "metrics": [{"name": "objects_in_view", "display_name": "Objects in view", "data_type": "integer"}],
    "components": [{"id": "live-view", "name": "Live view", "entry": "assets/live-view.js"}],
    "assets": {"live-view.js": "export default function LiveView(){return null}\n"},
    "stream": {
        "direction": "download",
        "mode": "push",
        "supported_data_types": ["image/jpeg"],
        "max_chunk_size": 1 << 20,
        "preferred_chunk_size": 64 << 10,
        "max_concurrent_sessions": MAX_SESSIONS,
    },
}
ENERGY = {
    "id": "energy-meter",
    "name": "Energy Meter",
    "version": "0.1.0",
    "description": "Reads an energy meter's totals (sample manifest of the extensions directory).",
    "author": "twin",
    "type": "device_adapter",
    "commands": [
        {
            "id": "read_totals",
            "display_name": "Read totals",
            "description": "Import and export totals in kWh.",
            "response": {"import_kwh": 1523.4, "export_kwh": 210.9},
        }
    ],
    "metrics": [{"name": "power_w", "display_name": "Power", "data_type": "float", "unit": "W"}],
}
BUILTINS = (WEATHER, CAMERA)
DIRECTORY_FILES = {
    "weather-forecast.json": WEATHER,
    "camera-stream.json": CAMERA,
    "energy-meter.json": ENERGY,
}
EXTENSION_TYPES = ("tool", "video", "device_adapter", "analytics", "integration")


def check_manifest(manifest: Any) -> str | None:
    """Why a manifest cannot be installed, or ``None``."""
    if not isinstance(manifest, Mapping):
        return "manifest is not an object"
    for key in ("id", "name", "version"):
        if not isinstance(manifest.get(key), str) or not manifest[key]:
            return f"missing {key}"
    if manifest.get("type", "tool") not in EXTENSION_TYPES:
        return f"unknown type {manifest.get('type')!r}"
    if not isinstance(manifest.get("commands", []), list):
        return "commands must be a list"
    return None
