"""Data retention: the cleanup of stored telemetry samples, on demand and as a periodic SimPy job.

Retention applies to *stored* samples: those pushed by devices (webhook, MQTT uplink) and kept in
the store's ``samples`` table. A sample older than ``now - default_retention`` hours is deleted
(``image_retention`` for image-like metrics: ``image``, ``frame``, ``snapshot``...); a ``null``
retention keeps that class forever. The history of simulated sensors is not stored but computed
from their signals; the telemetry queries cut it at the same ``default_retention`` window (see
:meth:`Retention.since`), as if it had been stored and cleaned up.

The periodic job wakes every world hour, reads the settings afresh and runs the cleanup once
``interval_hours`` have passed since the last run, as long as ``enabled`` is true; a change of the
settings takes effect within the hour, never after a stale long sleep.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from hardware.ports.system import RetentionCleanup, RetentionPolicy
from twin.automation.settings import HOUR_S, ServerSettings

if TYPE_CHECKING:
    from twin.engine import Engine

IMAGE_WORDS = ("image", "frame", "snapshot", "photo", "picture", "thumbnail", "jpeg", "jpg", "png")


def is_image_metric(name: str) -> bool:
    """Whether a metric name looks like an image (those use the image retention)."""
    lowered = name.lower()
    return any(word in lowered for word in IMAGE_WORDS)


def cutoff(hours: int | None, now: float) -> float | None:
    """Unix seconds before which data is removed; ``None`` when it is kept forever."""
    return None if hours is None else now - hours * HOUR_S


class Retention:
    """The world's retention: :meth:`cleanup` on demand, and the periodic job started on creation."""

    def __init__(self, world: Engine) -> None:
        self.world = world
        self.last_run = world.env.now
        """Sim seconds of the last cleanup (manual or periodic); the interval counts from here."""
        self.runs = 0
        """Periodic runs so far (manual cleanups are not counted)."""
        self.process = world.env.process(self._periodic())

    def policy(self) -> RetentionPolicy:
        return ServerSettings(self.world).retention()

    def since(self, metric: str, policy: RetentionPolicy | None = None) -> float | None:
        """The oldest Unix time a query may return for ``metric`` (``None``: no limit)."""
        policy = policy or self.policy()
        hours = policy.image_retention if is_image_metric(metric) else policy.default_retention
        return cutoff(hours, self.world.now())

    def cleanup(self, policy: RetentionPolicy | None = None) -> RetentionCleanup:
        """Delete stored samples older than the retention of their class. Runs even when the policy
        is disabled: ``enabled`` governs only the periodic job."""
        policy = policy or self.policy()
        store, now = self.world.store, self.world.now()
        default_cut = cutoff(policy.default_retention, now)
        image_cut = cutoff(policy.image_retention, now)
        names = store.all_sample_metrics()
        images = [m for m in names if is_image_metric(m)]
        others = [m for m in names if not is_image_metric(m)]
        deleted = 0
        if default_cut is not None:
            deleted += store.delete_samples_before(default_cut, metrics=others)
        if image_cut is not None:
            deleted += store.delete_samples_before(image_cut, metrics=images)
        self.last_run = self.world.env.now
        return RetentionCleanup(now, default_cut, image_cut, deleted)

    def _periodic(self) -> Generator[Any, Any, None]:
        env = self.world.env
        while True:
            yield env.timeout(HOUR_S - env.now % HOUR_S)  # on whole world hours
            policy = self.policy()
            if policy.enabled and env.now - self.last_run >= policy.interval_hours * HOUR_S - 1e-6:
                self.cleanup(policy)
                self.runs += 1
