"""The automation server's system area over the world: settings, capabilities, tools, statistics.

Everything is looked up through ``self.world`` on each call: reset rebuilds the world in place.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from hardware.ports.system import (
    AgentSettings,
    BusStats,
    Capability,
    DeviceSettings,
    HostStats,
    RetentionCleanup,
    RetentionPolicy,
    TimezoneOption,
    TimezoneSetting,
    Tool,
)
from twin.automation import catalog
from twin.automation.server import automation_of
from twin.automation.settings import TIMEZONE_OPTIONS, ServerSettings
from twin.rng import hash_uniform
from twin.sensors import sensors_of

if TYPE_CHECKING:
    from twin.world import World

# The simulated server host: a 4-core, 8 GiB edge box.
HOST_CPUS = 4
HOST_MEMORY = 8 * 1024**3
BASE_USED_MEMORY = 2 * 1024**3


class TwinSystem:
    def __init__(self, world: World) -> None:
        self.world = world

    def _settings(self) -> ServerSettings:
        return ServerSettings(self.world)

    # Self-description --------------------------------------------------------------------------
    def capabilities(self) -> list[Capability]:
        return catalog.capabilities()

    def capability(self, name: str) -> Capability:
        return catalog.capability(name)

    def tools(self) -> list[Tool]:
        return catalog.tools()

    def tool(self, name: str) -> Tool:
        return catalog.tool(name)

    # Settings ----------------------------------------------------------------------------------
    def timezone(self) -> TimezoneSetting:
        return self._settings().timezone()

    def set_timezone(self, timezone: str) -> TimezoneSetting:
        return self._settings().set_timezone(timezone)

    def timezones(self) -> list[TimezoneOption]:
        return list(TIMEZONE_OPTIONS)

    def retention(self) -> RetentionPolicy:
        return self._settings().retention()

    def update_retention(self, **changes: Any) -> RetentionPolicy:
        return self._settings().update_retention(**changes)

    def cleanup_retention(self) -> RetentionCleanup:
        """Delete stored samples older than the retention now (:mod:`twin.automation.retention`)."""
        return automation_of(self.world).retention.cleanup(self._settings().retention())

    def agent_settings(self) -> AgentSettings:
        return self._settings().agent()

    def update_agent_settings(self, **changes: Any) -> AgentSettings:
        return self._settings().update_agent(**changes)

    def device_settings(self) -> DeviceSettings:
        """The global device defaults; the devices area reads the default offline timeout here."""
        return self._settings().device()

    def update_device_settings(self, **changes: Any) -> DeviceSettings:
        return self._settings().update_device(**changes)

    # Statistics --------------------------------------------------------------------------------
    def event_bus(self) -> BusStats:
        bus = self.world.bus
        return BusStats(published=bus.published, dropped=bus.dropped)

    def host_stats(self) -> HostStats:
        """A deterministic load: a slow daily wave plus per-minute noise from the world's seed."""
        w = self.world
        t = w.env.now
        noise = float(hash_uniform(w.streams.key("automation-host"), int(t // 60)))
        cpu = round(12.0 + 6.0 * math.sin(2 * math.pi * t / 86_400) + 4.0 * noise, 1)
        used = BASE_USED_MEMORY + int(256 * 1024**2 * noise) + 64 * 1024 * len(sensors_of(w).by_device)
        free = HOST_MEMORY - used
        counts = (
            ("devices", len(sensors_of(w).by_device)),
            ("cameras", len(w.config.camera_specs())),  # the whole fleet's, whichever shard holds them
            ("users", len(w.store.collection("users"))),
            ("api_keys", len(w.store.collection("api_keys"))),
        )
        return HostStats(
            platform="linux",
            arch="x86_64",
            cpu_count=HOST_CPUS,
            total_memory=HOST_MEMORY,
            used_memory=used,
            free_memory=free,
            available_memory=free,
            cpu_usage=cpu,
            counts=counts,
        )
