"""IoT sensors: a group of devices of one type sampled by one SimPy process as one numpy batch."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from hardware.ports.events import EventKind
from twin.fleet import SensorGroup
from twin.signals import evaluate, metric_key

if TYPE_CHECKING:
    from twin.world import World


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
        self._last_row: dict[str, list[float]] | None = None
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
            return {name: column[i] for name, column in self._last_row.items()}
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
        ticks is evaluated in one numpy call and then emitted tick by tick on the world clock."""
        env = self.world.env
        period = self.group.period
        names = [m.name for m in self.group.metrics]
        chunk = max(1, min(256, 65_536 // max(1, len(self.device_ids))))
        while True:
            due = math.ceil(env.now / period) * period
            if self.last_sample_at is not None and due <= self.last_sample_at:
                due = self.last_sample_at + period
            times = due + period * np.arange(chunk, dtype=np.float64)
            block = self.block(times)
            for j, t in enumerate(times.tolist()):
                if t > env.now:
                    yield env.timeout(t - env.now)
                columns = [block[name][j].tolist() for name in names]
                unix = self.world.epoch + t
                for i, device_id in enumerate(self.device_ids):
                    self.world.emit(
                        EventKind.DEVICE_TELEMETRY,
                        device_id,
                        device_type=self.group.device_type,
                        timestamp=unix,
                        metrics={name: col[i] for name, col in zip(names, columns, strict=True)},
                    )
                self.last_sample_at = t
                self._last_row = dict(zip(names, columns, strict=True))
