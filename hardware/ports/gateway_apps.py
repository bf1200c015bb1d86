"""What the edge gateway API needs for storage, the AI runtime, apps, containers, images, the app
event bus and monitoring: the area Protocols and their frozen value types.

Sizes are bytes, times are unix seconds on the device clock unless a field says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionUsage:
    """One mounted (or unmounted removable) partition as ``df`` would show it."""

    name: str
    """Symbolic name inside the twin: ``root``, ``data`` or a removable disk's name."""
    device: str
    mountpoint: str
    fstype: str
    total: int
    used: int
    is_system: bool = False
    is_removable: bool = False
    is_protected: bool = False
    label: str = ""

    @property
    def free(self) -> int:
        return max(0, self.total - self.used)

    @property
    def usage_percent(self) -> float:
        return round(100.0 * self.used / self.total, 2) if self.total else 0.0
