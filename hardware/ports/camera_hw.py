"""The camera's hardware areas as its gateway serves them: lens and autofocus, peripherals (light,
IR, PTZ, GPIO, fan, heater, radar, alarm outputs, Wiegand, RS485), and the picture settings the
camera daemon applies to every stream (image, transform, OSD, privacy masks, AI overlay). Audio is in
:mod:`hardware.ports.camera_audio`.

Positions are motor steps; picture coordinates are fractions of the frame ([0, 1], top-left origin).

The device-control service answers most commands with a proto ``Status``; one it refuses
(``success`` false) is raised as ``InternalError`` with resource ``device``, carrying the service's message
(the gateway passes some of those on as a 200 answer, others as 7000, as each handler does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# Lens motor states, as the device's ``device.proto`` numbers them.
MOTOR_NO_CFG, MOTOR_STOPPED, MOTOR_RUNNING, MOTOR_RESET_ZERO, MOTOR_ERROR = 0, 1, 2, 3, 4


@dataclass(frozen=True, slots=True)
class MotorLimit:
    min_pos: int
    max_pos: int


@dataclass(frozen=True, slots=True)
class LensStatus:
    zoom_state: int
    focus_state: int
    zoom_rz_done: bool
    focus_rz_done: bool
    zoom_pos: int
    focus_pos: int
    iris_adc: int
    autofocus_enabled: bool
    zoom_limit: MotorLimit
    focus_limit: MotorLimit


@dataclass(frozen=True, slots=True)
class AfStatus:
    """``GET device/lens/af/status``: the current (or last) autofocus job."""

    job_id: int
    operation: str
    """``none``, ``startup``, ``oneshot``, ``zoom_follow``."""
    state: str
    """``idle``, ``coarse``, ``fine``, ``verifying``, ``path_moving``, ``completed``, ``cancelled``…"""
    progress: float
    busy: bool
    elapsed_ms: int
    error_code: int
    message: str
    anchor_valid: bool
    requested_ratio: float
    effective_ratio: float
    zoom_pos: int
    focus_pos: int
    best_focus: int
    metric: float
    confidence: float
    reproducibility: float
    estimated_distance_m: float


@dataclass(frozen=True, slots=True)
class AfJob:
    accepted: bool
    job_id: int
    message: str


@dataclass(frozen=True, slots=True)
class DeviceStatus:
    soc_temp_c: float
    mcu_temp_c: float
    light_sensor: int
    ptz_pan_pos: int
    """Degrees."""
    ptz_tilt_pos: int
    zoom_pos: int
    focus_pos: int
    autofocus_enabled: bool
    ircut_mode: int
    """The filter now: 1 day, 2 night (``device.proto``'s ``IrCutMode``)."""
    white_light_level: int
    ir_led_level: int
    mcu_version: str
    mcu_uptime_ms: int


@dataclass(frozen=True, slots=True)
class GpioPin:
    pin: int
    value: bool
    error: str
    """Empty when the read worked, else why not."""
    direction: str
    """``input``, ``output`` or empty (a pin the configuration does not list)."""


@dataclass(frozen=True, slots=True)
class GpioRead:
    available_pins: tuple[int, ...]
    input_pins: tuple[int, ...]
    output_pins: tuple[int, ...]
    results: tuple[GpioPin, ...]


HAL_EINVAL, HAL_ENODEV = -22, -19
"""The HAL's return codes the daemon passes on: a value the hardware refuses, a line it lacks or a port
not opened (0 is success)."""


@dataclass(frozen=True, slots=True)
class Switched:
    """What fan, heat, radar, alarm-out and wiegand answer: the state and the HAL's return code."""

    enabled: bool
    rc: int = 0


@dataclass(frozen=True, slots=True)
class AlarmOutputs:
    """The alarm outputs' and the Wiegand readers' states, by channel."""

    alarm_out: tuple[bool, ...]
    wiegand: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class HwStatus:
    """The camera daemon's ``Status`` for the RS485 port: the HAL's return code (0 when it worked)."""

    rc: int = 0

    @property
    def success(self) -> bool:
        return self.rc == 0


@dataclass(frozen=True, slots=True)
class PtzCommand:
    action: str
    direction: str = ""
    speed: int = 0
    preset_id: int = 0
    zoom_speed: int = 0
    focus_speed: int = 0


# Picture ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ImageSettings:
    """ISP parameters. The four picture ones are -100..100 here (0 = neutral; the daemon's API shows
    them 0..100, 50 = neutral); the rest are the daemon's own values."""

    brightness: int = 0
    contrast: int = 0
    saturation: int = 0
    sharpness: int = 0
    manual_mode: bool = False
    auto_exposure: bool = True
    backlight: int = 0
    exposure_time_us: int = 33_333
    gain: int = 0
    noise_reduction: int = 50
    wdr_value: int = 0
    powerline_freq: int = 1
    """0 off, 1 50 Hz, 2 60 Hz."""
    awb_index: int = -1
    """-1 automatic white balance, else a preset 0..16."""


@dataclass(frozen=True, slots=True)
class Transform:
    flip: bool = False
    """Upside down."""
    mirror: bool = False
    """Left-right."""
    rotation: int = 0
    """0, 90, 180 or 270 degrees clockwise."""
    dewarp: bool = False
    """Lens distortion correction (the picture is already rectilinear in the twin)."""
    grayscale: bool = False
    dis: bool = False
    """Digital image stabilisation."""
    eis: bool = False
    """Electronic (gyro-assisted) image stabilisation."""


@dataclass(frozen=True, slots=True)
class OsdText:
    id: str
    text: str
    x: float
    y: float
    font_size: float = 24.0
    text_color: int = 0xFFFFFF
    """RGB as an integer."""
    enabled: bool = True
    h_align: int = 0
    v_align: int = 0


@dataclass(frozen=True, slots=True)
class OsdDatetime:
    id: str
    x: float
    y: float
    format: str = "%Y-%m-%d %H:%M:%S"
    font_size: float = 24.0
    text_color: int = 0xFFFFFF
    enabled: bool = True
    h_align: int = 0
    v_align: int = 0


OSD_IMAGE_DIR = "/data/aipc/etc/osd"
"""Where ``media/osd/upload-image`` puts an image (the device's ``<root>/etc/osd``)."""


@dataclass(frozen=True, slots=True)
class OsdImage:
    id: str
    image_path: str
    """An uploaded OSD image: ``OSD_IMAGE_DIR/<name>``."""
    x: float
    y: float
    width: float = 0.1
    """Of the frame, (0, 1]."""
    height: float = 0.1
    enabled: bool = True
    h_align: int = 0
    v_align: int = 0


@dataclass(frozen=True, slots=True)
class OsdStream:
    stream_name: str
    text_overlays: tuple[OsdText, ...] = ()
    datetime_overlays: tuple[OsdDatetime, ...] = ()
    image_overlays: tuple[OsdImage, ...] = ()


@dataclass(frozen=True, slots=True)
class PrivacyRegion:
    """A static mask: a polygon of up to 8 vertices, fractions of the frame."""

    id: str
    name: str = ""
    enabled: bool = False
    points_x: tuple[float, ...] = ()
    points_y: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class PrivacyMaskConfig:
    """The camera daemon's ``PrivacyMaskConfig``. ``dpm_*`` (masking detected objects by label) are
    kept and answered but not drawn."""

    enabled: bool = False
    color: int = 0
    """0xRRGGBB the regions are filled with."""
    blur_radius: int = 0
    """0..64; above 0 the regions are blurred instead of filled."""
    regions: tuple[PrivacyRegion, ...] = ()
    dpm_enabled: bool = False
    dpm_labels: str = ""
    dpm_mode: str = ""
    dpm_color: int = 0


@dataclass(frozen=True, slots=True)
class AiOverlay:
    enabled: bool = False
    show_label: bool = True
    show_confidence: bool = True
    line_thickness: int = 2


@dataclass(frozen=True, slots=True)
class Detection:
    """One detection of the camera's AI model; the box in fractions of the frame."""

    label: str
    confidence: float
    x: float
    y: float
    w: float
    h: float
    object_id: int = -1
    """The ground-truth object it came from; -1 for a false positive."""


@dataclass(frozen=True, slots=True)
class OsdImageFile:
    name: str
    content_type: str
    data: bytes = field(repr=False)


# Areas -----------------------------------------------------------------------------------------
@runtime_checkable
class GatewayLens(Protocol):
    """Zoom, focus and iris motors. Moves take time on the world clock."""

    def status(self) -> LensStatus: ...

    def zoom(self, speed: int) -> None:
        """Run the zoom motor at ``speed`` (-100..100, negative = wide); 0 stops."""

    def focus(self, speed: int) -> None:
        """Run the focus motor at ``speed`` (-100..100, negative = near); 0 stops."""

    def set_autofocus(self, enable: bool) -> str:
        """Continuous autofocus: refocus after every zoom move. Answers the service's message."""

    def set_zoom_level(self, level: float) -> None:
        """Zoom as a fraction of the zoom limits (0.0 = widest, 1.0 = longest)."""

    def set_focus_level(self, level: float) -> None:
        """Focus as a fraction of the focus limits (0.0 = near, 1.0 = far)."""

    def reset_zero(self, zoom: bool, focus: bool) -> None: ...

    def iris(self, speed: int) -> None: ...

    def iris_target(self, target: int) -> None:
        """Iris ADC value (0..1023) to drive to."""

    def set_limits(self, zoom: MotorLimit | None, focus: MotorLimit | None) -> None: ...

    def init(self) -> None:
        """Reset both motors to zero, then return to the wide end in focus."""

    def goto(self, zoom_ratio: float, focus_distance_m: float) -> None: ...


@runtime_checkable
class GatewayAutofocus(Protocol):
    """The lens's autofocus jobs, numbered from 1; one runs at a time."""

    def af_status(self) -> AfStatus: ...

    def oneshot_af(self) -> AfJob:
        """Sweep focus and settle at the sharpest position; ``af_status`` shows progress. Not accepted
        while another job runs."""

    def cancel_af(self, job_id: int = 0) -> str:
        """Cancel the running job (``job_id`` 0: whichever); refused for another job's id."""

    def zoom_follow(self, ratio: float) -> AfJob:
        """Zoom to ``ratio`` with focus tracking the zoom curve. ``InvalidInput`` unless ratio > 0."""


@runtime_checkable
class GatewayPeripherals(Protocol):
    def device_status(self) -> DeviceStatus: ...

    def capabilities(self) -> dict[str, bool]: ...

    def set_light(self, level: int) -> None:
        """White light 0..100."""

    def set_ir_led(self, level: int) -> None: ...

    def set_ir_cut(self, mode: str) -> None:
        """``auto``, ``day`` or ``night``."""

    def ptz(self, command: PtzCommand) -> None: ...

    def gpio_read(self, pins: list[int] | None) -> GpioRead: ...

    def gpio_pin(self, pin: int) -> GpioPin:
        """A pin the device lacks reads with an ``error``."""

    def gpio_write(self, pin: int, value: bool) -> None:
        """Refused for an input pin or one the device lacks."""

    def switch(self, what: str, enabled: bool, channel: int = 0) -> Switched:
        """``fan``, ``heat``, ``radar``, ``alarm-out`` or ``wiegand``; an unknown channel is a HAL error
        (``rc`` not 0)."""

    def switched(self, what: str, channel: int = 0) -> Switched: ...

    def alarm_outputs(self) -> AlarmOutputs: ...


@runtime_checkable
class Rs485Line(Protocol):
    """A camera's RS485 port: the simulated one, or a real serial port on this machine. Each call
    answers the HAL's return code as the camera daemon does."""

    def rs485_init(self, baudrate: int, config: str) -> HwStatus:
        """``config``: data bits, parity, stop bits (``8N1``...); not three characters long: ``8N1``."""

    def rs485_deinit(self) -> HwStatus: ...

    def rs485_tx(self, data: bytes) -> HwStatus:
        """A HAL error unless initialised; what comes back on the line becomes ``camera.rs485_rx``."""


@runtime_checkable
class GatewayPicture(Protocol):
    """The picture settings the camera daemon applies to its streams."""

    def image(self) -> ImageSettings: ...

    def set_image(self, settings: ImageSettings) -> None: ...

    def transform(self) -> Transform: ...

    def set_transform(self, transform: Transform) -> None: ...

    def osd(self) -> tuple[OsdStream, ...]: ...

    def set_osd(self, streams: tuple[OsdStream, ...]) -> None:
        """Replace the OSD of each named stream; a stream the camera lacks is skipped."""

    def upload_osd_image(self, name: str, content_type: str, data: bytes) -> OsdImageFile:
        """Kept under ``name`` (one that does not decode is kept but draws nothing)."""

    def osd_image(self, name: str) -> OsdImageFile: ...

    def privacy_masks(self) -> PrivacyMaskConfig: ...

    def set_privacy_masks(self, config: PrivacyMaskConfig) -> None: ...

    def ai_overlay(self) -> AiOverlay: ...

    def set_ai_overlay(self, overlay: AiOverlay) -> None: ...

    def detections(self) -> list[Detection]:
        """What the loaded model sees now (empty with the camera service down)."""
