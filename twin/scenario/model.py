"""The scenario schema. Unknown keys and bad values are errors that name file, line and key path.

A scenario is the world (seed, clock, fleet), a timeline of actions on the world clock (``at`` a sim
time or ``after`` a world event; ``for`` undoes the action that much later), the expectations the
client under test is judged by, and when the run stops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from twin.camera.video.config import PROFILES
from twin.camera.video.scene import MAX_OBJECTS, SCENES
from twin.fleet import (
    DEFAULT_EPOCH,
    CameraSpec,
    MetricSpec,
    SensorGroup,
    SignalKind,
    SignalSpec,
    WorldConfig,
)
from twin.scenario.actions import ACTIONS, check
from twin.scenario.expectations import Expectation


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names file, line and key path."""


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


MAX_CAMERAS = 254
"""Cameras in a world at the most (their addresses end in 1..254)."""


class Cameras(_Strict):
    count: int = Field(default=1, ge=0, le=MAX_CAMERAS)
    profile: str = Field(
        default="default",
        description="the media profile every camera boots with (GET /media/profile)",
        json_schema_extra={"enum": list(PROFILES)},
    )
    scene: str = Field(
        default="street",
        description="the synthetic scene every camera sees: street (people and vehicles), empty "
        "(background only), parking (parked vehicles, rarely moving), crowd (many people)",
        json_schema_extra={"enum": list(SCENES)},
    )
    objects: int | None = Field(
        default=None,
        ge=0,
        le=MAX_OBJECTS,
        description="objects in each camera's scene (default: the scene's own count)",
    )

    @field_validator("profile", "scene")
    @classmethod
    def _known(cls, value: str, info: ValidationInfo) -> str:
        known = PROFILES if info.field_name == "profile" else SCENES
        if value not in known:
            raise ValueError(f"unknown {info.field_name} {value!r}; known: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _objects_fit_the_scene(self) -> Cameras:
        if self.scene == "empty" and self.objects:
            raise ValueError("scene 'empty' has no objects: drop 'objects' or choose another scene")
        return self


def _one_group_or_many(schema: dict) -> None:
    """Editors: ``cameras`` is one group (a mapping) or a list of groups."""
    many = {key: schema.pop(key) for key in ("type", "items", "minItems") if key in schema}
    schema["anyOf"] = [many["items"], many]


class Fleet(_Strict):
    sensors: list[Sensors] = Field(default_factory=list)
    cameras: Annotated[list[Cameras], BeforeValidator(lambda v: [v] if isinstance(v, dict) else v)] = Field(
        default_factory=lambda: [Cameras()],
        min_length=1,
        description="one group of cameras, or a list of groups (numbered on: cam-01, cam-02, ...)",
        json_schema_extra=_one_group_or_many,
    )

    @field_validator("cameras")
    @classmethod
    def _cameras_fit(cls, groups: list[Cameras]) -> list[Cameras]:
        if sum(g.count for g in groups) > MAX_CAMERAS:
            raise ValueError(f"at most {MAX_CAMERAS} cameras in all")
        return groups


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
    do: Annotated[str, Field(json_schema_extra={"enum": sorted(ACTIONS)})]
    params: dict[str, Any] = Field(default_factory=dict)
    for_: float | None = Field(default=None, alias="for", gt=0, description="undo after this many s")

    @model_validator(mode="after")
    def _check(self) -> Step:
        if (self.at is None) == (self.after is None):
            raise ValueError("give exactly one of 'at' and 'after'")
        action = check(self.do)
        action.params.model_validate(self.params)
        return self


class Stop(_Strict):
    at: float = Field(default=3600.0, gt=0, description="sim seconds: the run ends here at the latest")
    on_client_exit: bool = Field(default=True, description="end the run when the client exits")
    wall_timeout: float = Field(default=600.0, gt=0, description="wall seconds before the run is abandoned")


class Servers(_Strict):
    mqtt: bool = Field(
        default=True,
        description="run the embedded MQTT broker and bridge (each sample is published there)",
    )


class Watch(_Strict):
    device: str
    metric: str


class Scenario(_Strict):
    name: str
    description: str = ""
    seed: int = Field(default=0, ge=0)
    clock: ClockSpec = Field(default_factory=ClockSpec)
    fleet: Fleet = Field(default_factory=Fleet)
    timeline: list[Step] = Field(default_factory=list)
    expectations: list[Expectation] = Field(default_factory=list)
    stop: Stop = Field(default_factory=Stop)
    servers: Servers = Field(default_factory=Servers)
    watch: list[Watch] = Field(default_factory=list, description="metrics plotted in the HTML report")

    def world_config(self, wall_now: float | None = None) -> WorldConfig:
        """The world this scenario describes; ``wall_now`` resolves ``epoch: now``."""
        first, *more = self.fleet.cameras
        groups = tuple(
            SensorGroup(
                device_type=s.type,
                count=s.count,
                period=s.period,
                id_prefix=s.id_prefix,
                metrics=tuple(
                    MetricSpec(
                        name,
                        sig.spec(),
                        unit=sig.unit,
                    )
                    for name, sig in s.metrics.items()
                ),
            )
            for s in self.fleet.sensors
        )
        return WorldConfig(
            seed=self.seed,
            epoch=float(int(wall_now or 0)) if self.clock.epoch == "now" else self.clock.epoch,
            sensors=groups,
            cameras=CameraSpec(**first.model_dump()),
            camera_groups=tuple(CameraSpec(**g.model_dump()) for g in more),
        )


class _LineLoader(yaml.SafeLoader):
    """A SafeLoader that remembers the line of every mapping key."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict:
    mapping = {}
    lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        mapping[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    loader.key_lines[id(mapping)] = (mapping, lines)
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_of(data: object, path: tuple, key_lines: dict) -> int | None:
    node, line = data, None
    for part in path:
        entry = key_lines.get(id(node)) if isinstance(node, dict) else None
        if entry is not None and part in entry[1]:
            line = entry[1][part]
        try:
            node = node[part]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            if entry is not None and entry[1]:
                line = min(entry[1].values())  # a missing key: the line of the mapping it belongs in
            return line
    entry = key_lines.get(id(node)) if isinstance(node, dict) and path and isinstance(path[-1], int) else None
    if entry is not None and entry[1]:
        line = min(entry[1].values())  # a list item: the line of its first key
    return line


def _where(source: str, data: object, path: tuple, key_lines: dict) -> str:
    line = _line_of(data, path, key_lines)
    return f"{source}:{line}" if line else source


def _precheck(data: dict, source: str, key_lines: dict) -> list[str]:
    """Actions and expectations named in the file, checked before the schema so that an action
    the world cannot run yet, or a bad parameter, is reported at its own line and key."""
    problems = []
    timeline = data.get("timeline")
    for i, step in enumerate(timeline if isinstance(timeline, list) else []):
        if not isinstance(step, dict) or not isinstance(step.get("do"), str):
            continue
        name = step["do"]
        if name not in ACTIONS:
            why = f"unknown action {name!r}; known: {', '.join(sorted(ACTIONS))}"
            path = ("timeline", i, "do")
            problems.append(f"{_where(source, data, path, key_lines)}: timeline.{i}.do: {why}")
            continue
        params = step.get("params", {})
        if not isinstance(params, dict):
            continue
        try:
            ACTIONS[name].params.model_validate(params)
        except ValidationError as err:
            for e in err.errors():
                path = ("timeline", i, "params", *e["loc"])
                dotted = ".".join(str(p) for p in path)
                msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
                problems.append(f"{_where(source, data, path, key_lines)}: {dotted}: {msg}")
    return problems


def _known_path(data: object, loc: tuple) -> tuple:
    """``loc`` without the parts that are not keys of the data (pydantic's union tags)."""
    out, node = [], data
    for part in loc:
        try:
            node = node[part]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            if isinstance(node, dict) and part in node.values():
                continue  # the discriminator's tag, not a key of the file
            if isinstance(node, dict) and part == 0:
                continue  # a mapping given where a list of them may stand (fleet.cameras)
        out.append(part)
    return tuple(out)


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    loader = _LineLoader(text)
    loader.key_lines = {}
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as err:
        raise ScenarioError(f"{source}: invalid YAML: {err}") from err
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping with at least a 'name'")
    problems = _precheck(data, source, loader.key_lines)
    if problems:
        raise ScenarioError("; ".join(problems))
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            path = _known_path(data, tuple(e["loc"]))
            line = _line_of(data, path, loader.key_lines)
            where = f"{source}:{line}" if line else source
            dotted = ".".join(str(p) for p in path) or "(top level)"
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
            problems.append(f"{where}: {dotted}: {msg}")
        raise ScenarioError("; ".join(problems)) from err


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror}") from err
    return parse_scenario(text, str(path))
