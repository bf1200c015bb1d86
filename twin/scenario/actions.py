"""Scenario actions: what a timeline entry can ``do`` to the world and its servers.

Each action is a function ``run(target, params)`` of what it acts on (a :class:`Target`: the world,
its clock, the servers' fault sets and rate limiters, the cameras, the MQTT broker's switch; the
twin's control object is one) that returns its undo (or ``None``), with a strict parameter model.
A timeline entry's ``for`` undoes it that many world seconds later; the control plane's
``POST /actions/{name}`` runs the same function. What each action reaches, and so whether it may
target a real member, is in :mod:`twin.scenario.reach`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.errors import InvalidInput, NotFound, Unavailable
from twin.automation.server import automation_of
from twin.sensors import sensors_of

if TYPE_CHECKING:
    from api.automation.ratelimit import RateLimiter
    from api.faults import FaultSet
    from twin.camera.camera import Camera
    from twin.clock import SimClock
    from twin.world import World

Undo = Callable[[], object]


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

    def fault_set(self, server: str) -> FaultSet: ...

    def limiter(self, server: str) -> RateLimiter: ...

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


class GapParams(SensorParams):
    seconds: float = Field(default=60.0, gt=0, description="gap length when the entry has no 'for'")


class SpikeParams(SensorParams):
    metric: str = Field(min_length=1)
    delta: float = Field(description="added to the metric's value while the spike lasts")
    seconds: float | None = Field(
        default=None, gt=0, description="spike length when the entry has no 'for' (default: one sample)"
    )


class CameraParams(Params):
    camera: str = Field(default="cam-01", pattern=r"^cam-\d+$")


class NtpJumpParams(CameraParams):
    seconds: float = Field(description="how far the camera's clock jumps (negative: backwards)")


class SpeedParams(Params):
    speed: float = Field(gt=0)


class OtaFailParams(CameraParams):
    stage: Literal["upload", "prepare", "extract", "validate", "deploy"]
    error: str = ""


class OsUpgradeFailParams(CameraParams):
    stage: Literal["upload", "validate", "install", "verify"]
    error: str = ""


class PartitionParams(CameraParams):
    partition: Literal["root", "data"] = "root"
    leave_bytes: int = Field(default=0, ge=0, description="bytes left free")


class CoreDumpParams(CameraParams):
    bytes: int = Field(default=256 * 1024**2, ge=1)


class ContainerParams(CameraParams):
    app: str = Field(min_length=1, description="the installed app whose container dies")


class UnpackParams(CameraParams):
    bytes_per_second: int = Field(default=1_000_000, ge=1, description="image unpack speed")


class ModelSlowParams(Params):
    seconds: float = Field(gt=0, description="added before the chat model's first token, every round")


class ModelErrorParams(Params):
    status: int = Field(default=503, ge=500, le=599)
    count: int | None = Field(
        default=None, ge=1, description="model calls to fail (default: all until undone)"
    )


class ModelPaceParams(Params):
    tokens_per_second: float = Field(gt=0, le=1000, description="the chat model's pace in world time")


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    params: type[Params]
    run: Callable[[Target, Any], Undo | None]
    doc: str


# Implementations ---------------------------------------------------------------------------------
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
    return automation_of(c.world).devices.take_offline(p.device)


def _device_online(c: Target, p: SensorParams) -> None:
    automation_of(c.world).devices.bring_online(p.device)


def _telemetry_gap(c: Target, p: GapParams) -> Undo:
    return automation_of(c.world).devices.telemetry_window(p.device, p.seconds)


def _telemetry_spike(c: Target, p: SpikeParams) -> Undo:
    return automation_of(c.world).devices.telemetry_window(p.device, p.seconds, p.metric, p.delta)


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


def _ntp_jump(c: Target, p: NtpJumpParams) -> None:
    clock = c.camera(p.camera).clock
    clock._jump(clock.now() + p.seconds, "ntp_jump")


def _clock_speed(c: Target, p: SpeedParams) -> Undo:
    before = c.clock.speed
    c.clock.set_speed(p.speed)
    return lambda: c.clock.set_speed(before)


def _camera_restart(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).restart()


def _session_drop(c: Target, p: CameraParams) -> None:
    if not c.end_real_sessions(p.camera):
        c.camera(p.camera).drop_sessions("scenario")


def _ota_failure(c: Target, p: OtaFailParams) -> None:
    c.camera(p.camera).ota.fail_at(p.stage, p.error)


def _ota_power_loss(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).ota.power_loss()


def _os_upgrade_failure(c: Target, p: OsUpgradeFailParams) -> None:
    c.camera(p.camera).os_upgrade.fail_at(p.stage, p.error)


def _os_upgrade_rollback(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).os_upgrade.fail_at("verify", "verification failed: rolled back")


def _os_upgrade_power_loss(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).os_upgrade.power_loss()


FILL_OWNER = "logs:scenario"


def _partition_fill(c: Target, p: PartitionParams) -> Undo:
    storage = c.camera(p.camera).storage
    storage.fill(p.partition, FILL_OWNER, leave=p.leave_bytes)
    return lambda: storage.free(FILL_OWNER)


def _partition_free(c: Target, p: CameraParams) -> None:
    storage = c.camera(p.camera).storage
    storage.free(FILL_OWNER)
    storage.free_prefix("coredump:")


def _core_dump(c: Target, p: CoreDumpParams) -> None:
    c.camera(p.camera).containers.write_core_dump(p.bytes, "core.scenario")


def _container_of(c: Target, p: ContainerParams) -> str:
    app = c.camera(p.camera).apps.apps.get(p.app)
    if app is None:
        raise NotFound(f"no app {p.app!r} on {p.camera}", resource="app")
    return app.container_id


def _container_crash(c: Target, p: ContainerParams) -> None:
    c.camera(p.camera).containers.kill(_container_of(c, p), reason="crashed")


def _container_oom(c: Target, p: ContainerParams) -> None:
    c.camera(p.camera).containers.kill(_container_of(c, p), reason="OOMKilled")


def _slow_image_load(c: Target, p: UnpackParams) -> Undo:
    runtime = c.camera(p.camera).containers
    before = runtime.unpack_rate
    runtime.slow_storage(p.bytes_per_second)
    return lambda: runtime.slow_storage(before)


def _camera_service_stop(c: Target, p: CameraParams) -> Undo:
    ai = c.camera(p.camera).ai
    ai.stop_camera_service()
    return ai.start_camera_service


def _camera_service_start(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).ai.start_camera_service()


def _event_bus_stop(c: Target, p: CameraParams) -> Undo:
    bus = c.camera(p.camera).events
    bus.stop("scenario")
    return bus.start


def _event_bus_start(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).events.start()


def _broker_outage(c: Target, p: NoParams) -> Undo:
    """The embedded MQTT broker stops (every client is disconnected) until undone."""
    switch = c.broker
    if switch is None:
        raise Unavailable("no embedded MQTT broker to take down in this run", resource="mqtt")
    switch.down()
    return switch.up


def _marketplace_unreachable(c: Target, p: NoParams) -> Undo:
    """Browsing answers an empty list with `network_error`, installs fail, until undone."""
    market = automation_of(c.world).market
    market.online = False
    return lambda: setattr(market, "online", True)


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("rate_limit_storm", StormParams, _storm, "lower the rate limit; 429 with Retry-After"),
        Action("latency", LatencyParams, _latency, "delay requests on the world clock (± jitter)"),
        Action("http_errors", ErrorParams, _errors, "a 5xx burst: answer requests with a server error"),
        Action("network_loss", LossParams, _loss, "reset a fraction of connections"),
        Action("network_reset", ResetParams, _reset, "reset the next N connections"),
        Action("truncated_body", ResetParams, _truncate, "the next N responses stop halfway"),
        Action("drop_streams", ServerParams, _drop_streams, "end every open WebSocket (1012) and SSE stream"),
        Action("network_hang", ServerParams, _hang, "requests get no answer until undone, then close"),
        Action("bandwidth", BandwidthParams, _bandwidth, "cap response bytes per world second"),
        Action("device_delete", DeviceParams, _device_delete, "delete a device (history stays archived)"),
        Action("device_recreate", SensorParams, _device_recreate, "bring a deleted simulated sensor back"),
        Action("device_offline", SensorParams, _device_offline, "a simulated sensor stops reporting"),
        Action("device_online", SensorParams, _device_online, "a sensor taken offline reports again"),
        Action("telemetry_gap", GapParams, _telemetry_gap, "a sensor reports nothing for a while"),
        Action("telemetry_spike", SpikeParams, _telemetry_spike, "a sensor's metric jumps by delta"),
        Action("token_expiry", ServerParams, _token_expiry, "end every session on a server"),
        Action("session_drop", CameraParams, _session_drop, "a camera drops every login session"),
        Action("ntp_jump", NtpJumpParams, _ntp_jump, "a camera's clock jumps by N seconds"),
        Action("clock_speed", SpeedParams, _clock_speed, "change the world clock's speed factor"),
        Action("camera_restart", CameraParams, _camera_restart, "power-cycle a camera (reboot, then boot)"),
        Action("ota_failure", OtaFailParams, _ota_failure, "the next OTA run fails at a stage"),
        Action("ota_power_loss", CameraParams, _ota_power_loss, "power is cut now, mid-install"),
        Action("os_upgrade_failure", OsUpgradeFailParams, _os_upgrade_failure, "the next OS upgrade fails"),
        Action(
            "os_upgrade_rollback", CameraParams, _os_upgrade_rollback, "the OS upgrade fails verify: rollback"
        ),
        Action("os_upgrade_power_loss", CameraParams, _os_upgrade_power_loss, "power is cut mid OS upgrade"),
        Action("partition_fill", PartitionParams, _partition_fill, "stale logs fill a partition"),
        Action("partition_free", CameraParams, _partition_free, "stale logs and core dumps deleted"),
        Action("core_dump", CoreDumpParams, _core_dump, "a crashing process dumps core on root"),
        Action("container_crash", ContainerParams, _container_crash, "an app's container dies"),
        Action("container_oom", ContainerParams, _container_oom, "an app's container is OOM-killed"),
        Action("slow_image_load", UnpackParams, _slow_image_load, "images unpack slowly (start deadline)"),
        Action("camera_service_stop", CameraParams, _camera_service_stop, "the camera service stops"),
        Action("camera_service_start", CameraParams, _camera_service_start, "the camera service starts"),
        Action("event_bus_stop", CameraParams, _event_bus_stop, "the device event bus stops"),
        Action("event_bus_start", CameraParams, _event_bus_start, "the device event bus starts"),
        Action("mqtt_broker_outage", NoParams, _broker_outage, "the embedded MQTT broker is down"),
        Action(
            "marketplace_unreachable",
            NoParams,
            _marketplace_unreachable,
            "the marketplaces and the cloud device-type repository cannot be reached",
        ),
        Action(
            "model_slow_first_token",
            ModelSlowParams,
            lambda c, p: automation_of(c.world).chat.faults.slow(p.seconds),
            "the chat's model is slow to start answering",
        ),
        Action(
            "model_hang",
            NoParams,
            lambda c, p: automation_of(c.world).chat.faults.stall(),
            "the chat's model never answers: turns time out after 20 world minutes",
        ),
        Action(
            "model_errors",
            ModelErrorParams,
            lambda c, p: automation_of(c.world).chat.faults.fail(p.status, p.count),
            "the chat's model backend answers a server error",
        ),
        Action(
            "model_pace",
            ModelPaceParams,
            lambda c, p: automation_of(c.world).chat.faults.pace(p.tokens_per_second),
            "the chat's model streams at this many tokens per world second",
        ),
    )
}


@functools.cache
def describe() -> list[dict[str, Any]]:
    """Every action with its parameters' JSON Schema; built once (the schemas are costly and fixed)."""
    return [{"name": a.name, "doc": a.doc, "params": a.params.model_json_schema()} for a in ACTIONS.values()]


def check(name: str) -> Action:
    action = ACTIONS.get(name)
    if action is not None:
        return action
    raise InvalidInput(f"unknown action {name!r}; known: {', '.join(sorted(ACTIONS))}", field="do")
