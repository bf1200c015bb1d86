"""IoT sensors: a group of devices of one type sampled by one SimPy process as one numpy batch.

A tick of the group is one :class:`Samples` block (every device's value of every metric at one
instant) handed to the world, which gives it whole to the consumers that work on blocks (the rules
engine, data push) and expands it into one ``DEVICE_TELEMETRY`` event per device only when someone
wants single events (a bus subscriber, the trace).

Faults on single devices are :class:`Window` s over the procedural signal: in a *gap* the device
reports nothing, in a *spike* one metric reports shifted by ``delta``. They shape both the ticks
as they are taken and the history read back later, so a client sees the same hole or outlier live
and when it pages through the past.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from hardware.ports.errors import InvalidInput, Unavailable
from twin.engine import Engine, Host
from twin.fleet import SensorGroup
from twin.past import first_tick
from twin.signals import evaluate, metric_key


@dataclass(frozen=True, slots=True)
class Window:
    """Sim time ``[start, end)`` (``end`` None: until closed) in which device ``device`` (an index
    into the fleet) reports nothing (``metric`` None: a gap) or reports ``metric`` shifted by
    ``delta`` (a spike)."""

    device: int
    start: float
    end: float | None
    metric: str | None = None
    delta: float = 0.0

    def covers(self, t: float) -> bool:
        return self.start <= t and (self.end is None or t < self.end)


@dataclass(frozen=True, slots=True)
class Samples:
    """One tick of a sensor group: ``columns[metric][i]`` is device ``fleet.device_ids[i]``'s value
    at sim time ``at``; ``live`` marks the devices that reported (``None``: all of them)."""

    at: float
    fleet: SensorFleet
    columns: dict[str, np.ndarray]
    live: np.ndarray | None = None
    count: int = 0
    """How many devices reported."""

    @property
    def index(self) -> dict[str, int]:
        return self.fleet.index

    def reported(self, i: int) -> bool:
        return self.live is None or bool(self.live[i])

    def rows(self) -> Iterator[tuple[str, dict[str, float]]]:
        """``(device id, {metric: value})`` for every device that reported, in fleet order."""
        names = list(self.columns)
        lists = [column.tolist() for column in self.columns.values()]
        live = None if self.live is None else self.live.tolist()
        for i, device_id in enumerate(self.fleet.device_ids):
            if live is None or live[i]:
                yield device_id, {name: values[i] for name, values in zip(names, lists, strict=True)}


class SampleSink(Engine, Protocol):
    """The world as a sensor group sees it: the engine, and where a group's ticks go."""

    sample_observers: list[SampleObserver]
    """Called synchronously with every tick of a sensor group, as one block."""

    def emit_samples(self, samples: Samples) -> None:
        """One tick of a sensor group, as one block."""
        ...


SampleObserver = Callable[[Samples], None]
"""A consumer of whole ticks (the rules engine, data push), called synchronously with each."""

SENSORS = "sensors"
"""The sensor groups' kind name."""


class SensorFleet:
    """All devices of one :class:`SensorGroup`. Samples fall on multiples of the group's period."""

    def __init__(self, world: SampleSink, group: SensorGroup) -> None:
        self.world = world
        self.group = group
        self.device_ids = group.device_ids()
        self.index = {device_id: i for i, device_id in enumerate(self.device_ids)}
        keys = np.array([world.streams.key(d) for d in self.device_ids], dtype=np.uint64)
        self._metric_keys = [metric_key(keys, i) for i in range(len(group.metrics))]
        self.first_tick = first_tick(world.config.history, group.period)
        """The number of the oldest sample of the world's past (``<= 0``; sample ``k`` at ``k * period``)."""
        self.last_sample_at: float | None = None
        self._last_row: dict[str, np.ndarray] | None = None
        self._read: dict[int, tuple[float, float, dict[str, float]]] = {}
        """Each device's signal values at the instant last read by :meth:`values_of` (a pure function of
        device, time and epoch; windows are applied on every read), so polling one device costs a lookup."""
        self.samples_taken = 0
        """Single samples (one device at one tick) taken since the world was built."""
        self.windows: list[Window] = []
        self.changes = 0
        """Windows opened, closed or restored so far (what a device reports depends on them)."""
        """Gaps and spikes, oldest first (kept after they end: history is read through them)."""
        self._current: list[Window] = []
        """The windows that may still cover an upcoming tick (what the sampler looks at)."""
        self.process = world.env.process(self._sample())

    def values(self, t: float) -> dict[str, np.ndarray]:
        """Every device's value of every metric at sim time ``t``."""
        return {
            m.name: evaluate(m.signal, self._metric_keys[i], t, self.world.epoch)
            for i, m in enumerate(self.group.metrics)
        }

    def values_of(self, device_id: str, t: float) -> dict[str, float]:
        """One device's metrics at sim time ``t``, without evaluating the rest of the fleet (the
        last emitted sample is kept, so reading current values costs a lookup)."""
        i = self.index[device_id]
        if t == self.last_sample_at and self._last_row is not None:
            return {name: column[i].item() for name, column in self._last_row.items()}
        epoch = self.world.epoch
        known = self._read.get(i)
        if known is not None and known[0] == t and known[1] == epoch:
            values = dict(known[2])
        else:
            values = {
                m.name: float(evaluate(m.signal, self._metric_keys[k][i : i + 1], t, epoch)[0])
                for k, m in enumerate(self.group.metrics)
            }
            self._read[i] = (t, epoch, dict(values))
        for w in self.windows:
            if w.device == i and w.metric in values and w.covers(t):
                values[w.metric] = self._shifted(w.metric, values[w.metric], w.delta)
        return values

    def current(self, device_id: str) -> dict[str, float]:
        return self.values_of(device_id, self.world.env.now)

    def block(self, times: np.ndarray) -> dict[str, np.ndarray]:
        """Every metric of every device at each of ``times``: arrays of shape (len(times), devices)."""
        t = times[:, None]
        return {
            m.name: evaluate(m.signal, self._metric_keys[i][None, :], t, self.world.epoch)
            for i, m in enumerate(self.group.metrics)
        }

    def recent(self, device_ids: list[str], upto: float, ticks: int) -> tuple[list[float], dict[str, dict]]:
        """The last ``ticks`` ticks at or before ``upto`` as the devices reported them (gaps ``None``,
        spikes added): their times, and per device each metric's values."""
        last = math.floor(upto / self.group.period + 1e-9)
        first = max(self.first_tick, last - ticks + 1)
        times = np.arange(first, last + 1, dtype=np.float64) * self.group.period
        block = self.block(times)
        out: dict[str, dict] = {}
        for device_id in device_ids:
            i = self.index[device_id]
            values = {name: [v.item() for v in column[:, i]] for name, column in block.items()}
            for w in self.windows:
                if w.device != i:
                    continue
                for k, t in enumerate(times.tolist()):
                    if not w.covers(t):
                        continue
                    for name, column in values.items():
                        if w.metric is None:
                            column[k] = None
                        elif w.metric == name and column[k] is not None:
                            column[k] = self._shifted(name, column[k], w.delta)
            out[device_id] = values
        return times.tolist(), out

    # Faults on single devices -------------------------------------------------------------------
    def open_window(
        self, device_id: str, start: float, end: float | None, metric: str | None = None, delta: float = 0.0
    ) -> Window:
        if metric is not None and all(m.name != metric for m in self.group.metrics):
            known = ", ".join(m.name for m in self.group.metrics)
            raise InvalidInput(f"{device_id} has no metric {metric!r} (it reports {known})", field="metric")
        window = Window(self.index[device_id], self._untaken(start), end, metric, delta)
        self.changes += 1
        self.windows.append(window)
        self._current.append(window)
        return window

    def close_window(self, window: Window, at: float) -> None:
        """End ``window`` at sim time ``at`` (no-op when it has ended by then)."""
        at = self._untaken(at)
        self.changes += 1
        if window in self.windows and window.covers(at):
            closed = Window(window.device, window.start, at, window.metric, window.delta)
            self.windows[self.windows.index(window)] = closed
            if window in self._current:
                self._current[self._current.index(window)] = closed

    def _untaken(self, t: float) -> float:
        """``t``, or just after it when the tick at ``t`` has been taken already (a window opened or
        closed at that instant starts or ends with the next tick, live and in history alike)."""
        if self.last_sample_at is not None and t <= self.last_sample_at:
            return self.last_sample_at + self.group.period * 1e-6
        return t

    def gaps_of(self, device_id: str) -> list[tuple[float, float | None]]:
        i = self.index[device_id]
        return [(w.start, w.end) for w in self.windows if w.device == i and w.metric is None]

    def spikes_of(self, device_id: str, metric: str) -> list[Window]:
        i = self.index[device_id]
        return [w for w in self.windows if w.device == i and w.metric == metric]

    def link_down(self, device_id: str) -> Window | None:
        """The gap with no end the device is in (it went offline), or ``None``."""
        i = self.index[device_id]
        return next((w for w in self._current if w.device == i and w.metric is None and w.end is None), None)

    def restore_windows(self, windows: list[Window]) -> None:
        self.changes += 1
        self.windows = list(windows)
        self._current = list(windows)

    def last_report(self, device_id: str, upto: float) -> float | None:
        """Sim time of the device's last sample at or before ``upto`` (gaps skipped, the past
        included), or ``None``."""
        period, oldest = self.group.period, self.first_tick
        k = math.floor(upto / period + 1e-9)
        if not self.windows:
            return k * period if k >= oldest else None
        gaps = sorted(self.gaps_of(device_id), reverse=True)
        moved = True
        while k >= oldest and moved:
            moved = False
            for start, end in gaps:
                t = k * period
                if start <= t and (end is None or t < end):
                    k = math.ceil(start / period - 1e-9) - 1
                    moved = True
        return k * period if k >= oldest else None

    def _shifted(self, metric: str, value: float, delta: float) -> float:
        decimals = next(m.signal.decimals for m in self.group.metrics if m.name == metric)
        return float(np.round(value + delta, decimals))  # as history rounds it (twin.automation.series)

    def _shape(self, t: float, row: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
        """The tick at ``t`` as the devices report it: gaps masked out, spikes added."""
        live = None
        self._current = [w for w in self._current if w.end is None or w.end > t]
        for w in self._current:
            if not w.covers(t):
                continue
            if w.metric is None:
                if live is None:
                    live = np.ones(len(self.device_ids), dtype=bool)
                live[w.device] = False
            else:
                column = row[w.metric] = row[w.metric].copy()
                column[w.device] = self._shifted(w.metric, column[w.device].item(), w.delta)
        return row, live

    def _sample(self):
        """One process for the whole group. Values are pure functions of t, so a block of upcoming
        ticks is evaluated in one numpy call and then handed over tick by tick on the world clock."""
        env = self.world.env
        period = self.group.period
        names = [m.name for m in self.group.metrics]
        devices = len(self.device_ids)
        chunk = max(1, min(256, 65_536 // max(1, devices)))
        while True:
            due = math.ceil(env.now / period) * period
            if self.last_sample_at is not None and due <= self.last_sample_at:
                due = self.last_sample_at + period
            times = due + period * np.arange(chunk, dtype=np.float64)
            block = self.block(times)
            for j, t in enumerate(times.tolist()):
                if t > env.now:
                    yield env.timeout(t - env.now)
                row, live = {name: block[name][j] for name in names}, None
                if self._current:
                    row, live = self._shape(t, row)
                self.last_sample_at = t
                self._last_row = row
                count = devices if live is None else int(live.sum())
                self.samples_taken += count
                self.world.emit_samples(Samples(t, self, row, live, count))


class SensorWing:
    """The sensor groups of a world, one :class:`SensorFleet` per device type: a wing of simulated
    devices that are sampled on the engine's clock and reported to whoever observes the ticks."""

    def __init__(self, world: SampleSink, groups: tuple[SensorGroup, ...]) -> None:
        self.groups: dict[str, SensorFleet] = {}
        """The groups by device type."""
        self.by_device: dict[str, SensorFleet] = {}
        """Each simulated device's group, by device id."""
        for group in groups:
            fleet = SensorFleet(world, group)
            self.groups[group.device_type] = fleet
            self.by_device.update(dict.fromkeys(fleet.device_ids, fleet))

    def snapshot(self) -> dict[str, tuple[float | None, list[Window]]]:
        return {t: (fleet.last_sample_at, list(fleet.windows)) for t, fleet in self.groups.items()}

    def restore(self, state: dict[str, tuple[float | None, list[Window]]]) -> None:
        for device_type, (last, windows) in state.items():
            if device_type in self.groups:
                self.groups[device_type].last_sample_at = last
                self.groups[device_type].restore_windows(windows)


def sensors_of(world: Host) -> SensorWing:
    """The sensor groups of ``world``."""
    wing = world.wings.get(SENSORS)
    if not isinstance(wing, SensorWing):
        raise Unavailable("the world has no sensor groups")
    return wing
