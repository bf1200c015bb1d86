"""Scenario actions: what a timeline entry can ``do`` to the world and its servers.

Each action is a function ``run(target, params)`` of what it acts on (a :class:`Target`: the world,
its clock, the servers' fault sets and rate limiters, the cameras, the MQTT broker's switch; the
twin's control object is one) that returns its undo (or ``None``), with a strict parameter model.
A timeline entry's ``for`` undoes it that many world seconds later; the control plane's
``POST /actions/{name}`` runs the same function. What each action reaches (:class:`Reach`) says
whether it may target a real member (:mod:`twin.scenario.reach`).

This module has the twin's own actions (faults at its layers, the world clock, the embedded broker);
each device kind brings the actions that act on its wing with its registration (:mod:`twin.kinds`,
e.g. :mod:`twin.camera.actions`), and :mod:`twin.scenario.catalog` has them all by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.errors import Unavailable
from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.camera.camera import Camera
    from twin.clock import SimClock
    from twin.world import World

Undo = Callable[[], object]


class Faults(Protocol):
    """The faults at the twin's layers in front of one server (:class:`api.faults.FaultSet`)."""

    errors: list[Any]
    loss: float
    reset_next: int
    truncate_next: int
    hang: bool
    bandwidth: float | None

    def add_latency(self, seconds: float, path_prefix: str = "/", jitter: float = 0.0) -> object: ...

    def remove_latency(self, seconds: float, path_prefix: str = "/", jitter: float = 0.0) -> None: ...

    def add_errors(self, status: int, path_prefix: str = "/", count: int | None = None) -> None: ...

    def drop_streams(self, code: int = 1012, at: float | None = None) -> int: ...


class Limiter(Protocol):
    """A server's rate limiter, as a storm sees it (:class:`api.automation.ratelimit.RateLimiter`)."""

    def storm(self, limit: int, seconds: float) -> None: ...

    def calm(self) -> None: ...


class BrokerSwitch(Protocol):
    def down(self) -> None: ...

    def up(self) -> None: ...


class Target(Protocol):
    """What the actions act on and look up; each lookup raises ``NotFound`` for an unknown name."""

    @property
    def world(self) -> World: ...

    @property
    def clock(self) -> SimClock: ...

    @property
    def broker(self) -> BrokerSwitch | None:
        """Takes the embedded MQTT broker down and up; ``None`` when the run has none."""
        ...

    def fault_set(self, server: str) -> Faults: ...

    def limiter(self, server: str) -> Limiter: ...

    def camera(self, camera_id: str) -> Camera: ...

    def end_real_sessions(self, server: str) -> bool:
        """Ends every session the twin has seen in front of ``server`` when it is a real member (its
        gate then answers those tokens as expired); False when ``server`` is simulated."""
        ...


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParams(Params):
    pass


class ServerParams(Params):
    server: str = Field(default="automation", description="'automation' or a camera id (cam-01...)")


class StormParams(ServerParams):
    limit: int = Field(default=5, ge=1, description="requests per minute per client during the storm")
    seconds: float = Field(default=3600.0, gt=0, description="storm length when the entry has no 'for'")


class LatencyParams(ServerParams):
    seconds: float = Field(ge=0)
    jitter: float = Field(default=0.0, ge=0)
    path_prefix: str = "/"


class ErrorParams(ServerParams):
    status: int = Field(default=503, ge=500, le=599)
    count: int | None = Field(default=None, ge=1, description="requests to fail (default: all until undone)")
    path_prefix: str = "/"


class LossParams(ServerParams):
    fraction: float = Field(gt=0, le=1, description="share of requests whose connection is reset")


class ResetParams(ServerParams):
    count: int = Field(default=1, ge=1)


class BandwidthParams(ServerParams):
    bytes_per_second: float = Field(gt=0)


class DeviceParams(Params):
    device: str = Field(min_length=1)


class SensorParams(DeviceParams):
    """A simulated sensor of the scenario's fleet (its signal is what the action changes)."""


class SpikeParams(SensorParams):
    metric: str = Field(min_length=1)
    delta: float = Field(description="added to the metric's value while the spike lasts")
    seconds: float | None = Field(
        default=None, gt=0, description="spike length when the entry has no 'for' (default: one sample)"
    )


class CameraParams(Params):
    camera: str = Field(default="cam-01", pattern=r"^cam-\d+$")


class SpeedParams(Params):
    speed: float = Field(gt=0)


class Reach(StrEnum):
    """What an action reaches, and so whether it may target a real member (:mod:`twin.scenario.reach`)."""

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
    WING = "wing"
    """The simulated wing of a registered kind that has no real member (:mod:`twin.kinds`)."""


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    params: type[Params]
    run: Callable[[Target, Any], Undo | None]
    doc: str
    reach: Reach


# The twin's own: faults at its layers, the world clock, the embedded broker -----------------------
def _storm(c: Target, p: StormParams) -> Undo:
    limiter = c.limiter(p.server)
    limiter.storm(p.limit, p.seconds)
    return limiter.calm


def _latency(c: Target, p: LatencyParams) -> Undo:
    faults = c.fault_set(p.server)
    faults.add_latency(p.seconds, p.path_prefix, p.jitter)
    return lambda: faults.remove_latency(p.seconds, p.path_prefix, p.jitter)


def _errors(c: Target, p: ErrorParams) -> Undo:
    faults = c.fault_set(p.server)
    faults.add_errors(p.status, p.path_prefix, p.count)
    return faults.errors.clear


def _loss(c: Target, p: LossParams) -> Undo:
    faults = c.fault_set(p.server)
    faults.loss = p.fraction

    def undo() -> None:
        faults.loss = 0.0

    return undo


def _reset(c: Target, p: ResetParams) -> None:
    c.fault_set(p.server).reset_next += p.count


def _truncate(c: Target, p: ResetParams) -> None:
    c.fault_set(p.server).truncate_next += p.count


def _drop_streams(c: Target, p: ServerParams) -> None:
    c.fault_set(p.server).drop_streams(at=c.world.env.now)


def _hang(c: Target, p: ServerParams) -> Undo:
    faults = c.fault_set(p.server)
    faults.hang = True

    def undo() -> None:
        faults.hang = False

    return undo


def _bandwidth(c: Target, p: BandwidthParams) -> Undo:
    faults = c.fault_set(p.server)
    faults.bandwidth = p.bytes_per_second

    def undo() -> None:
        faults.bandwidth = None

    return undo


def _token_expiry(c: Target, p: ServerParams) -> None:
    """Every session of the server ends: automation JWT sessions are revoked, a camera's dropped; in
    front of a real member, the sessions its clients were seen using are answered as expired."""
    if c.end_real_sessions(p.server):
        return
    if p.server == "automation":
        users = automation_of(c.world).users
        for key, _ in users.sessions.items():
            users.sessions.delete(key)
        users._verified.clear()
        return
    c.camera(p.server).drop_sessions("token_expiry")


def _clock_speed(c: Target, p: SpeedParams) -> Undo:
    before = c.clock.speed
    c.clock.set_speed(p.speed)
    return lambda: c.clock.set_speed(before)


def _broker_outage(c: Target, p: NoParams) -> Undo:
    """The embedded MQTT broker stops (every client is disconnected) until undone."""
    switch = c.broker
    if switch is None:
        raise Unavailable("no embedded MQTT broker to take down in this run", resource="mqtt")
    switch.down()
    return switch.up


CORE_ACTIONS = (
    Action(
        "rate_limit_storm", StormParams, _storm, "lower the rate limit; 429 with Retry-After", Reach.LAYER
    ),
    Action("latency", LatencyParams, _latency, "delay requests on the world clock (± jitter)", Reach.LAYER),
    Action(
        "http_errors", ErrorParams, _errors, "a 5xx burst: answer requests with a server error", Reach.LAYER
    ),
    Action("network_loss", LossParams, _loss, "reset a fraction of connections", Reach.LAYER),
    Action("network_reset", ResetParams, _reset, "reset the next N connections", Reach.LAYER),
    Action("truncated_body", ResetParams, _truncate, "the next N responses stop halfway", Reach.LAYER),
    Action(
        "drop_streams",
        ServerParams,
        _drop_streams,
        "end every open WebSocket (1012) and SSE stream",
        Reach.LAYER,
    ),
    Action(
        "network_hang", ServerParams, _hang, "requests get no answer until undone, then close", Reach.LAYER
    ),
    Action("bandwidth", BandwidthParams, _bandwidth, "cap response bytes per world second", Reach.LAYER),
    Action("token_expiry", ServerParams, _token_expiry, "end every session on a server", Reach.LAYER),
    Action("clock_speed", SpeedParams, _clock_speed, "change the world clock's speed factor", Reach.CLOCK),
    Action("mqtt_broker_outage", NoParams, _broker_outage, "the embedded MQTT broker is down", Reach.TWIN),
)
