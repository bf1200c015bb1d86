"""What each scenario action reaches, and so whether it may target a real member.

A transport or API fault acts at the twin's own layers in front of a server (the fault middleware,
the rate limiter), so it reaches a real member as it reaches a simulated one. Every other action
changes the simulated world, which a real member is not part of: a scenario is refused when such an
action targets a real member (:mod:`twin.scenario.targets`). Every action is in :data:`REACH`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from twin.scenario.actions import Action
from twin.settings import AUTOMATION


class Reach(StrEnum):
    LAYER = "layer"
    """A transport or API fault at the twin's layers in front of the ``server`` (or ``camera``) it
    names. Auth expiry is one: a simulated member ends its own sessions, a real member's passthrough
    answers the tokens its clients were seen using as expired."""
    CAMERA = "camera"
    """The simulated camera its ``camera`` names: its OS, storage, apps, services and clock."""
    AUTOMATION = "automation"
    """The simulated automation server's world: devices, simulated sensors, marketplace, chat model."""
    CLOCK = "clock"
    """The world clock every member shares."""
    TWIN = "twin"
    """A part of the twin's own that is no member (the embedded MQTT broker)."""


def _each(reach: Reach, *names: str) -> dict[str, Reach]:
    return dict.fromkeys(names, reach)


REACH: dict[str, Reach] = {
    **_each(
        Reach.LAYER,
        *("rate_limit_storm", "latency", "http_errors", "network_loss", "network_reset", "truncated_body"),
        *("drop_streams", "network_hang", "bandwidth", "token_expiry", "session_drop"),
    ),
    **_each(
        Reach.CAMERA,
        *("ntp_jump", "camera_restart", "ota_failure", "ota_power_loss", "os_upgrade_failure"),
        *("os_upgrade_rollback", "os_upgrade_power_loss", "partition_fill", "partition_free", "core_dump"),
        *("container_crash", "container_oom", "slow_image_load", "camera_service_stop"),
        *("camera_service_start", "event_bus_stop", "event_bus_start"),
    ),
    **_each(
        Reach.AUTOMATION,
        *("device_delete", "device_recreate", "device_offline", "device_online", "telemetry_gap"),
        *("telemetry_spike", "marketplace_unreachable", "model_slow_first_token", "model_hang"),
        *("model_errors", "model_pace"),
    ),
    **_each(Reach.CLOCK, "clock_speed"),
    **_each(Reach.TWIN, "mqtt_broker_outage"),
}
"""Every action by name: what it reaches."""

SIMULATED_ONLY = {
    Reach.CAMERA: "it changes the simulated camera (its OS, storage, apps, services or clock), "
    "which a real camera is not",
    Reach.AUTOMATION: "it changes the simulated automation server's world (devices, sensors, "
    "marketplace or chat model), which a real server is not",
    Reach.CLOCK: "it changes the world clock's speed, and a real member runs on wall time at speed 1",
}
"""Why an action cannot target a real member, by what it reaches (a fault at the twin's layers can)."""

LAYER_ACTIONS = tuple(name for name, reach in REACH.items() if reach is Reach.LAYER)


def member(action: Action, params: dict[str, Any]) -> str | None:
    """The member ``action`` with ``params`` acts on (a camera id or ``automation``), if it acts on
    one; a parameter left out counts with its default."""
    reach = REACH[action.name]
    if reach is Reach.AUTOMATION:
        return AUTOMATION
    fields = action.params.model_fields
    key = next((k for k in ("camera", "server") if k in fields), None)
    if reach in (Reach.LAYER, Reach.CAMERA) and key is not None:
        value = params.get(key, fields[key].default)
        return value if isinstance(value, str) else None
    return None
