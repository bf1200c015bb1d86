"""The scenario schema. Unknown keys and bad values are errors that name file, line and key path.

This holds the parts the world is built from (seed, clock, fleet); the timeline, expectations and
stop condition join it with the scenario engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from twin.fleet import (
    DEFAULT_EPOCH,
    CameraSpec,
    MetricSpec,
    SensorGroup,
    SignalKind,
    SignalSpec,
    WorldConfig,
)


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names file, line and key path."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signal(_Strict):
    kind: SignalKind = SignalKind.CONSTANT
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


class Sensors(_Strict):
    type: str = Field(pattern=r"^[A-Za-z0-9_\-]+$")
    count: int = Field(ge=0, le=100_000)
    period: float = Field(default=10.0, gt=0, description="sampling period in sim seconds")
    id_prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_\-]+$")
    metrics: dict[str, Signal] = Field(min_length=1)


class Cameras(_Strict):
    count: int = Field(default=1, ge=0, le=254)
    profile: str = "default"


class Fleet(_Strict):
    sensors: list[Sensors] = Field(default_factory=list)
    cameras: Cameras = Field(default_factory=Cameras)


class ClockSpec(_Strict):
    mode: Literal["realtime", "step"] = "realtime"
    speed: float = Field(default=1.0, gt=0)
    epoch: float | Literal["now"] = Field(
        default=DEFAULT_EPOCH,
        description="unix time of sim time 0; 'now' reads the wall clock once at start "
        "(traces then differ between runs)",
    )


class Scenario(_Strict):
    name: str
    description: str = ""
    seed: int = Field(default=0, ge=0)
    clock: ClockSpec = Field(default_factory=ClockSpec)
    fleet: Fleet = Field(default_factory=Fleet)

    def world_config(self, wall_now: float | None = None) -> WorldConfig:
        """The world this scenario describes; ``wall_now`` resolves ``epoch: now``."""
        groups = tuple(
            SensorGroup(
                device_type=s.type,
                count=s.count,
                period=s.period,
                id_prefix=s.id_prefix,
                metrics=tuple(
                    MetricSpec(
                        name,
                        SignalSpec(
                            sig.kind,
                            sig.mean,
                            sig.amplitude,
                            sig.period,
                            sig.noise,
                            sig.drift_per_day,
                            sig.spread,
                            sig.min,
                            sig.max,
                            sig.decimals,
                        ),
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
            cameras=CameraSpec(self.fleet.cameras.count, self.fleet.cameras.profile),
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
            break
    return line


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
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        problems = []
        for e in err.errors():
            path = tuple(e["loc"])
            line = _line_of(data, path, loader.key_lines)
            where = f"{source}:{line}" if line else source
            dotted = ".".join(str(p) for p in path) or "(top level)"
            msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
            problems.append(f"{where}: {dotted}: {msg}")
        raise ScenarioError("\n".join(problems)) from err


def load_scenario(path: Path) -> Scenario:
    try:
        text = path.read_text()
    except OSError as err:
        raise ScenarioError(f"{path}: cannot read: {err.strerror}") from err
    return parse_scenario(text, str(path))
