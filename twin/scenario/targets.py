"""The names a scenario file refers to, checked against the world it describes: the camera or server
an action or expectation targets, the simulated sensor (and metric) an action or a watched plot
needs, and the world event kinds ``after`` waits for. A misspelt name would otherwise fail only
mid-run, or never fire at all.

The actions that act on a simulated sensor's signal (:class:`~twin.scenario.actions.SensorParams`)
need one of the fleet. A device a timeline deletes or an expectation follows may be one the client
creates itself, so any other id is taken, except one in the id space of the fleet's sensor groups
(``env_sensor-0009`` in a group of three) or close to one of its ids (``env_sensr-0001``): those
are the fleet's sensors, misnamed. Every unknown name comes with the closest known ones.

A real member takes only the actions that reach it (transport and API faults, at the twin's own
layers: :mod:`twin.scenario.reach`), and keeps wall time: the scenario's clock must be
realtime at speed 1."""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from hardware.ports.events import EventKind
from twin.scenario.actions import (
    Action,
    CameraParams,
    DeviceParams,
    Reach,
    SensorParams,
    ServerParams,
    SpikeParams,
)
from twin.scenario.catalog import ACTIONS
from twin.scenario.expectations import Expectation
from twin.scenario.reach import LAYER_ACTIONS, REACH, SIMULATED_ONLY, member
from twin.scenario.suggest import unknown as _unknown
from twin.settings import AUTOMATION, in_words, wall_clock_problem

EVENT_KINDS = tuple(k.value for k in EventKind)
CLOSE_ID = 0.8
"""How close an unknown device id must be to a fleet sensor's to be taken for a misspelt one."""


def _kinds() -> dict[str, type[BaseModel]]:
    union = typing.get_args(Expectation)[0]
    return {typing.get_args(c.model_fields["expect"].annotation)[0]: c for c in typing.get_args(union)}


EXPECTATION_KINDS = _kinds()


@dataclass(frozen=True, slots=True)
class Names:
    """What the scenario's fleet has: camera ids, and each simulated sensor with its metrics."""

    cameras: tuple[str, ...]
    sensors: Mapping[str, frozenset[str]]
    real: tuple[str, ...] = ()
    """The members that are real (``automation``, camera ids)."""

    @property
    def servers(self) -> tuple[str, ...]:
        return (AUTOMATION, *self.cameras)

    def described(self) -> str:
        """The real members in words: ``the automation server, camera cam-01``."""
        return in_words(self.real)


Problem = tuple[tuple, str]
"""A key path in the file and what is wrong there."""


def _items(data: Mapping, key: str) -> Iterator[tuple[int, dict]]:
    items = data.get(key)
    for i, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, dict):
            yield i, item


def target_problems(data: Mapping[str, Any], names: Names | None) -> list[Problem]:
    """Every reference in ``data`` (the parsed file) that the world would not have. ``names`` is
    ``None`` when the fleet itself is invalid: then only the event kinds are checked."""
    problems: list[Problem] = []
    for i, step in _items(data, "timeline"):
        event = step["after"].get("event") if isinstance(step.get("after"), dict) else None
        if isinstance(event, str) and event not in EVENT_KINDS:
            problems.append((("timeline", i, "after", "event"), _unknown("event kind", event, EVENT_KINDS)))
        action = ACTIONS.get(step["do"]) if isinstance(step.get("do"), str) else None
        params = step.get("params", {})
        if action is None or names is None or not isinstance(params, dict):
            continue
        problems += [
            (("timeline", i, "params", *path), why) for path, why in _params(action.params, params, names)
        ]
        problems += [(("timeline", i, *path), why) for path, why in _reaches(action, params, names)]
    for i, exp in _items(data, "expectations"):
        kind = EXPECTATION_KINDS.get(exp.get("expect", ""))
        if kind is None:
            continue
        after = exp.get("after")
        if "after" in kind.model_fields and isinstance(after, str) and after not in EVENT_KINDS:
            problems.append((("expectations", i, "after"), _unknown("event kind", after, EVENT_KINDS)))
        device = exp.get("device")
        if names is not None and "device" in kind.model_fields and isinstance(device, str):
            problems += [(("expectations", i, "device"), why) for why in _fleet_device(device, names)]
        server = exp["server"] if "server" in exp else kind.model_fields["server"].default
        if names is not None and isinstance(server, str) and server not in names.servers:
            given = "" if "server" in exp else " (the default of this kind)"
            path = ("expectations", i, "server") if "server" in exp else ("expectations", i)
            problems.append((path, _unknown("server", server, names.servers) + given))
    if names is not None and names.real:
        problems += _wall_clock(data.get("clock"), names)
    if names is not None:
        for i, watch in _items(data, "watch"):
            problems += [(("watch", i, *path), why) for path, why in _sensor(watch, names)]
    return problems


def _params(kind: type, params: dict, names: Names) -> list[Problem]:
    problems: list[Problem] = []
    if issubclass(kind, CameraParams):
        camera = params.get("camera", kind.model_fields["camera"].default)
        if isinstance(camera, str) and camera not in names.cameras:
            problems.append((("camera",), _unknown("camera", camera, names.cameras)))
    if issubclass(kind, ServerParams):
        server = params.get("server", kind.model_fields["server"].default)
        if isinstance(server, str) and server not in names.servers:
            problems.append((("server",), _unknown("server", server, names.servers)))
    if issubclass(kind, SensorParams):
        metric_key = "metric" if issubclass(kind, SpikeParams) else None
        problems += _sensor(params, names, metric_key)
    elif issubclass(kind, DeviceParams) and isinstance(device := params.get("device"), str):
        problems += [(("device",), why) for why in _fleet_device(device, names)]
    return problems


def _fleet_device(device: str, names: Names) -> list[str]:
    """A device id that is not one of the fleet's simulated sensors, yet in their id space or close
    to one of their ids: a misnamed sensor of the fleet. Other ids may be devices the client creates."""
    known = list(names.sensors)
    if device in names.sensors or not known:
        return []
    spaces = {sensor.rpartition("-")[0] for sensor in known}
    in_space = any(re.fullmatch(re.escape(space) + r"-\d+", device) for space in spaces)
    if not in_space and not difflib.get_close_matches(device, known, n=1, cutoff=CLOSE_ID):
        return []
    return [_unknown("simulated sensor", device, known) + " (a device the client creates needs another id)"]


def _reaches(action: Action, params: dict, names: Names) -> list[Problem]:
    """An action that changes the simulated world, aimed at a real member (or, for the clock, in a
    run that has one)."""
    reach = REACH[action.name]
    why = SIMULATED_ONLY.get(reach)
    if reach is Reach.CLOCK and names.real:
        return [
            (("do",), f"{action.name} cannot run beside a real member ({names.described()} is real): {why}")
        ]
    target = member(action, params)
    if why is None or target not in names.real:
        return []
    key = next((k for k in ("camera", "server") if k in params), None)
    return [
        (
            ("params", key) if key else ("do",),
            f"{action.name} cannot target {in_words((target,))}, a real member: {why}; only transport and "
            f"API faults reach a real member ({', '.join(LAYER_ACTIONS)})",
        )
    ]


def _wall_clock(clock: object, names: Names) -> list[Problem]:
    """A real member keeps wall time: the scenario's clock must be realtime at speed 1 (the rule the
    command line applies to ``--real-*``, in the file's terms)."""
    clock = clock if isinstance(clock, dict) else {}
    step = clock.get("mode") == "step"
    speed = clock.get("speed", 1.0)
    speed = float(speed) if isinstance(speed, int | float) and not isinstance(speed, bool) else 1.0
    problem = wall_clock_problem(names.described(), step, speed, ("mode 'step'", "speed"))
    if problem is None:
        return []
    return [(("clock", "mode" if step else "speed"), problem)]


def _sensor(item: dict, names: Names, metric_key: str | None = "metric") -> list[Problem]:
    device = item.get("device")
    if not isinstance(device, str):
        return []
    metrics = names.sensors.get(device)
    if metrics is None:
        return [(("device",), _unknown("simulated sensor", device, list(names.sensors)))]
    metric = item.get(metric_key) if metric_key else None
    if isinstance(metric, str) and metric not in metrics:
        return [((metric_key,), _unknown(f"metric of {device}:", metric, sorted(metrics)))]
    return []
