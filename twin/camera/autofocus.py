"""The lens's autofocus controller: one-shot autofocus and zoom-follow jobs as SimPy processes.

One-shot: a coarse sweep over the focus range (from the nearer end), a fine sweep around the best
coarse sample, a parabola through the best fine sample and its neighbours, then a move there and a
short verification. Each sample is a move plus one frame of settling; the contrast metric at a
position is a bell around the ideal with a little seeded noise. Cancel interrupts the process and
stops the focus motor where it is. ``af/status`` reads the job's progress at any instant. As on the
camera daemon, jobs are numbered from 1, a new one is not accepted while another runs (``autofocus
operation already active``), and cancelling with no job running succeeds.

:class:`Autofocus` is held by :class:`twin.camera.lens.Lens`; it drives the lens's zoom and focus
motors and reads its optics (:class:`Optics`).
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from hardware.ports.camera_hw import AfJob, AfStatus
from hardware.ports.errors import InternalError
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.camera.motor import Motor

SETTLE_S = 0.04
"""One frame of settling before the AF reads its contrast metric."""
COARSE_SAMPLES = 13
FINE_SAMPLES = 9
METRIC_WIDTH = 250.0
"""Focus steps over which the contrast metric falls to 1/e of its peak."""


class Optics(Protocol):
    """What the autofocus reads of its lens: where focus is sharp, the zoom ratio, and a combined
    zoom-and-focus move along the zoom-follow curve."""

    distance_m: float

    def ideal_focus(self) -> float: ...

    def zoom_ratio(self) -> float: ...

    def zoom_position(self, ratio: float) -> float: ...

    def follow(self, zoom_target: float, distance_m: float) -> simpy.Event: ...

    @staticmethod
    def distance_of(zoom_pos: float, focus_pos: float) -> float: ...


class Autofocus:
    """One lens's autofocus jobs: one-shot and zoom-follow, one at a time, numbered from 1."""

    def __init__(
        self, env: simpy.Environment, key: int, zoom_motor: Motor, focus_motor: Motor, optics: Optics
    ) -> None:
        self.env = env
        self._key = key
        self.zoom_motor, self.focus_motor = zoom_motor, focus_motor
        self.optics = optics
        self._jobs = 0
        self._af: simpy.Process | None = None
        self._af_started = env.now
        self._af_status = self._status_of(0, "none", "idle", 0.0, False, env.now)

    def metric(self, focus_pos: float, sample: int) -> float:
        """The contrast metric the AF reads at ``focus_pos``: a bell around sharp, seeded noise."""
        bell = 1000.0 * math.exp(-(((focus_pos - self.optics.ideal_focus()) / METRIC_WIDTH) ** 2))
        noise = float(hash_uniform(self._key, 1000 + self._jobs * 64 + sample)) - 0.5
        return bell + 4.0 * noise

    # Status ----------------------------------------------------------------------------------

    def af_status(self) -> AfStatus:
        s = self._af_status
        elapsed = s.elapsed_ms
        if s.busy:
            elapsed = round((self.env.now - self._af_started) * 1000)
        return AfStatus(
            **{
                **{f: getattr(s, f) for f in AfStatus.__slots__},
                "elapsed_ms": elapsed,
                "zoom_pos": round(self.zoom_motor.position()),
                "focus_pos": round(self.focus_motor.position()),
                "effective_ratio": round(self.optics.zoom_ratio(), 3),
            }
        )

    def _status_of(
        self, job_id: int, operation: str, state: str, progress: float, busy: bool, started: float, **kw: Any
    ) -> AfStatus:
        self._af_started = started
        base: dict[str, Any] = {
            "job_id": job_id,
            "operation": operation,
            "state": state,
            "progress": round(progress, 3),
            "busy": busy,
            "elapsed_ms": round((self.env.now - started) * 1000),
            "error_code": 0,
            "message": "",
            "anchor_valid": True,
            "requested_ratio": 0.0,
            "effective_ratio": round(self.optics.zoom_ratio(), 3),
            "zoom_pos": round(self.zoom_motor.position()),
            "focus_pos": round(self.focus_motor.position()),
            "best_focus": 0,
            "metric": 0.0,
            "confidence": 0.0,
            "reproducibility": 0.0,
            "estimated_distance_m": 0.0,
        }
        base.update(kw)
        return AfStatus(**base)

    def _update(self, **kw: Any) -> None:
        s = self._af_status
        values = {f: getattr(s, f) for f in AfStatus.__slots__}
        values.update(kw)
        if "progress" in kw:
            values["progress"] = round(kw["progress"], 3)
        self._af_status = AfStatus(**values)

    # Autofocus jobs ----------------------------------------------------------------------------
    def _running(self) -> bool:
        return self._af is not None and self._af.is_alive

    def oneshot_af(self) -> AfJob:
        if self._running():
            return AfJob(False, 0, "autofocus operation already active")
        job_id = self._start("oneshot", "coarse")
        self._af = self.env.process(self._oneshot(job_id))
        return AfJob(True, job_id, "queued")

    def zoom_follow(self, ratio: float) -> AfJob:
        if not ratio > 0:
            return AfJob(False, 0, "invalid zoom ratio")
        if self._running():
            return AfJob(False, 0, "autofocus operation already active")
        job_id = self._start("zoom_follow", "path_moving", requested_ratio=round(ratio, 3))
        self._af = self.env.process(self._zoom_follow(job_id, ratio))
        return AfJob(True, job_id, "queued")

    def cancel_af(self, job_id: int = 0) -> str:
        """Stop the running job (``job_id`` 0: whichever runs); refused for another job's id."""
        if self._running():
            if job_id and job_id != self._af_status.job_id:
                raise InternalError("autofocus job id mismatch", resource="device")
            assert self._af is not None
            self._af.interrupt("cancel")
            self._af = None
            self.focus_motor.stop()
            self._update(state="cancelled", busy=False, message="cancelled")
            self._update(elapsed_ms=round((self.env.now - self._af_started) * 1000))
        return "cancellation requested"

    def _start(self, operation: str, state: str, **kw: Any) -> int:
        self._jobs += 1
        job_id = self._jobs
        self._af_status = self._status_of(job_id, operation, state, 0.0, True, self.env.now, **kw)
        return job_id

    def _finish(self, **kw: Any) -> None:
        self._update(
            state="completed",
            progress=1.0,
            busy=False,
            elapsed_ms=round((self.env.now - self._af_started) * 1000),
            **kw,
        )
        self._af = None

    def _oneshot(self, job_id: int) -> Generator[simpy.Event, Any, None]:
        lo, hi = self.focus_motor.limit.min_pos, self.focus_motor.limit.max_pos
        try:
            coarse = [lo + (hi - lo) * i / (COARSE_SAMPLES - 1) for i in range(COARSE_SAMPLES)]
            if self.focus_motor.position() > (lo + hi) / 2:
                coarse.reverse()  # sweep from the nearer end
            scores = []
            for i, pos in enumerate(coarse):
                yield self.focus_motor.move_to(pos)
                yield self.env.timeout(SETTLE_S)
                scores.append(self.metric(pos, i))
                self._update(progress=0.6 * (i + 1) / COARSE_SAMPLES, metric=round(max(scores), 2))
            best = coarse[max(range(len(scores)), key=scores.__getitem__)]
            step = (hi - lo) / (COARSE_SAMPLES - 1) / ((FINE_SAMPLES - 1) / 2)
            self._update(state="fine")
            fine = [best + step * (i - (FINE_SAMPLES - 1) / 2) for i in range(FINE_SAMPLES)]
            fine = [min(max(p, lo), hi) for p in fine]
            fine_scores = []
            for i, pos in enumerate(fine):
                yield self.focus_motor.move_to(pos)
                yield self.env.timeout(SETTLE_S)
                fine_scores.append(self.metric(pos, COARSE_SAMPLES + i))
                self._update(progress=0.6 + 0.3 * (i + 1) / FINE_SAMPLES)
            k = max(range(len(fine_scores)), key=fine_scores.__getitem__)
            target = _parabola_peak(fine, fine_scores, k)
            self._update(state="verifying")
            yield self.focus_motor.move_to(target)
            yield self.env.timeout(SETTLE_S)
            metric = self.metric(target, COARSE_SAMPLES + FINE_SAMPLES)
            spread = abs(target - fine[k])
            self._finish(
                best_focus=round(target),
                metric=round(metric, 2),
                confidence=round(min(1.0, max(0.0, metric / 1000)), 3),
                reproducibility=round(max(0.0, 1.0 - spread / step), 3),
                estimated_distance_m=self.optics.distance_of(self.zoom_motor.position(), target),
                message="Autofocus completed",
            )
        except simpy.Interrupt:
            return

    def _zoom_follow(self, job_id: int, ratio: float) -> Generator[simpy.Event, Any, None]:
        target = self.optics.zoom_position(ratio)
        try:
            start = self.zoom_motor.position()
            done = self.optics.follow(target, self.optics.distance_m)
            while not done.triggered:
                yield self.env.timeout(0.1)
                span = abs(target - start)
                moved = abs(self.zoom_motor.position() - start)
                self._update(progress=moved / span if span else 1.0)
            yield done
            focus = self.focus_motor.position()
            self._finish(
                best_focus=round(focus),
                estimated_distance_m=round(self.optics.distance_m, 2),
                message="Zoom follow completed",
            )
        except simpy.Interrupt:
            return


def _parabola_peak(xs: list[float], ys: list[float], k: int) -> float:
    """The vertex of the parabola through the best sample and its neighbours (equal spacing)."""
    if k == 0 or k == len(xs) - 1:
        return xs[k]
    y0, y1, y2 = ys[k - 1], ys[k], ys[k + 1]
    denom = y0 - 2 * y1 + y2
    if denom >= 0:
        return xs[k]
    offset = 0.5 * (y0 - y2) / denom
    return xs[k] + max(-1.0, min(1.0, offset)) * (xs[k + 1] - xs[k])
