"""A camera's motorised lens: zoom, focus and iris motors, and the autofocus controller.

Motors move at a fixed rate on the world clock (SimPy): a position is computed from where the motor
started, when, and its velocity, so reading it costs nothing; one SimPy process per move marks the
arrival. The scene is sharpest at focus position :meth:`Lens.ideal_focus` for the current zoom
(the zoom-follow curve at the scene's distance); the renderer blurs by the distance from it.

Autofocus one-shot is a SimPy process: a coarse sweep over the focus range, a fine sweep around the
best coarse sample, a parabola through the three best fine samples, then a move to that position and
a short verification. Each sample is a move plus one frame of settling; the contrast metric at a
position is a bell around the ideal with a little seeded noise. Cancel interrupts the process and
stops the focus motor where it is.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.camera_hw import (
    MOTOR_RESET_ZERO,
    MOTOR_RUNNING,
    MOTOR_STOPPED,
    AfJob,
    AfStatus,
    LensStatus,
    MotorLimit,
)
from hardware.ports.errors import InvalidInput, Unavailable
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.world import World

ZOOM_STEPS = 2000
FOCUS_STEPS = 3000
IRIS_MAX = 1023
ZOOM_SPEED = 800.0  # steps per second at speed 100
FOCUS_SPEED = 1200.0
IRIS_SPEED = 400.0
MAX_RATIO = 4.0
"""Optical zoom at the tele end; the wide end is 1x."""
SETTLE_S = 0.04
"""One frame of settling before the AF reads its contrast metric."""
COARSE_SAMPLES = 13
FINE_SAMPLES = 9
METRIC_WIDTH = 250.0
"""Focus steps over which the contrast metric falls to 1/e of its peak."""
BLUR_STEPS_PER_PX = 60.0
"""Focus steps of error per pixel of blur sigma at 1280 pixels of width."""


class Motor:
    """One stepper motor on the world clock: ``position()`` is exact at any instant."""

    def __init__(self, env: simpy.Environment, max_pos: int, full_speed: float, pos: float) -> None:
        self.env = env
        self.max_pos = max_pos
        self.full_speed = full_speed
        self.limit = MotorLimit(0, max_pos)
        self.state = MOTOR_STOPPED
        self._pos0 = float(pos)
        self._t0 = env.now
        self._velocity = 0.0
        self._target = float(pos)
        self._proc: simpy.Process | None = None

    def position(self) -> float:
        if self._velocity == 0.0:
            return self._pos0
        p = self._pos0 + self._velocity * (self.env.now - self._t0)
        return min(p, self._target) if self._velocity > 0 else max(p, self._target)

    def moving(self) -> bool:
        return self._velocity != 0.0

    def move_to(self, target: float, speed: float = 1.0, state: int = MOTOR_RUNNING) -> simpy.Event:
        """Start moving to ``target`` (clamped to the limits) at ``speed`` x full speed. The event
        fires with True on arrival, False if another command interrupts the move."""
        self._halt()
        target = min(max(float(target), self.limit.min_pos), self.limit.max_pos)
        done = self.env.event()
        distance = target - self._pos0
        if abs(distance) < 0.5 or speed <= 0:
            self.state = MOTOR_STOPPED
            done.succeed(True)
            return done
        self._velocity = math.copysign(self.full_speed * min(speed, 1.0), distance)
        self._target = target
        self.state = state
        self._proc = self.env.process(self._arrive(abs(distance / self._velocity), done))
        return done

    def run(self, speed: int) -> None:
        """Move continuously towards a limit at ``speed`` percent (sign = direction); 0 stops."""
        if speed == 0:
            self.stop()
        else:
            self.move_to(self.limit.max_pos if speed > 0 else self.limit.min_pos, abs(speed) / 100)

    def stop(self) -> None:
        self._halt()
        self.state = MOTOR_STOPPED

    def set_limit(self, limit: MotorLimit) -> None:
        if not 0 <= limit.min_pos < limit.max_pos <= self.max_pos:
            raise InvalidInput(f"limits must satisfy 0 <= min_pos < max_pos <= {self.max_pos}")
        self.limit = limit
        pos = self.position()
        if not limit.min_pos <= pos <= limit.max_pos:
            self.move_to(pos)

    def _halt(self) -> None:
        self._pos0 = self.position()
        self._t0 = self.env.now
        self._velocity = 0.0
        self._target = self._pos0
        if self._proc is not None and self._proc.is_alive and self._proc is not self.env.active_process:
            self._proc.interrupt("superseded")
        self._proc = None

    def _arrive(self, duration: float, done: simpy.Event) -> Generator[simpy.Event, Any, None]:
        try:
            yield self.env.timeout(duration)
        except simpy.Interrupt:
            done.succeed(False)
            return
        self._pos0 = self._target
        self._t0 = self.env.now
        self._velocity = 0.0
        self.state = MOTOR_STOPPED
        self._proc = None
        done.succeed(True)


class Lens:
    def __init__(self, world: World, camera_id: str) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self._key = world.streams.key(f"{camera_id}/lens")
        self.distance_m = 6.0 + 24.0 * float(hash_uniform(self._key, 0))
        """How far the scene is: where the zoom-follow curve puts sharp focus."""
        self.zoom_motor = Motor(self.env, ZOOM_STEPS, ZOOM_SPEED, 0)
        self.focus_motor = Motor(self.env, FOCUS_STEPS, FOCUS_SPEED, self.curve(0, self.distance_m))
        self.iris_motor = Motor(self.env, IRIS_MAX, IRIS_SPEED, 512)
        self.autofocus_enabled = False
        self.zoom_rz_done = True
        self.focus_rz_done = True
        self._jobs = 0
        self._af: simpy.Process | None = None
        self._af_status = self._status_of("", "none", "idle", 0.0, False, self.env.now)

    # Optics ----------------------------------------------------------------------------------
    @staticmethod
    def curve(zoom_pos: float, distance_m: float) -> float:
        """The zoom-follow curve: the focus position that is sharp at ``distance_m`` for a zoom."""
        z = zoom_pos / ZOOM_STEPS
        return 500.0 + 1700.0 * z**1.4 + 2400.0 / max(distance_m, 0.5) * (0.3 + z)

    @staticmethod
    def distance_of(zoom_pos: float, focus_pos: float) -> float:
        """Inverse of :meth:`curve` in the distance (the AF's distance estimate)."""
        z = zoom_pos / ZOOM_STEPS
        rest = focus_pos - 500.0 - 1700.0 * z**1.4
        return round(2400.0 * (0.3 + z) / rest, 2) if rest > 1 else 0.0

    def ideal_focus(self) -> float:
        return self.curve(self.zoom_motor.position(), self.distance_m)

    def zoom_ratio(self) -> float:
        return 1.0 + (MAX_RATIO - 1.0) * self.zoom_motor.position() / ZOOM_STEPS

    def defocus(self) -> float:
        """Focus steps away from sharp."""
        return abs(self.focus_motor.position() - self.ideal_focus())

    def blur_sigma(self, width: int) -> float:
        """Gaussian sigma in pixels of a ``width``-pixel frame for the current defocus."""
        return min(14.0, self.defocus() / BLUR_STEPS_PER_PX) * width / 1280

    def exposure(self) -> float:
        """Light through the iris relative to the default opening (1.0 at ADC 512)."""
        return max(0.05, self.iris_motor.position() / 512)

    def metric(self, focus_pos: float, sample: int) -> float:
        """The contrast metric the AF reads at ``focus_pos``: a bell around sharp, seeded noise."""
        bell = 1000.0 * math.exp(-(((focus_pos - self.ideal_focus()) / METRIC_WIDTH) ** 2))
        noise = float(hash_uniform(self._key, 1000 + self._jobs * 64 + sample)) - 0.5
        return bell + 4.0 * noise

    # Status ----------------------------------------------------------------------------------
    def status(self) -> LensStatus:
        return LensStatus(
            zoom_state=self.zoom_motor.state,
            focus_state=self.focus_motor.state,
            zoom_rz_done=self.zoom_rz_done,
            focus_rz_done=self.focus_rz_done,
            zoom_pos=round(self.zoom_motor.position()),
            focus_pos=round(self.focus_motor.position()),
            iris_adc=round(self.iris_motor.position()),
            autofocus_enabled=self.autofocus_enabled,
            zoom_limit=self.zoom_motor.limit,
            focus_limit=self.focus_motor.limit,
        )

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
                "effective_ratio": round(self.zoom_ratio(), 3),
            }
        )

    def _status_of(
        self, job_id: str, operation: str, state: str, progress: float, busy: bool, started: float, **kw: Any
    ) -> AfStatus:
        self._af_started = started
        base = {
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
            "effective_ratio": round(self.zoom_ratio(), 3),
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

    # Commands --------------------------------------------------------------------------------
    def zoom(self, speed: int) -> None:
        _check_speed(speed)
        self.zoom_motor.run(speed)
        if speed == 0 and self.autofocus_enabled:
            self.focus_motor.move_to(self.ideal_focus())

    def focus(self, speed: int) -> None:
        _check_speed(speed)
        self.cancel_af()
        self.focus_motor.run(speed)

    def set_autofocus(self, enable: bool) -> None:
        self.autofocus_enabled = enable
        if enable:
            self.oneshot_af()

    def set_zoom_level(self, level: float) -> None:
        if not 1.0 <= level <= MAX_RATIO:
            raise InvalidInput(f"zoom level must be between 1 and {MAX_RATIO:g}")
        target = (level - 1.0) / (MAX_RATIO - 1.0) * ZOOM_STEPS
        self.zoom_motor.move_to(target)
        if self.autofocus_enabled:
            self._follow(target, self.distance_m)

    def set_focus_level(self, level: float) -> None:
        if not 0.0 <= level <= 1.0:
            raise InvalidInput("focus level must be between 0 and 1")
        self.cancel_af()
        self.focus_motor.move_to(level * FOCUS_STEPS)

    def iris(self, speed: int) -> None:
        _check_speed(speed)
        self.iris_motor.run(speed)

    def iris_target(self, target: int) -> None:
        if not 0 <= target <= IRIS_MAX:
            raise InvalidInput(f"iris target must be between 0 and {IRIS_MAX}")
        self.iris_motor.move_to(target)

    def set_limits(self, zoom: MotorLimit | None, focus: MotorLimit | None) -> None:
        if zoom is not None:
            self.zoom_motor.set_limit(zoom)
        if focus is not None:
            self.focus_motor.set_limit(focus)

    def reset_zero(self, zoom: bool, focus: bool) -> None:
        self.cancel_af()
        self.env.process(self._zeroed(self._start_reset(zoom, focus), zoom, focus))

    def init(self) -> None:
        self.cancel_af()
        self.env.process(self._init(self._start_reset(True, True)))

    def goto(self, zoom_ratio: float, focus_distance_m: float) -> None:
        if not 1.0 <= zoom_ratio <= MAX_RATIO:
            raise InvalidInput(f"zoom_ratio must be between 1 and {MAX_RATIO:g}")
        if focus_distance_m <= 0:
            raise InvalidInput("focus_distance_m must be positive")
        self.cancel_af()
        target = (zoom_ratio - 1.0) / (MAX_RATIO - 1.0) * ZOOM_STEPS
        self.zoom_motor.move_to(target)
        self._follow(target, focus_distance_m)

    # Autofocus jobs ----------------------------------------------------------------------------
    def oneshot_af(self) -> AfJob:
        job_id = self._start("oneshot", "coarse")
        self._af = self.env.process(self._oneshot(job_id))
        return AfJob(True, job_id, "Autofocus started")

    def zoom_follow(self, ratio: float) -> AfJob:
        if not ratio > 0:
            raise InvalidInput("ratio must be positive")
        clamped = min(max(ratio, 1.0), MAX_RATIO)
        job_id = self._start("zoom_follow", "path_moving", requested_ratio=round(ratio, 3))
        self._af = self.env.process(self._zoom_follow(job_id, clamped))
        return AfJob(True, job_id, "Zoom follow started")

    def cancel_af(self) -> AfJob:
        s = self._af_status
        if self._af is not None and self._af.is_alive:
            self._af.interrupt("cancel")
            self._af = None
            self.focus_motor.stop()
            self._update(state="cancelled", busy=False, message="Autofocus cancelled")
            self._update(elapsed_ms=round((self.env.now - self._af_started) * 1000))
            return AfJob(True, s.job_id, "Autofocus cancelled")
        return AfJob(True, s.job_id, "No autofocus in progress")

    def _start(self, operation: str, state: str, **kw: Any) -> str:
        self.cancel_af()
        self._jobs += 1
        job_id = f"af-{self._jobs}"
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

    def _oneshot(self, job_id: str) -> Generator[simpy.Event, Any, None]:
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
                estimated_distance_m=self.distance_of(self.zoom_motor.position(), target),
                message="Autofocus completed",
            )
        except simpy.Interrupt:
            return

    def _zoom_follow(self, job_id: str, ratio: float) -> Generator[simpy.Event, Any, None]:
        target = (ratio - 1.0) / (MAX_RATIO - 1.0) * ZOOM_STEPS
        try:
            start = self.zoom_motor.position()
            done = self._follow(target, self.distance_m)
            while not done.triggered:
                yield self.env.timeout(0.1)
                span = abs(target - start)
                moved = abs(self.zoom_motor.position() - start)
                self._update(progress=moved / span if span else 1.0)
            yield done
            focus = self.focus_motor.position()
            self._finish(
                best_focus=round(focus),
                estimated_distance_m=round(self.distance_m, 2),
                message="Zoom follow completed",
            )
        except simpy.Interrupt:
            return

    def _follow(self, zoom_target: float, distance_m: float) -> simpy.Event:
        """Move zoom and focus together so focus stays on the curve: both arrive at once."""
        zoom_time = abs(zoom_target - self.zoom_motor.position()) / ZOOM_SPEED
        focus_target = self.curve(zoom_target, distance_m)
        focus_dist = abs(focus_target - self.focus_motor.position())
        speed = 1.0 if zoom_time <= 0 else min(1.0, focus_dist / FOCUS_SPEED / zoom_time)
        zoom_done = self.zoom_motor.move_to(zoom_target)
        focus_done = self.focus_motor.move_to(focus_target, speed if focus_dist else 1.0)
        return self.env.all_of([zoom_done, focus_done])

    def _start_reset(self, zoom: bool, focus: bool) -> simpy.Event:
        """Start both motors towards zero now; the event fires when both are there."""
        moves = []
        if zoom:
            self.zoom_rz_done = False
            moves.append(self.zoom_motor.move_to(0, 1.0, MOTOR_RESET_ZERO))
        if focus:
            self.focus_rz_done = False
            moves.append(self.focus_motor.move_to(0, 1.0, MOTOR_RESET_ZERO))
        return self.env.all_of(moves)

    def _zeroed(self, moves: simpy.Event, zoom: bool, focus: bool) -> Generator[simpy.Event, Any, None]:
        results = yield moves
        arrived = all(results.values())
        if zoom:
            self.zoom_rz_done = arrived
        if focus:
            self.focus_rz_done = arrived

    def _init(self, moves: simpy.Event) -> Generator[simpy.Event, Any, None]:
        yield from self._zeroed(moves, True, True)
        yield self._follow(self.zoom_motor.limit.min_pos, self.distance_m)

    # Snapshot --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "zoom": self.zoom_motor.position(),
            "focus": self.focus_motor.position(),
            "iris": self.iris_motor.position(),
            "autofocus": self.autofocus_enabled,
        }


def _check_speed(speed: int) -> None:
    if not -100 <= speed <= 100:
        raise InvalidInput("speed must be between -100 and 100")


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


class TwinGatewayLens:
    """The gateway's lens area over one camera of the world (looked up on each call)."""

    def __init__(self, world: World, camera_id: str) -> None:
        self._world = world
        self._id = camera_id

    @property
    def _lens(self) -> Lens:
        camera = self._world.cameras.get(self._id)
        if camera is None:
            raise Unavailable(f"camera {self._id} is not in the world")
        return camera.lens

    def status(self) -> LensStatus:
        return self._lens.status()

    def af_status(self) -> AfStatus:
        return self._lens.af_status()

    def zoom(self, speed: int) -> None:
        self._lens.zoom(speed)

    def focus(self, speed: int) -> None:
        self._lens.focus(speed)

    def set_autofocus(self, enable: bool) -> None:
        self._lens.set_autofocus(enable)

    def oneshot_af(self) -> AfJob:
        return self._lens.oneshot_af()

    def cancel_af(self) -> AfJob:
        return self._lens.cancel_af()

    def zoom_follow(self, ratio: float) -> AfJob:
        return self._lens.zoom_follow(ratio)

    def set_zoom_level(self, level: float) -> None:
        self._lens.set_zoom_level(level)

    def set_focus_level(self, level: float) -> None:
        self._lens.set_focus_level(level)

    def reset_zero(self, zoom: bool, focus: bool) -> None:
        self._lens.reset_zero(zoom, focus)

    def iris(self, speed: int) -> None:
        self._lens.iris(speed)

    def iris_target(self, target: int) -> None:
        self._lens.iris_target(target)

    def set_limits(self, zoom: MotorLimit | None, focus: MotorLimit | None) -> None:
        self._lens.set_limits(zoom, focus)

    def init(self) -> None:
        self._lens.init()

    def goto(self, zoom_ratio: float, focus_distance_m: float) -> None:
        self._lens.goto(zoom_ratio, focus_distance_m)
