"""The gateway's lens and peripherals areas over one camera of the world: each call looks the
camera up (so an adapter keeps working across resets and restores) and hands it to the part."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hardware.ports.camera_hw import (
    AfJob,
    AfStatus,
    AlarmOutputs,
    DeviceStatus,
    GpioPin,
    GpioRead,
    HwStatus,
    LensStatus,
    MotorLimit,
    PtzCommand,
    Switched,
)
from twin.camera.area import CameraArea

if TYPE_CHECKING:
    from twin.camera.lens import Lens
    from twin.camera.peripherals import Peripherals


class TwinGatewayLens(CameraArea):
    """The gateway's lens area over one camera of the world (looked up on each call)."""

    @property
    def _lens(self) -> Lens:
        return self.camera.lens

    def status(self) -> LensStatus:
        return self._lens.status()

    def af_status(self) -> AfStatus:
        return self._lens.af_status()

    def zoom(self, speed: int) -> None:
        self._lens.zoom(speed)

    def focus(self, speed: int) -> None:
        self._lens.focus(speed)

    def set_autofocus(self, enable: bool) -> str:
        return self._lens.set_autofocus(enable)

    def oneshot_af(self) -> AfJob:
        return self._lens.oneshot_af()

    def cancel_af(self, job_id: int = 0) -> str:
        return self._lens.cancel_af(job_id)

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


class TwinGatewayPeripherals(CameraArea):
    """The gateway's peripherals area over one camera of the world (looked up on each call)."""

    @property
    def _p(self) -> Peripherals:
        return self.camera.peripherals

    def device_status(self) -> DeviceStatus:
        return self._p.device_status()

    def capabilities(self) -> dict[str, bool]:
        return self._p.capabilities()

    def set_light(self, level: int) -> None:
        self._p.set_light(level)

    def set_ir_led(self, level: int) -> None:
        self._p.set_ir_led(level)

    def set_ir_cut(self, mode: str) -> None:
        self._p.set_ir_cut(mode)

    def ptz(self, command: PtzCommand) -> None:
        self._p.ptz(command)

    def gpio_read(self, pins: list[int] | None) -> GpioRead:
        return self._p.gpio_read(pins)

    def gpio_pin(self, pin: int) -> GpioPin:
        return self._p.gpio_pin(pin)

    def gpio_write(self, pin: int, value: bool) -> None:
        self._p.gpio_write(pin, value)

    def switch(self, what: str, enabled: bool, channel: int = 0) -> Switched:
        return self._p.switch(what, enabled, channel)

    def switched(self, what: str, channel: int = 0) -> Switched:
        return self._p.switched(what, channel)

    def alarm_outputs(self) -> AlarmOutputs:
        return self._p.alarm_outputs()

    def rs485_init(self, baudrate: int, config: str) -> HwStatus:
        return self._p.rs485_init(baudrate, config)

    def rs485_deinit(self) -> HwStatus:
        return self._p.rs485_deinit()

    def rs485_tx(self, data: bytes) -> HwStatus:
        return self._p.rs485_tx(data)
