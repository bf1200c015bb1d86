"""The scenario actions that act on a simulated camera: its clock, power, OTA and OS upgrades,
partitions, containers and services, the login sessions it drops (:mod:`twin.scenario.actions`), and
the weather its picture and its AI model see (:mod:`twin.camera.video.weather`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from hardware.ports.errors import NotFound
from twin.camera.video.weather import CLEAR, Weather, set_weather, weather_of
from twin.scenario.actions import Action, CameraParams, Reach, Target, Undo


class NtpJumpParams(CameraParams):
    seconds: float = Field(description="how far the camera's clock jumps (negative: backwards)")


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


class WeatherParams(CameraParams):
    intensity: float = Field(default=0.6, ge=0.0, le=1.0, description="how heavy, 0 (none) to 1")


def _weather(kind: str) -> Callable[[Target, WeatherParams], Undo]:
    """The action that sets ``kind`` weather on a camera; undone (``for:``), the weather before it
    comes back unless the weather changed again meanwhile."""

    def run(c: Target, p: WeatherParams) -> Undo:
        c.camera(p.camera)  # an unknown camera is refused
        before, mine = weather_of(c.world, p.camera), Weather(kind, p.intensity)
        set_weather(c.world, p.camera, mine)

        def undo() -> None:
            if weather_of(c.world, p.camera) == mine:  # a later change outlives this one's end
                set_weather(c.world, p.camera, before)

        return undo

    return run


def _weather_clear(c: Target, p: CameraParams) -> None:
    c.camera(p.camera)
    set_weather(c.world, p.camera, CLEAR)


def _ntp_jump(c: Target, p: NtpJumpParams) -> None:
    clock = c.camera(p.camera).clock
    clock._jump(clock.now() + p.seconds, "ntp_jump")


def _camera_restart(c: Target, p: CameraParams) -> None:
    c.camera(p.camera).power.restart()


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


CAMERA_ACTIONS = (
    Action("session_drop", CameraParams, _session_drop, "a camera drops every login session", Reach.LAYER),
    Action("ntp_jump", NtpJumpParams, _ntp_jump, "a camera's clock jumps by N seconds", Reach.CAMERA),
    Action(
        "camera_restart",
        CameraParams,
        _camera_restart,
        "power-cycle a camera (reboot, then boot)",
        Reach.CAMERA,
    ),
    Action("ota_failure", OtaFailParams, _ota_failure, "the next OTA run fails at a stage", Reach.CAMERA),
    Action("ota_power_loss", CameraParams, _ota_power_loss, "power is cut now, mid-install", Reach.CAMERA),
    Action(
        "os_upgrade_failure",
        OsUpgradeFailParams,
        _os_upgrade_failure,
        "the next OS upgrade fails",
        Reach.CAMERA,
    ),
    Action(
        "os_upgrade_rollback",
        CameraParams,
        _os_upgrade_rollback,
        "the OS upgrade fails verify: rollback",
        Reach.CAMERA,
    ),
    Action(
        "os_upgrade_power_loss",
        CameraParams,
        _os_upgrade_power_loss,
        "power is cut mid OS upgrade",
        Reach.CAMERA,
    ),
    Action("partition_fill", PartitionParams, _partition_fill, "stale logs fill a partition", Reach.CAMERA),
    Action(
        "partition_free", CameraParams, _partition_free, "stale logs and core dumps deleted", Reach.CAMERA
    ),
    Action("core_dump", CoreDumpParams, _core_dump, "a crashing process dumps core on root", Reach.CAMERA),
    Action("container_crash", ContainerParams, _container_crash, "an app's container dies", Reach.CAMERA),
    Action(
        "container_oom", ContainerParams, _container_oom, "an app's container is OOM-killed", Reach.CAMERA
    ),
    Action(
        "slow_image_load",
        UnpackParams,
        _slow_image_load,
        "images unpack slowly (start deadline)",
        Reach.CAMERA,
    ),
    Action(
        "camera_service_stop", CameraParams, _camera_service_stop, "the camera service stops", Reach.CAMERA
    ),
    Action(
        "camera_service_start", CameraParams, _camera_service_start, "the camera service starts", Reach.CAMERA
    ),
    Action("event_bus_stop", CameraParams, _event_bus_stop, "the device event bus stops", Reach.CAMERA),
    Action("event_bus_start", CameraParams, _event_bus_start, "the device event bus starts", Reach.CAMERA),
    Action("weather_rain", WeatherParams, _weather("rain"), "rain falls in a camera's view", Reach.CAMERA),
    Action(
        "weather_fog", WeatherParams, _weather("fog"), "fog hides far things in a camera's view", Reach.CAMERA
    ),
    Action(
        "weather_glare", WeatherParams, _weather("glare"), "the low sun glares into a camera", Reach.CAMERA
    ),
    Action("weather_clear", CameraParams, _weather_clear, "clear weather in a camera's view", Reach.CAMERA),
)
