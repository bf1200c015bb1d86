"""A camera's motorised lens: zoom, focus and iris motors, and the autofocus controller.

Motors (:class:`twin.camera.motor.Motor`) move at a fixed rate on the world clock. The scene is sharpest at
focus position :meth:`Lens.ideal_focus` for the current zoom (the zoom-follow curve at the scene's
distance); the renderer blurs by the distance from it.

Autofocus jobs are the lens's :class:`twin.camera.autofocus.Autofocus`. What the device-control
service refuses is ``InternalError`` (resource ``device``) with its message. Speeds beyond -100..100
are taken as the end of the range. As on the device, only the iris target is kept across a restart
(its ``lens_config.json``): one store document per camera; the motors start at the wide end and the
limits at their defaults.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.camera_hw import MOTOR_RESET_ZERO, LensStatus, MotorLimit
from hardware.ports.errors import InternalError
from twin.camera.autofocus import Autofocus
from twin.camera.motor import Motor
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.engine import Engine

ZOOM_STEPS = 2000
FOCUS_STEPS = 3000
IRIS_MAX = 1023
ZOOM_SPEED = 800.0  # steps per second at speed 100
FOCUS_SPEED = 1200.0
IRIS_SPEED = 400.0
MAX_RATIO = 4.0
"""Optical zoom at the tele end; the wide end is 1x."""
BLUR_STEPS_PER_PX = 60.0
"""Focus steps of error per pixel of blur sigma at 1280 pixels of width."""
LENS_KIND = "camera_lens"
"""Durable: one document per camera, keyed by its id: ``{"iris_target": n}`` once one was set."""
MANUAL_FOCUS_OFF = "manual focus disabled while autofocus is enabled"


def refused(message: str) -> InternalError:
    return InternalError(message, resource="device")


class Lens:
    """The lens port: zoom, focus and iris motors; its autofocus is :attr:`autofocus`."""

    def __init__(self, world: Engine, camera_id: str) -> None:
        self.world = world
        self.env = world.env
        self.camera_id = camera_id
        self._key = world.streams.key(f"{camera_id}/lens")
        self.distance_m = 6.0 + 24.0 * float(hash_uniform(self._key, 0))
        """How far the scene is: where the zoom-follow curve puts sharp focus."""
        self.zoom_motor = Motor(self.env, ZOOM_STEPS, ZOOM_SPEED, 0)
        self.focus_motor = Motor(self.env, FOCUS_STEPS, FOCUS_SPEED, self.curve(0, self.distance_m))
        self._docs = world.store.collection(LENS_KIND)
        iris = self._docs.get_as(camera_id, lambda doc: int(doc["iris_target"]))
        self.iris_motor = Motor(self.env, IRIS_MAX, IRIS_SPEED, 512 if iris is None else iris)
        self.autofocus_enabled = False
        self.zoom_rz_done = True
        self.focus_rz_done = True
        self.autofocus = Autofocus(self.env, self._key, self.zoom_motor, self.focus_motor, self)

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

    def zoom_position(self, ratio: float) -> float:
        """The zoom motor position of a ratio, clamped to the lens's range."""
        return (min(max(ratio, 1.0), MAX_RATIO) - 1.0) / (MAX_RATIO - 1.0) * ZOOM_STEPS

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

    # Commands --------------------------------------------------------------------------------
    def zoom(self, speed: int) -> None:
        self.zoom_motor.run(_speed(speed))
        if speed == 0 and self.autofocus_enabled:
            self.focus_motor.move_to(self.ideal_focus())

    def focus(self, speed: int) -> None:
        if self.autofocus_enabled and speed != 0:
            raise refused(MANUAL_FOCUS_OFF)
        self.autofocus.cancel_af()
        self.focus_motor.run(_speed(speed))

    def set_autofocus(self, enable: bool) -> str:
        """Enabling queues a one-shot job (refused while one runs); disabling cancels the running one."""
        if not enable:
            self.autofocus_enabled = False
            return self.autofocus.cancel_af()
        job = self.autofocus.oneshot_af()
        if not job.accepted:
            raise refused(job.message)
        self.autofocus_enabled = True
        return f"queued AF job {job.job_id}"

    def set_zoom_level(self, level: float) -> None:
        if not 0.0 <= level <= 1.0:
            raise refused("Level must be 0.0-1.0")
        limit = self.zoom_motor.limit
        target = round(limit.min_pos + level * (limit.max_pos - limit.min_pos))
        self.zoom_motor.move_to(target)
        if self.autofocus_enabled:
            self.follow(target, self.distance_m)

    def set_focus_level(self, level: float) -> None:
        if not 0.0 <= level <= 1.0:
            raise refused("Level must be 0.0-1.0")
        if self.autofocus_enabled:
            raise refused(MANUAL_FOCUS_OFF)
        self.autofocus.cancel_af()
        limit = self.focus_motor.limit
        self.focus_motor.move_to(round(limit.min_pos + level * (limit.max_pos - limit.min_pos)))

    def iris(self, speed: int) -> None:
        self.iris_motor.run(_speed(speed))

    def iris_target(self, target: int) -> None:
        """Drive the iris to an ADC value (beyond :data:`IRIS_MAX` is the end); kept across a restart."""
        target = min(target, IRIS_MAX)
        self.iris_motor.move_to(target)
        self._docs.put(self.camera_id, {"iris_target": target})

    def set_limits(self, zoom: MotorLimit | None, focus: MotorLimit | None) -> None:
        for name, limit in (("zoom", zoom), ("focus", focus)):
            if limit is not None and limit.min_pos >= limit.max_pos:
                raise refused(f"{name} limit: min_pos must be below max_pos")
        if zoom is not None:
            self.zoom_motor.set_limit(zoom)
        if focus is not None:
            self.focus_motor.set_limit(focus)

    def reset_zero(self, zoom: bool, focus: bool) -> None:
        self.autofocus.cancel_af()
        self.env.process(self._zeroed(self._start_reset(zoom, focus), zoom, focus))

    def init(self) -> None:
        self.autofocus.cancel_af()
        self.env.process(self._init(self._start_reset(True, True)))

    def goto(self, zoom_ratio: float, focus_distance_m: float) -> None:
        if not 1.0 <= zoom_ratio <= MAX_RATIO:
            raise refused(f"zoom ratio {zoom_ratio:.2f} out of range [1.00, {MAX_RATIO:.2f}]")
        if focus_distance_m <= 0:
            raise refused(f"focus distance {focus_distance_m:.2f} m must be positive")
        self.autofocus.cancel_af()
        target = self.zoom_position(zoom_ratio)
        self.zoom_motor.move_to(target)
        self.follow(target, focus_distance_m)

    def follow(self, zoom_target: float, distance_m: float) -> simpy.Event:
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
        yield self.follow(self.zoom_motor.limit.min_pos, self.distance_m)

    # Snapshot --------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        motors = {"zoom": self.zoom_motor, "focus": self.focus_motor, "iris": self.iris_motor}
        return {
            **{name: m.position() for name, m in motors.items()},
            "limits": {name: [m.limit.min_pos, m.limit.max_pos] for name, m in motors.items()},
            "autofocus": self.autofocus_enabled,
        }

    def set_state(self, state: dict[str, Any]) -> None:
        """Motors stopped where the snapshot had them (a move in progress is not resumed)."""
        motors = {"zoom": self.zoom_motor, "focus": self.focus_motor, "iris": self.iris_motor}
        for name, motor in motors.items():
            lo, hi = state["limits"][name]
            motor.limit = MotorLimit(lo, hi)
            motor.place(state[name])
        self.autofocus_enabled = state["autofocus"]


def _speed(speed: int) -> int:
    return max(-100, min(100, speed))
