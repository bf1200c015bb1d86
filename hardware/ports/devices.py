"""The automation backend's device area: devices, device types, drafts, commands and telemetry."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class AutomationDevices(Protocol):
    """Devices of the automation server (simulated sensors, and devices clients create)."""
