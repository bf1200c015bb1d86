"""IoT sensors: a group of devices of one type sampled by one SimPy process as one numpy batch.

A tick of the group is one :class:`Samples` block (every device's value of every metric at one
instant) handed to the world, which gives it whole to the consumers that work on blocks (the rules
engine, data push) and expands it into one ``DEVICE_TELEMETRY`` event per device only when someone
wants single events (a bus subscriber, the trace).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from twin.fleet import SensorGroup
from twin.signals import evaluate, metric_key

if TYPE_CHECKING:
    from twin.world import World


@dataclass(frozen=True, slots=True)
class Samples:
    """One tick of a sensor group: ``columns[metric][i]`` is device ``fleet.device_ids[i]``'s value
    at sim time ``at``."""

    at: float
    fleet: SensorFleet
    columns: dict[str, np.ndarray]

    @property
    def index(self) -> dict[str, int]:
        return self.fleet.index

    def rows(self) -> Iterator[tuple[str, dict[str, float]]]:
        """``(device id, {metric: value})`` for every device, in fleet order."""
        names = list(self.columns)
        lists = [column.tolist() for column in self.columns.values()]
        for i, device_id in enumerate(self.fleet.device_ids):
            yield device_id, {name: values[i] for name, values in zip(names, lists, strict=True)}


class SensorFleet:
    """All devices of one :class:`SensorGroup`. Samples fall on multiples of the group's period."""

    def __init__(self, world: World, group: SensorGroup) -> None:
        self.world = world
        self.group = group
        self.device_ids = group.device_ids()
        self.index = {device_id: i for i, device_id in enumerate(self.device_ids)}
        keys = np.array([world.streams.key(d) for d in self.device_ids], dtype=np.uint64)
        self._metric_keys = [metric_key(keys, i) for i in range(len(group.metrics))]
        self.last_sample_at: float | None = None
        self._last_row: dict[str, np.ndarray] | None = None
        self.samples_taken = 0
        """Single samples (one device at one tick) taken since the world was built."""
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
        return {
            m.name: float(evaluate(m.signal, self._metric_keys[k][i : i + 1], t, self.world.epoch)[0])
            for k, m in enumerate(self.group.metrics)
        }

    def current(self, device_id: str) -> dict[str, float]:
        return self.values_of(device_id, self.world.env.now)

    def block(self, times: np.ndarray) -> dict[str, np.ndarray]:
        """Every metric of every device at each of ``times``: arrays of shape (len(times), devices)."""
        t = times[:, None]
        return {
            m.name: evaluate(m.signal, self._metric_keys[i][None, :], t, self.world.epoch)
            for i, m in enumerate(self.group.metrics)
        }

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
                row = {name: block[name][j] for name in names}
                self.last_sample_at = t
                self._last_row = row
                self.samples_taken += devices
                self.world.emit_samples(Samples(t, self, row))
