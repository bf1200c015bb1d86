"""What a world is built from: the seed, the epoch and the fleet. Plain frozen data, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from typing import Any

from twin.past import DEFAULT_HISTORY_S

DEFAULT_EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class SignalKind(StrEnum):
    CONSTANT = "constant"
    SINE = "sine"
    DIURNAL = "diurnal"
    STEP = "step"
    RANDOM_WALK = "random_walk"


@dataclass(frozen=True, slots=True)
class SignalSpec:
    """A procedural signal: ``base(t) + drift * days + noise * N(0, 1)``, then clamped to [lo, hi].

    ``mean`` and ``amplitude`` vary per device by up to ``spread`` (a fraction), and the phase of
    periodic kinds is per device too, so a fleet does not move in lock-step.

    ``steps`` (kind ``step``): ``(at, level)`` pairs in sim seconds, strictly increasing ``at``; the
    level is ``mean`` before the first and each pair's level from its ``at`` on.
    ``step_s`` (kind ``random_walk``): the finest time scale of the wander, ``period`` the coarsest;
    ``None`` means ``period / 1024``.
    """

    kind: SignalKind = SignalKind.CONSTANT
    mean: float = 0.0
    amplitude: float = 0.0
    period: float = 86_400.0
    noise: float = 0.0
    drift_per_day: float = 0.0
    spread: float = 0.0
    lo: float | None = None
    hi: float | None = None
    decimals: int = 2
    steps: tuple[tuple[float, float], ...] = ()
    step_s: float | None = None


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    signal: SignalSpec
    unit: str = ""


@dataclass(frozen=True, slots=True)
class SensorGroup:
    device_type: str
    count: int
    metrics: tuple[MetricSpec, ...]
    period: float = 10.0
    """Sampling period in sim seconds."""
    id_prefix: str | None = None
    first: int = 0
    """How many of the group's devices come before these: a shard's slice of a group numbers its
    devices where the whole group has them (``first=500, count=500``: ``...-0501`` to ``...-1000``)."""

    def device_ids(self) -> list[str]:
        prefix = self.id_prefix or self.device_type
        return [f"{prefix}-{i + 1:04d}" for i in range(self.first, self.first + self.count)]


@dataclass(frozen=True, slots=True)
class VideoSpec:
    """Real video in place of the synthetic scene (:mod:`twin.camera.video.source`)."""

    source: str
    """A file path, an ``rtsp://``, ``http://`` or ``https://`` URL, or a V4L2 device ``/dev/videoN``."""
    loop: bool = True
    """A file starts over at its end (else its last frame stays)."""


@dataclass(frozen=True, slots=True)
class CameraSpec:
    count: int = 1
    profile: str = "default"
    """The media profile every camera of the group boots with (:data:`twin.camera.video.config.PROFILES`)."""
    scene: str = "street"
    """The kind of synthetic scene every camera of the group sees (:data:`twin.camera.video.scene.SCENES`)."""
    objects: int | None = None
    """Objects in each camera's scene; ``None``: the scene kind's own count."""
    ai_overlay: bool = False
    """Boot with the AI overlay on (the twin's default is off): detections drawn on the video."""
    apps: tuple[str, ...] = ()
    """App packages (``assets/apps/<name>``) installed and started on each camera at boot."""
    video: VideoSpec | None = None
    """Each camera's video source; ``None``: the synthetic scene."""
    rs485: str | None = None
    """Each camera's RS485 on a serial port, a pyserial URL (``/dev/ttyUSB0``, ``loop://``); ``None``:
    the simulated port."""
    host_stats: bool = False
    """Each camera's CPU, memory, disk and network figures are this host's (``/proc``)."""


@dataclass(frozen=True, slots=True)
class FleetSlice:
    """The part of the fleet one shard's world holds (:mod:`twin.cluster`); the rest of the fleet
    is held by other shards of the same world."""

    cameras: tuple[str, ...] = ()
    """The cameras it builds; each keeps its number in the whole fleet (and so its addresses)."""
    sensors: tuple[int, int] = (0, 0)
    """The simulated sensors it samples: ``[first, end)`` over the fleet's devices in the groups'
    order (the fleet publisher's share, when the automation server is held elsewhere)."""
    automation: bool = False
    """Whether it holds the automation server, which samples every simulated sensor."""

    @property
    def publisher_id(self) -> str:
        """Its fleet publisher's MQTT client id, one per shard of a world (a broker ends the older of
        two sessions with one id): from the sensors it publishes or, with none, its first camera."""
        lo, hi = self.sensors
        return f"twin-fleet-{lo + 1}-{hi}" if hi > lo else f"twin-fleet-{(*self.cameras, 'automation')[0]}"


@dataclass(frozen=True, slots=True)
class WorldConfig:
    seed: int = 0
    epoch: float = DEFAULT_EPOCH
    history: float = DEFAULT_HISTORY_S
    """Seconds of past before sim time 0 (:mod:`twin.past`): the site has been running that long."""
    sensors: tuple[SensorGroup, ...] = ()
    cameras: CameraSpec = field(default_factory=CameraSpec)
    camera_groups: tuple[CameraSpec, ...] = ()
    """More groups of cameras after ``cameras``, each with its own profile and scene; their
    cameras are numbered on after the first group's (``cam-01``…)."""
    videos: tuple[tuple[str, VideoSpec], ...] = ()
    """Video sources set by the operator (``twin run --video-source``) over the groups': by camera
    id, or ``*`` for every camera; a camera's own entry wins."""
    gateway_username: str = "admin"
    gateway_password: str = "password"
    entries: tuple[tuple[str, Any], ...] = ()
    """The fleet entries of registered kinds that have no field here: (kind name, its frozen spec)."""
    slice: FleetSlice | None = None
    """The part of the fleet this world holds; ``None``: all of it (one process)."""

    def entry(self, kind: str) -> Any:
        """The fleet entry of the registered kind ``kind``; ``None`` when the fleet has none."""
        return dict(self.entries).get(kind)

    def spec_by_camera(self) -> dict[str, CameraSpec]:
        """Each camera's group (its boot profile and scene), by camera id; made once per config."""
        return _spec_by_camera(self)

    def camera_specs(self) -> list[tuple[str, CameraSpec]]:
        """Every camera's id and the spec of its group, in order."""
        groups = (self.cameras, *self.camera_groups)
        specs = [spec for spec in groups for _ in range(spec.count)]
        out = [(f"cam-{i + 1:02d}", spec) for i, spec in enumerate(specs)]
        videos = dict(self.videos)
        if not videos:
            return out
        return [(cid, replace(spec, video=videos.get(cid, videos.get("*", spec.video)))) for cid, spec in out]

    def held_cameras(self) -> list[tuple[int, str]]:
        """The cameras this world builds: each one's number in the whole fleet (from 1) and its id."""
        ids = [camera_id for camera_id, _ in self.camera_specs()]
        held = None if self.slice is None else set(self.slice.cameras)
        return [(i + 1, camera_id) for i, camera_id in enumerate(ids) if held is None or camera_id in held]

    def sensor_groups(self) -> tuple[SensorGroup, ...]:
        """The sensor groups this world samples: every group, or this slice's share of them."""
        if self.slice is None or self.slice.automation:
            return self.sensors
        lo, hi = self.slice.sensors
        out, offset = [], 0
        for group in self.sensors:
            a, b = max(lo, offset), min(hi, offset + group.count)
            if a < b:
                out.append(replace(group, first=group.first + a - offset, count=b - a))
            offset += group.count
        return tuple(out)


@lru_cache(maxsize=32)
def _spec_by_camera(config: WorldConfig) -> dict[str, CameraSpec]:
    return dict(config.camera_specs())


def default_sensor_group(count: int) -> SensorGroup:
    """An environmental sensor: temperature, humidity and battery, sampled every 10 s."""
    return SensorGroup(
        device_type="env_sensor",
        count=count,
        period=10.0,
        metrics=(
            MetricSpec(
                "temperature",
                SignalSpec(SignalKind.DIURNAL, mean=21.0, amplitude=4.0, noise=0.2, spread=0.1),
                unit="°C",
            ),
            MetricSpec(
                "humidity",
                SignalSpec(
                    SignalKind.SINE,
                    mean=45.0,
                    amplitude=8.0,
                    period=7_200.0,
                    noise=0.5,
                    spread=0.1,
                    lo=0.0,
                    hi=100.0,
                ),
                unit="%",
            ),
            MetricSpec(
                "battery",
                SignalSpec(SignalKind.CONSTANT, mean=100.0, drift_per_day=-0.5, lo=0.0, hi=100.0, decimals=1),
                unit="%",
            ),
        ),
    )
