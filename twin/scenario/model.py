"""The scenario schema. Unknown keys and bad values are errors that name file, line and key path.

A scenario is the world (seed, clock, fleet), a timeline of actions on the world clock (``at`` a sim
time or ``after`` a world event; ``for`` undoes the action that much later), the expectations the
client under test is judged by, what its exit status should be, and when the run stops.

A file is checked in one pass and every problem is reported, each as ``file:line: key.path: message``: the
actions and their parameters, the schema, and the names the file refers to (cameras, servers, simulated
sensors and their metrics, world event kinds; see :mod:`twin.scenario.targets`)."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from twin.camera.scenario import MAX_CAMERAS, Cameras, one_group_or_many
from twin.fleet import (
    DEFAULT_EPOCH,
    CameraSpec,
    MetricSpec,
    SensorGroup,
    SignalKind,
    SignalSpec,
    WorldConfig,
)
from twin.past import DEFAULT_HISTORY_S, HISTORY_HELP, Span
from twin.scenario.catalog import ACTIONS
from twin.scenario.checks import message, precheck
from twin.scenario.client import ClientSpec
from twin.scenario.expectations import Expectation
from twin.scenario.files import FILES, FileRoots
from twin.scenario.real import ENVIRON, real_members, without_secrets
from twin.scenario.replay import ReplayServerKeys, numbered, replays
from twin.scenario.source import Document, ScenarioError, read
from twin.scenario.targets import Names, target_problems
from twin.settings import AUTOMATION, RealMember
from twin.wings import KINDS

ACTIONS_CHECKED = "actions_checked"
"""Validation context key: the timeline's actions and parameters were checked already (by
:func:`parse_scenario`, at their own lines), so the step model does not report them again."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


BATTERY_DRAIN_PER_DAY = -1.0
"""Percent a day a ``battery_drain`` signal loses when the file gives no ``drift_per_day``."""


class Signal(_Strict):
    """A metric's signal. ``noise``, ``drift`` and ``battery_drain`` are shorthands over a constant
    mean: noise only, a linear drift, and a level falling from ``mean`` (default 100) by
    ``drift_per_day`` (default -1 %/day), held in [0, 100].

    ``step`` holds ``mean`` until the first of ``steps`` (``[at_sim_seconds, value]`` pairs, times
    strictly increasing) and each step's value from its time on. ``random_walk`` wanders around
    ``mean`` by about ``amplitude`` (its standard deviation) on time scales from ``step_s`` up to
    ``period``, and no further: a bounded, Brownian-like path."""

    kind: SignalKind | Literal["noise", "drift", "battery_drain"] = SignalKind.CONSTANT
    mean: float = 0.0
    amplitude: float = 0.0
    period: float = Field(default=86_400.0, gt=0)
    noise: float = Field(default=0.0, ge=0)
    drift_per_day: float = 0.0
    spread: float = Field(default=0.0, ge=0, le=1)
    min: float | None = None
    max: float | None = None
    decimals: int = Field(default=2, ge=0, le=9)
    unit: str = ""
    steps: (
        list[
            tuple[
                Annotated[float, Field(ge=0, allow_inf_nan=False)],
                Annotated[float, Field(allow_inf_nan=False)],
            ]
        ]
        | None
    ) = Field(
        default=None,
        description="kind step: [at_sim_seconds, value] pairs, times strictly increasing; "
        "the level is 'mean' before the first",
    )
    step_s: float | None = Field(
        default=None,
        gt=0,
        description="kind random_walk: the finest time scale of the wander in sim seconds "
        "(default period / 1024; at most 12 octaves up to period)",
    )

    @model_validator(mode="after")
    def _check_kind_fields(self) -> Signal:
        if self.kind is SignalKind.STEP:
            if not self.steps:
                raise ValueError("kind 'step' needs 'steps': a list of [at_sim_seconds, value], at least one")
            for (before, _), (at, _) in zip(self.steps, self.steps[1:], strict=False):
                if at <= before:
                    raise ValueError(f"'steps' times must strictly increase: {at:g} comes after {before:g}")
        elif self.steps is not None:
            raise ValueError(f"'steps' applies to kind 'step' only, not {str(self.kind)!r}")
        if self.step_s is not None and self.kind is not SignalKind.RANDOM_WALK:
            raise ValueError(f"'step_s' applies to kind 'random_walk' only, not {str(self.kind)!r}")
        return self

    def spec(self) -> SignalSpec:
        kind, mean, drift, lo, hi = self.kind, self.mean, self.drift_per_day, self.min, self.max
        if kind == "battery_drain":
            mean = mean or 100.0
            drift = drift or BATTERY_DRAIN_PER_DAY
            lo = 0.0 if lo is None else lo
            hi = 100.0 if hi is None else hi
        if not isinstance(kind, SignalKind):
            kind = SignalKind.CONSTANT
        return SignalSpec(
            kind,
            mean,
            self.amplitude,
            self.period,
            self.noise,
            drift,
            self.spread,
            lo,
            hi,
            self.decimals,
            steps=tuple(self.steps or ()),
            step_s=self.step_s,
        )


class Sensors(_Strict):
    type: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    count: int = Field(ge=0, le=100_000)
    period: float = Field(default=10.0, gt=0, description="sampling period in sim seconds")
    id_prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_\-]+$")
    metrics: dict[str, Signal] = Field(min_length=1)


class Fleet(_Strict):
    sensors: list[Sensors] = Field(default_factory=list)
    cameras: Annotated[list[Cameras], BeforeValidator(lambda v: [v] if isinstance(v, dict) else v)] = Field(
        default_factory=lambda: [Cameras()],
        min_length=1,
        description="one group of cameras, or a list of groups (numbered on: cam-01, cam-02, ...)",
        json_schema_extra=one_group_or_many,
    )

    @field_validator("cameras")
    @classmethod
    def _cameras_fit(cls, groups: list[Cameras]) -> list[Cameras]:
        if sum(g.count for g in groups) > MAX_CAMERAS:
            raise ValueError(f"at most {MAX_CAMERAS} cameras in all")
        return groups

    def sensor_groups(self) -> tuple[SensorGroup, ...]:
        return tuple(
            SensorGroup(
                device_type=s.type,
                count=s.count,
                period=s.period,
                id_prefix=s.id_prefix,
                metrics=tuple(MetricSpec(name, sig.spec(), unit=sig.unit) for name, sig in s.metrics.items()),
            )
            for s in self.sensors
        )

    def camera_specs(self) -> tuple[CameraSpec, ...]:
        return tuple(
            CameraSpec(
                **g.model_dump(exclude={"video", "replay", *Cameras.REAL_KEYS}),
                video=g.video.spec() if g.video else None,
            )
            for g in self.cameras
        )

    def real_cameras(self) -> dict[str, Cameras]:
        """The real cameras by id (each a group of one), numbered with the simulated ones."""
        return {ids[0]: g for g, ids in numbered(self.cameras, self.names().cameras) if g.real is not None}

    def entries(self) -> tuple[tuple[str, Any], ...]:
        """The registered kinds' entries this fleet has, as the world config carries them."""
        return tuple(
            (kind.name, kind.fleet.spec(value))
            for kind in KINDS
            if kind.fleet is not None and (value := getattr(self, kind.fleet.key, None)) is not None
        )

    def names(self) -> Names:
        """The cameras and simulated sensors (with their metrics) this fleet has."""
        first, *more = self.camera_specs()
        cameras = [
            camera_id for camera_id, _ in WorldConfig(cameras=first, camera_groups=tuple(more)).camera_specs()
        ]
        sensors = {}
        for group, spec in zip(self.sensor_groups(), self.sensors, strict=True):
            metrics = frozenset(spec.metrics)
            sensors.update(dict.fromkeys(group.device_ids(), metrics))
        return Names(cameras=tuple(cameras), sensors=sensors)


class ClockSpec(_Strict):
    mode: Literal["realtime", "step"] = "realtime"
    speed: float = Field(default=1.0, gt=0)
    epoch: float | Literal["now"] = Field(
        default=DEFAULT_EPOCH,
        description="unix time of sim time 0; 'now' reads the wall clock once at start "
        "(traces then differ between runs)",
    )


class After(_Strict):
    event: str = Field(min_length=1, description="a world event kind, e.g. camera.power_up")
    source: str | None = Field(default=None, description="only events from this source")
    delay: float = Field(default=0.0, ge=0, description="world seconds after the event")


class Step(_Strict):
    """One timeline entry: ``do`` an action ``at`` a sim time or ``after`` an event."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    at: float | None = Field(default=None, ge=0, description="sim seconds since the start")
    after: After | None = None
    do: Annotated[str, Field(json_schema_extra=lambda schema: schema.update(enum=sorted(ACTIONS)))]
    params: dict[str, Any] = Field(default_factory=dict)
    for_: float | None = Field(default=None, alias="for", gt=0, description="undo after this many s")

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> Step:
        if (self.at is None) == (self.after is None):
            raise ValueError("give exactly one of 'at' and 'after'")
        if not (info.context or {}).get(ACTIONS_CHECKED):
            action = ACTIONS.check(self.do)
            action.params.model_validate(self.params)
        return self


class Stop(_Strict):
    at: float = Field(default=3600.0, gt=0, description="sim seconds: the run ends here at the latest")
    on_client_exit: bool = Field(default=True, description="end the run when the client exits")
    wall_timeout: float = Field(default=600.0, gt=0, description="wall seconds before the run is abandoned")


class RealAutomation(ReplayServerKeys):
    """A real automation server in place of the simulated one, or one replayed from a fixture."""


class Servers(_Strict):
    mqtt: bool = Field(
        default=True,
        description="run the embedded MQTT broker and bridge (each sample is published there)",
    )
    automation: RealAutomation | None = Field(
        default=None,
        description="a real automation server in place of the simulated one: {real: URL, ...}; or the "
        "simulated one answering from a fixture `twin record` wrote: {replay: FILE}",
    )


class Watch(_Strict):
    device: str
    metric: str


class Scenario(_Strict):
    """A scenario file. A run of it with a client under test passes when every expectation was exercised and
    held (an optional one may go unexercised) and the client ended as ``client.expect_exit`` says; it fails
    when an expectation failed, the client ended otherwise or a timeline step failed; it is inconclusive when
    nothing failed but a required expectation was not exercised (as in a run without a client)."""

    name: str
    description: str = ""
    seed: int = Field(default=0, ge=0)
    history: Span = Field(default=DEFAULT_HISTORY_S, description=HISTORY_HELP)
    clock: ClockSpec = Field(default_factory=ClockSpec)
    fleet: Fleet = Field(default_factory=Fleet)
    timeline: list[Step] = Field(default_factory=list)
    expectations: list[Expectation] = Field(
        default_factory=list,
        description="judged on the run: each is passed, failed, or inconclusive when nothing in the run "
        "exercised it (which fails the run unless it is optional)",
    )
    client: ClientSpec = Field(default_factory=ClientSpec)
    stop: Stop = Field(default_factory=Stop)
    servers: Servers = Field(default_factory=Servers)
    watch: list[Watch] = Field(default_factory=list, description="metrics plotted in the HTML report")

    @field_validator("expectations")
    @classmethod
    def _one_required(cls, expectations: list[Any]) -> list[Any]:
        if expectations and all(e.optional for e in expectations):
            raise ValueError(
                "every expectation is optional, so a run could pass with nothing judged: "
                "make at least one of them required"
            )
        return expectations

    def real_names(self) -> tuple[str, ...]:
        """The members that are real: ``automation`` if it is, then camera ids."""
        return _real_names(self.fleet, self.servers)

    def real_members(self, environ: Mapping[str, str]) -> dict[str, RealMember]:
        """The real members by name (``automation``, camera ids), their secrets read from ``environ``."""
        return real_members(self.servers.automation, self.fleet.real_cameras(), environ)

    def replays(self) -> dict[str, Path]:
        """The members served from a fixture (``automation``, camera ids) and their files."""
        return replays(self.servers.automation, numbered(self.fleet.cameras, self.fleet.names().cameras))

    def world_config(self, wall_now: float | None = None) -> WorldConfig:
        """The world this scenario describes; ``wall_now`` resolves ``epoch: now``."""
        first, *more = self.fleet.camera_specs()
        return WorldConfig(
            seed=self.seed,
            history=self.history,
            epoch=float(int(wall_now or 0)) if self.clock.epoch == "now" else self.clock.epoch,
            sensors=self.fleet.sensor_groups(),
            cameras=first,
            camera_groups=tuple(more),
            entries=self.fleet.entries(),
        )


@functools.cache
def _models(version: int) -> tuple[type[Fleet], type[Scenario]]:
    fields: dict[str, Any] = {
        kind.fleet.key: (kind.fleet.model | None, Field(default=None, description=kind.fleet.description))
        for kind in KINDS
        if kind.fleet is not None
    }
    if not fields:
        return Fleet, Scenario
    fleet = create_model("Fleet", __base__=Fleet, **fields)
    scenario = create_model("Scenario", __base__=Scenario, fleet=(fleet, Field(default_factory=fleet)))
    return fleet, scenario


def fleet_model() -> type[Fleet]:
    """The fleet schema: the cameras and sensors, and an entry per registered kind that brings one."""
    return _models(KINDS.version)[0]


def scenario_model() -> type[Scenario]:
    """The scenario schema with :func:`fleet_model` as its fleet."""
    return _models(KINDS.version)[1]


def _names(doc: Document, scenario: Scenario | None) -> Names | None:
    """The fleet's cameras and sensors and which members are real, read off the fleet (and the
    servers) alone when the rest of the file is bad."""
    if scenario is not None:
        fleet, servers = scenario.fleet, scenario.servers
    else:
        try:
            fleet = fleet_model().model_validate(without_secrets(doc.data.get("fleet") or {}))
        except ValidationError:
            return None  # the fleet's own problems are reported by the schema
        try:
            servers = Servers.model_validate(doc.data.get("servers") or {})
        except ValidationError:
            servers = Servers()
    return dataclasses.replace(fleet.names(), real=_real_names(fleet, servers))


def _real_names(fleet: Fleet, servers: Servers) -> tuple[str, ...]:
    automation = (AUTOMATION,) if servers.automation is not None and servers.automation.real else ()
    return (*automation, *fleet.real_cameras())


def parse_scenario(
    text: str,
    source: str = "<scenario>",
    environ: Mapping[str, str] | None = None,
    files: FileRoots | None = None,
) -> Scenario:
    """The scenario in ``text``; raises :class:`ScenarioError` with every problem the file has, in
    the order of their lines. The environment variables its real members' secrets are in must be
    set in ``environ`` (default: the process's environment); the files it names (fixtures, videos)
    must be inside ``files`` (:mod:`twin.scenario.files`; ``None``: paths as given)."""
    doc = read(text, source)
    problems = precheck(doc)
    scenario = None
    context: dict[str, Any] = {ACTIONS_CHECKED: True, ENVIRON: os.environ if environ is None else environ}
    if files is not None:
        context[FILES] = files
    try:
        scenario = scenario_model().model_validate(doc.data, context=context)
    except ValidationError as err:
        model = scenario_model()
        problems += [doc.problem(doc.known_path(tuple(e["loc"])), message(e, model)) for e in err.errors()]
    problems += [doc.problem(path, why) for path, why in target_problems(doc.data, _names(doc, scenario))]
    if problems:
        raise ScenarioError([text for _, text in sorted(problems, key=lambda p: p[0])])
    assert scenario is not None
    return scenario


def load_scenario(
    path: Path, environ: Mapping[str, str] | None = None, allowed: tuple[Path, ...] = ()
) -> Scenario:
    """The scenario file at ``path``: the files it names resolve from its directory and stay in it
    or in the ``allowed`` directories."""
    try:
        text = path.read_text()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror}") from err
    return parse_scenario(text, str(path), environ, FileRoots.of(path.parent, *allowed))
