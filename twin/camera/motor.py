"""A stepper motor on the world clock: lens zoom, focus and iris, PTZ pan and tilt.

The position is computed from where the motor started, when, and its velocity, so reading it costs
nothing; one SimPy process per move marks the arrival, and a new command interrupts the move.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

from hardware.ports.camera_hw import MOTOR_RUNNING, MOTOR_STOPPED, MotorLimit
from hardware.ports.errors import InvalidInput


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

    def place(self, pos: float) -> None:
        """Put the motor at ``pos``, stopped (restoring a snapshot)."""
        self._halt()
        self._pos0 = self._target = float(pos)
        self.state = MOTOR_STOPPED

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
