"""A camera's peripherals: white light, IR LED and IR-cut filter, PTZ, GPIO, fan and heater (over
:mod:`twin.camera.thermal`), radar, alarm outputs, Wiegand readers and the RS485 port (the radar, the
Wiegand readers and the simulated RS485 port are collaborators from :mod:`twin.camera.field_lines`).

Day and night follow the world clock (:func:`twin.camera.video.scene.daylight`); with the IR-cut filter in
``auto`` the camera switches to night (grayscale, IR-lit) below :data:`NIGHT_BELOW` daylight and emits
``day_night_switch`` when it changes. GPIO inputs and Wiegand card reads come from seeded SimPy
processes and become events. PTZ pan and tilt are motors (tenths of a degree) over the panorama.

What the device-control service refuses is ``InternalError`` (resource ``device``) with its message; the
camera daemon's HAL answers (fan, heater, radar, alarm outputs, Wiegand, RS485) carry the HAL's return
code (0, ``HAL_EINVAL`` or ``HAL_ENODEV``). What the console sets (light, IR LED, IR-cut mode, PTZ
presets, GPIO outputs, the switches and the RS485 setup) is durable: one store document per camera,
written by each change and read back by a new environment.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.camera_hw import (
    HAL_EINVAL,
    HAL_ENODEV,
    AlarmOutputs,
    DeviceStatus,
    GpioPin,
    GpioRead,
    PtzCommand,
    Switched,
)
from hardware.ports.errors import InternalError
from hardware.ports.events import EventKind
from twin.camera.field_lines import CHANNELS, FieldLines, SimulatedRs485, _exp
from twin.camera.motor import Motor
from twin.camera.thermal import Thermal
from twin.camera.video.scene import SceneWorld, daylight, scene_of

if TYPE_CHECKING:
    from twin.camera.lens import Lens
    from twin.camera.power import Power

IRCUT_MODES = ("auto", "day", "night")
IRCUT_DAY, IRCUT_NIGHT = 1, 2
NIGHT_BELOW = 0.25
PAN_RANGE = 450  # tenths of a degree either side of centre
TILT_RANGE = 150
PTZ_SPEED = 300.0  # tenths of a degree per second at speed 100
PRESETS = 16
"""``device-control.yaml``'s ``capabilities.ptz.presets``."""
INPUT_PINS = (12, 13)
OUTPUT_PINS = (21, 22)
"""``device-control.yaml``'s GPIO catalogue."""
GPIO_MEAN_S = 900.0
"""Mean time between changes of one GPIO input."""
MCU_VERSION = "1.4.2"
SWITCHES = ("fan", "heat", "radar", "alarm-out", "wiegand")
PERIPHERALS_KIND = "camera_peripherals"
"""Durable: one document per camera, keyed by its id: what the console set (:meth:`Peripherals.settings`)."""


def refused(message: str) -> InternalError:
    """The device-control service's ``Status{success: false, message}``."""
    return InternalError(message, resource="device")


class Peripherals:
    """The peripherals port of one camera."""

    def __init__(self, world: SceneWorld, camera_id: str, lens: Lens, power: Power) -> None:
        self.world = world
        self.env = world.env
        self.id = camera_id
        self.lens, self.power = lens, power
        self._key = world.streams.key(f"{camera_id}/peripherals")
        self.scene = scene_of(world, camera_id)
        self.thermal = Thermal(world, camera_id)
        self.light_level = 0
        self.ir_led_level = 0
        self.ircut_mode = "auto"
        self.pan = Motor(self.env, 2 * PAN_RANGE, PTZ_SPEED, PAN_RANGE)
        self.tilt = Motor(self.env, 2 * TILT_RANGE, PTZ_SPEED, TILT_RANGE)
        self.presets: dict[int, tuple[float, float]] = {}
        self.gpio: dict[int, bool] = dict.fromkeys(INPUT_PINS + OUTPUT_PINS, False)
        self.field_lines = FieldLines(world, camera_id, self._key, self.scene, self.pan_deg)
        self.alarm_out = dict.fromkeys(CHANNELS, False)
        self.rs485 = SimulatedRs485(world, camera_id, self.save)
        self._docs = world.store.collection(PERIPHERALS_KIND)
        self._docs.get_as(camera_id, self._apply_settings)
        self._night = self.night()
        self.env.process(self._inputs())
        self.env.process(self.field_lines.cards())
        self.env.process(self._day_night())

    # Light -------------------------------------------------------------------------------------
    def daylight(self) -> float:
        return daylight(self.world.now())

    def night(self) -> bool:
        if self.ircut_mode == "auto":
            return self.daylight() < NIGHT_BELOW
        return self.ircut_mode == "night"

    def light_sensor(self) -> int:
        return min(1023, round(1023 * self.daylight() + 2.0 * self.light_level))

    def set_light(self, level: int) -> None:
        _level(level)
        self.light_level = level
        self.save()

    def set_ir_led(self, level: int) -> None:
        _level(level)
        self.ir_led_level = level
        self.save()

    def set_ir_cut(self, mode: str) -> None:
        if mode not in IRCUT_MODES:
            raise refused("Failed to set IR-cut mode")
        self.ircut_mode = mode
        self._check_day_night()
        self.save()

    def _check_day_night(self) -> None:
        night = self.night()
        if night != self._night:
            self._night = night
            self.world.emit(EventKind.CAMERA_DAY_NIGHT, self.id, mode="night" if night else "day")

    def _day_night(self) -> Generator[simpy.Event, Any, None]:
        while True:
            yield self.env.timeout(60.0)
            self._check_day_night()

    # PTZ -----------------------------------------------------------------------------------------
    def pan_deg(self) -> float:
        return round((self.pan.position() - PAN_RANGE) / 10, 2)

    def tilt_deg(self) -> float:
        return round((self.tilt.position() - TILT_RANGE) / 10, 2)

    def view_offset(self) -> tuple[float, float]:
        """Pan and tilt as -1..1 of their range: where the view sits in the panorama."""
        return (self.pan.position() - PAN_RANGE) / PAN_RANGE, (self.tilt.position() - TILT_RANGE) / TILT_RANGE

    def ptz(self, cmd: PtzCommand) -> None:
        """``pan`` (``left``/``right``), ``tilt`` (``up``/``down``; any other direction stops that axis),
        ``stop``, ``preset`` (1..:data:`PRESETS`), ``zoom`` or ``focus``; speeds above 100 are 100."""
        lens = self.lens
        speed = min(cmd.speed, 100)
        if cmd.action == "stop":
            self.pan.stop()
            self.tilt.stop()
        elif cmd.action in ("pan", "tilt"):
            motor = self.pan if cmd.action == "pan" else self.tilt
            sign = {"pan": {"left": -1, "right": 1}, "tilt": {"up": 1, "down": -1}}[cmd.action].get(
                cmd.direction.lower(), 0
            )
            if sign == 0 or speed == 0:
                motor.stop()
            else:
                motor.run(sign * speed)
        elif cmd.action == "preset":
            if not 1 <= cmd.preset_id <= PRESETS:
                raise refused(f"Preset ID must be 1-{PRESETS}")
            self._preset(cmd.preset_id, speed or 100)
        elif cmd.action == "zoom":
            lens.zoom(cmd.zoom_speed)
        else:
            lens.focus(cmd.focus_speed)

    def _preset(self, preset_id: int, speed: int) -> None:
        """Go to a stored preset; an unknown preset stores the current position under that id."""
        if preset_id not in self.presets:
            self.presets[preset_id] = (self.pan.position(), self.tilt.position())
            self.save()
            return
        pan, tilt = self.presets[preset_id]
        done = self.env.all_of([self.pan.move_to(pan, speed / 100), self.tilt.move_to(tilt, speed / 100)])
        self.env.process(self._reached(done, preset_id))

    def _reached(self, done: simpy.Event, preset_id: int) -> Generator[simpy.Event, Any, None]:
        results = yield done
        if all(results.values()):
            self.world.emit(EventKind.CAMERA_PTZ_PRESET, self.id, preset_id=preset_id)

    # GPIO ----------------------------------------------------------------------------------------
    def gpio_pin(self, pin: int) -> GpioPin:
        """The MCU's read of one pin; one the device lacks answers no data."""
        if pin not in self.gpio:
            return GpioPin(pin, False, "GPIO read returned no data", _direction(pin))
        return GpioPin(pin, self.gpio[pin], "", _direction(pin))

    def gpio_read(self, pins: list[int] | None) -> GpioRead:
        wanted = pins if pins else list(self.gpio)
        return GpioRead(tuple(self.gpio), INPUT_PINS, OUTPUT_PINS, tuple(self.gpio_pin(p) for p in wanted))

    def gpio_write(self, pin: int, value: bool) -> None:
        if pin not in OUTPUT_PINS:
            raise refused(f"MCU raw request failed: {-22}")
        if self.gpio[pin] != value:
            self.gpio[pin] = value
            self.world.emit(EventKind.CAMERA_GPIO_CHANGE, self.id, pin=pin, value=value, direction="output")
            self.save()

    def _inputs(self) -> Generator[simpy.Event, Any, None]:
        """Each input pin flips at seeded exponential intervals; one process for all of them."""
        n = 0
        due = {}
        for pin in INPUT_PINS:
            n += 1
            due[pin] = self.env.now + _exp(self._key, n, GPIO_MEAN_S)
        while True:
            pin = min(due, key=due.__getitem__)
            yield self.env.timeout(max(0.0, due[pin] - self.env.now))
            self.gpio[pin] = not self.gpio[pin]
            self.world.emit(
                EventKind.CAMERA_GPIO_CHANGE, self.id, pin=pin, value=self.gpio[pin], direction="input"
            )
            n += 1
            due[pin] = self.env.now + _exp(self._key, n, GPIO_MEAN_S)

    # Switches ------------------------------------------------------------------------------------
    def switch(self, what: str, enabled: bool, channel: int = 0) -> Switched:
        """The HAL's answer: the new state, or an error code for a channel it lacks."""
        if what == "fan":
            self.thermal.set(fan=enabled)
        elif what == "heat":
            self.thermal.set(heater=enabled)
        elif what == "radar":
            self.field_lines.radar = enabled
        elif what in ("alarm-out", "wiegand"):
            table = self.alarm_out if what == "alarm-out" else self.field_lines.wiegand
            if channel not in table:
                return Switched(False, HAL_EINVAL)
            table[channel] = enabled
        else:
            return Switched(False, HAL_ENODEV)
        self.save()
        return Switched(enabled)

    def switched(self, what: str, channel: int = 0) -> Switched:
        if what in ("alarm-out", "wiegand"):
            table = self.alarm_out if what == "alarm-out" else self.field_lines.wiegand
            if channel not in table:
                return Switched(False, HAL_EINVAL)
            enabled = table[channel]
        else:
            thermal = self.thermal
            enabled = {"fan": thermal.fan, "heat": thermal.heater, "radar": self.field_lines.radar}[what]
        return Switched(enabled)

    def alarm_outputs(self) -> AlarmOutputs:
        return AlarmOutputs(
            tuple(self.alarm_out[c] for c in CHANNELS), tuple(self.field_lines.wiegand[c] for c in CHANNELS)
        )

    # Durable settings ------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What the console set: the document kept in the store."""
        return {
            "light": self.light_level,
            "ir_led": self.ir_led_level,
            "ircut": self.ircut_mode,
            "presets": {str(k): list(v) for k, v in self.presets.items()},
            "outputs": {str(p): self.gpio[p] for p in OUTPUT_PINS},
            "radar": self.field_lines.radar,
            "alarm_out": {str(k): v for k, v in self.alarm_out.items()},
            "wiegand": {str(k): v for k, v in self.field_lines.wiegand.items()},
            "rs485": dict(self.rs485.setup) if self.rs485.setup is not None else None,
            "fan": self.thermal.fan,
            "heater": self.thermal.heater,
        }

    def _apply_settings(self, doc: dict[str, Any]) -> None:
        self.light_level, self.ir_led_level = int(doc["light"]), int(doc["ir_led"])
        self.ircut_mode = str(doc["ircut"])
        self.presets = {int(k): (float(v[0]), float(v[1])) for k, v in doc["presets"].items()}
        self.gpio.update({int(k): bool(v) for k, v in doc["outputs"].items() if int(k) in OUTPUT_PINS})
        self.field_lines.radar = bool(doc["radar"])
        self.alarm_out = {int(k): bool(v) for k, v in doc["alarm_out"].items()}
        self.field_lines.wiegand = {int(k): bool(v) for k, v in doc["wiegand"].items()}
        self.rs485.setup = dict(doc["rs485"]) if doc["rs485"] is not None else None
        self.thermal.set(fan=bool(doc["fan"]), heater=bool(doc["heater"]))

    def save(self) -> None:
        self._docs.put(self.id, self.settings())

    # Snapshot ----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The durable settings, with every GPIO pin (inputs too) and where the pan and tilt are."""
        settings = self.settings()
        del settings["outputs"]
        return settings | {
            "pan": self.pan.position(),
            "tilt": self.tilt.position(),
            "gpio": {str(k): v for k, v in self.gpio.items()},
        }

    def set_state(self, state: dict[str, Any]) -> None:
        self._apply_settings(state | {"outputs": {}})
        self._night = self.night()
        self.pan.place(state["pan"])
        self.tilt.place(state["tilt"])
        self.gpio = {int(k): v for k, v in state["gpio"].items()}
        self.save()

    # Status --------------------------------------------------------------------------------------
    def device_status(self) -> DeviceStatus:
        lens = self.lens
        return DeviceStatus(
            soc_temp_c=self.thermal.soc_temp(),
            mcu_temp_c=self.thermal.mcu_temp(),
            light_sensor=self.light_sensor(),
            ptz_pan_pos=round(self.pan_deg()),
            ptz_tilt_pos=round(self.tilt_deg()),
            zoom_pos=round(lens.zoom_motor.position()),
            focus_pos=round(lens.focus_motor.position()),
            autofocus_enabled=lens.autofocus_enabled,
            ircut_mode=IRCUT_NIGHT if self.night() else IRCUT_DAY,
            white_light_level=self.light_level,
            ir_led_level=self.ir_led_level,
            mcu_version=MCU_VERSION,
            mcu_uptime_ms=round(self.power.uptime() * 1000),
        )

    def capabilities(self) -> dict[str, bool]:
        return {
            "has_video": True,
            "has_codec": True,
            "has_led": True,
            "has_sensor": True,
            "has_mcu": True,
            "has_env_ctrl": True,
            "has_alarm": True,
            "has_rs485": True,
            "has_osd": True,
            "has_draw": True,
            "has_audio": True,
        }


def _level(level: int) -> None:
    if not 0 <= level <= 100:
        raise refused("Level must be 0-100")


def _direction(pin: int) -> str:
    return "input" if pin in INPUT_PINS else "output" if pin in OUTPUT_PINS else ""
