"""The scenario actions that act on the simulated automation server's world: its devices and the
simulated sensors' signals, its marketplace and its chat model (:mod:`twin.scenario.actions`)."""

from __future__ import annotations

from pydantic import Field

from hardware.ports.errors import NotFound
from twin.automation.server import automation_of
from twin.scenario.actions import (
    Action,
    DeviceParams,
    NoParams,
    Params,
    Reach,
    SensorParams,
    SpikeParams,
    Target,
    Undo,
)
from twin.sensors import sensors_of


class GapParams(SensorParams):
    seconds: float = Field(default=60.0, gt=0, description="gap length when the entry has no 'for'")


class ModelSlowParams(Params):
    seconds: float = Field(gt=0, description="added before the chat model's first token, every round")


class ModelErrorParams(Params):
    status: int = Field(default=503, ge=500, le=599)
    count: int | None = Field(
        default=None, ge=1, description="model calls to fail (default: all until undone)"
    )


class ModelPaceParams(Params):
    tokens_per_second: float = Field(gt=0, le=1000, description="the chat model's pace in world time")


def _device_delete(c: Target, p: DeviceParams) -> None:
    automation_of(c.world).devices.delete(p.device)


def _device_recreate(c: Target, p: SensorParams) -> None:
    """A deleted simulated sensor comes back under the same id (its history stays archived)."""
    devices = automation_of(c.world).devices
    if p.device not in sensors_of(c.world).by_device:
        raise NotFound(f"no simulated sensor {p.device!r}", resource="device")
    overlay = dict(devices.overlays.get(p.device) or {})
    if overlay.pop("deleted_at", None) is not None:
        devices.overlays.put(p.device, overlay)


def _device_offline(c: Target, p: SensorParams) -> Undo:
    return automation_of(c.world).outages.take_offline(p.device)


def _device_online(c: Target, p: SensorParams) -> None:
    automation_of(c.world).outages.bring_online(p.device)


def _telemetry_gap(c: Target, p: GapParams) -> Undo:
    return automation_of(c.world).outages.telemetry_window(p.device, p.seconds)


def _telemetry_spike(c: Target, p: SpikeParams) -> Undo:
    return automation_of(c.world).outages.telemetry_window(p.device, p.seconds, p.metric, p.delta)


def _marketplace_unreachable(c: Target, p: NoParams) -> Undo:
    """Browsing answers an empty list with `network_error`, installs fail, until undone."""
    market = automation_of(c.world).market
    market.online = False
    return lambda: setattr(market, "online", True)


AUTOMATION_ACTIONS = (
    Action(
        "device_delete",
        DeviceParams,
        _device_delete,
        "delete a device (history stays archived)",
        Reach.AUTOMATION,
    ),
    Action(
        "device_recreate",
        SensorParams,
        _device_recreate,
        "bring a deleted simulated sensor back",
        Reach.AUTOMATION,
    ),
    Action(
        "device_offline",
        SensorParams,
        _device_offline,
        "a simulated sensor stops reporting",
        Reach.AUTOMATION,
    ),
    Action(
        "device_online",
        SensorParams,
        _device_online,
        "a sensor taken offline reports again",
        Reach.AUTOMATION,
    ),
    Action(
        "telemetry_gap", GapParams, _telemetry_gap, "a sensor reports nothing for a while", Reach.AUTOMATION
    ),
    Action(
        "telemetry_spike", SpikeParams, _telemetry_spike, "a sensor's metric jumps by delta", Reach.AUTOMATION
    ),
    Action(
        "marketplace_unreachable",
        NoParams,
        _marketplace_unreachable,
        "the marketplaces and the cloud device-type repository cannot be reached",
        Reach.AUTOMATION,
    ),
    Action(
        "model_slow_first_token",
        ModelSlowParams,
        lambda c, p: automation_of(c.world).chat.faults.slow(p.seconds),
        "the chat's model is slow to start answering",
        Reach.AUTOMATION,
    ),
    Action(
        "model_hang",
        NoParams,
        lambda c, p: automation_of(c.world).chat.faults.stall(),
        "the chat's model never answers: turns time out after 20 world minutes",
        Reach.AUTOMATION,
    ),
    Action(
        "model_errors",
        ModelErrorParams,
        lambda c, p: automation_of(c.world).chat.faults.fail(p.status, p.count),
        "the chat's model backend answers a server error",
        Reach.AUTOMATION,
    ),
    Action(
        "model_pace",
        ModelPaceParams,
        lambda c, p: automation_of(c.world).chat.faults.pace(p.tokens_per_second),
        "the chat's model streams at this many tokens per world second",
        Reach.AUTOMATION,
    ),
)
