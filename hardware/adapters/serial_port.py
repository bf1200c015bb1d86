"""A camera's RS485 on a real serial port: any pyserial URL (``/dev/ttyUSB0``, ``loop://``, a pty,
``rfc2217://``...) as the camera's RS485 line (:class:`~hardware.ports.camera_hw.Rs485Line`), in
place of the simulated one.

``rs485/init`` opens the port with the requested baud rate and ``config`` (data bits, parity, stop
bits: ``8N1``, ``7E1``...; like the device's daemon, a config that is not three characters long
means ``8N1``); ``rs485/deinit`` closes it; ``rs485/tx`` writes the bytes. Each answers the camera
daemon's ``Status`` as the simulated port does: the HAL's return code, 0, -22 for a value the UART
refuses or -19 for a port that is not initialised. What comes back on the line is read by one
thread per open port and handed, one frame per burst (a frame ends at a silence of 3.5 characters,
at least :data:`MIN_FRAME_GAP_S`), to ``on_rx`` on the event loop that opened the port, where the
world emits it as ``camera.rs485_rx`` like the simulated port's echo.

pyserial's exceptions stop here: a port that cannot be opened, configured, written or read
(unplugged, closed under us) is :class:`~hardware.ports.errors.InternalError` with resource
``device`` (the gateway's 7000, as when its call to the device-control service fails), raised
``from`` the pyserial error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import serial

from hardware.ports.camera_hw import HAL_EINVAL, HAL_ENODEV, HwStatus
from hardware.ports.errors import InternalError

log = logging.getLogger(__name__)

BAUD_RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200)
"""The rates the device's MCU UART takes (the simulated port takes the same)."""
DATA_BITS = {"5": serial.FIVEBITS, "6": serial.SIXBITS, "7": serial.SEVENBITS, "8": serial.EIGHTBITS}
PARITIES = {
    "N": serial.PARITY_NONE,
    "E": serial.PARITY_EVEN,
    "O": serial.PARITY_ODD,
    "M": serial.PARITY_MARK,
    "S": serial.PARITY_SPACE,
}
STOP_BITS = {"1": serial.STOPBITS_ONE, "2": serial.STOPBITS_TWO}
CONFIG_LEN = 3
"""The daemon copies the config only when it has exactly three characters, else keeps ``8N1``."""
DEFAULT_CONFIG = "8N1"
READ_TIMEOUT_S = 0.2
"""How long one read waits for a first byte: also how soon the reader notices a close."""
MIN_FRAME_GAP_S = 0.02
"""Silence that ends a frame at the least (USB adapters and ptys deliver in bursts)."""
MAX_FRAME = 4096
JOIN_TIMEOUT_S = 2.0
OK = HwStatus()
EINVAL = HwStatus(HAL_EINVAL)
"""A baud rate or config the UART refuses."""
ENODEV = HwStatus(HAL_ENODEV)
"""A write before ``rs485/init``."""


class SerialPortError(OSError):
    """A serial port that cannot be used at start-up: the message names the camera, the URL and why."""


def line_settings(baudrate: int, config: str) -> dict[str, Any] | None:
    """pyserial's keyword arguments for ``baudrate`` and ``config``; ``None`` for a value the UART
    refuses."""
    if len(config) != CONFIG_LEN:
        config = DEFAULT_CONFIG
    bits, parity, stop = config[0], config[1].upper(), config[2]
    if baudrate not in BAUD_RATES or bits not in DATA_BITS or parity not in PARITIES or stop not in STOP_BITS:
        return None
    return {
        "baudrate": baudrate,
        "bytesize": DATA_BITS[bits],
        "parity": PARITIES[parity],
        "stopbits": STOP_BITS[stop],
    }


def check_url(url: str) -> None:
    """``ValueError`` unless pyserial knows how to open ``url`` (its scheme, its options); nothing is
    opened."""
    if not url:
        raise ValueError("a serial port URL is empty")
    try:
        serial.serial_for_url(url, do_not_open=True)
    except (ValueError, serial.SerialException) as err:
        raise ValueError(f"{url!r} is not a serial port URL pyserial can open: {err}") from err


class SerialRs485:
    """One camera's RS485 line over the pyserial URL ``url``; received frames go to ``on_rx``."""

    def __init__(self, name: str, url: str, on_rx: Callable[[bytes], None]) -> None:
        self.name = name
        self.url = url
        self._on_rx = on_rx
        self._port: serial.SerialBase | None = None
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._failure: Exception | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._gap = MIN_FRAME_GAP_S

    # Start-up ----------------------------------------------------------------------------------
    def check(self) -> None:
        """Open and close the port once: :class:`SerialPortError` naming the camera and the URL if
        that fails, so a wrong device path stops the start rather than the first ``rs485/init``."""
        try:
            check_url(self.url)
            port = serial.serial_for_url(self.url, timeout=READ_TIMEOUT_S)
        except Exception as err:  # handlers raise more than SerialException (a bad loop:// option: KeyError)
            raise SerialPortError(f"{self.name}: RS485 port {self.url} cannot be opened: {err}") from err
        port.close()

    # The port ------------------------------------------------------------------------------------
    def rs485_init(self, baudrate: int, config: str) -> HwStatus:
        settings = line_settings(baudrate, config)
        if settings is None:
            return EINVAL
        if self._port is not None and self._failure is None:
            try:
                self._port.apply_settings(settings)
            except (serial.SerialException, OSError, ValueError) as err:
                raise _device("RS485 port cannot be configured", err) from err
            self._gap = _frame_gap(settings)
            return OK
        self.rs485_deinit()
        try:
            port = serial.serial_for_url(self.url, timeout=READ_TIMEOUT_S, **settings)
        except Exception as err:  # whatever the URL handler raises: the port cannot be had
            raise _device("RS485 port cannot be opened", err) from err
        with contextlib.suppress(RuntimeError):  # no loop: frames are handed over on the reader thread
            self._loop = asyncio.get_running_loop()
        self._port, self._failure, self._gap = port, None, _frame_gap(settings)
        self._stop = stop = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(port, stop), name=f"rs485-{self.name}")
        self._reader.daemon = True
        self._reader.start()
        return OK

    def rs485_deinit(self) -> HwStatus:
        port, reader = self._port, self._reader
        self._port = self._reader = None
        if port is None:
            return OK
        self._stop.set()
        with contextlib.suppress(Exception):
            port.cancel_read()  # type: ignore[attr-defined]  # the native ports' (stubs: SerialBase)
        if reader is not None:
            reader.join(JOIN_TIMEOUT_S)
        with contextlib.suppress(Exception):
            port.close()
        return OK

    def rs485_tx(self, data: bytes) -> HwStatus:
        port = self._port
        if port is None:
            return ENODEV
        if self._failure is not None:
            raise _device("RS485 port failed", self._failure) from self._failure
        try:
            port.write(data)
        except (serial.SerialException, OSError) as err:
            self._failure = err
            raise _device("RS485 port failed", err) from err
        return OK

    def close(self) -> None:
        self.rs485_deinit()

    # Receiving -----------------------------------------------------------------------------------
    def _read(self, port: serial.SerialBase, stop: threading.Event) -> None:
        """The reader thread: a first byte (waiting at most :data:`READ_TIMEOUT_S`), then whatever
        follows until the line is quiet for a frame gap; one frame, one ``on_rx``."""
        try:
            while not stop.is_set():
                first = port.read(1)
                if not first or stop.is_set():
                    continue
                frame = bytearray(first)
                while len(frame) < MAX_FRAME:
                    waiting = port.in_waiting  # type: ignore[attr-defined]  # every port class's (stubs: SerialBase)
                    if waiting:
                        frame += port.read(min(waiting, MAX_FRAME - len(frame)))
                        continue
                    time.sleep(self._gap)  # this thread's own pace on the real line, not the world's
                    if not port.in_waiting:  # type: ignore[attr-defined]  # as above
                        break
                self._deliver(bytes(frame))
        except (serial.SerialException, OSError, TypeError, ValueError) as err:
            if not stop.is_set():  # closed under us: tx answers the device's 7000 from now on
                self._failure = err
                log.warning("%s: RS485 port stopped (%s)", self.name, type(err).__name__)  # no address

    def _deliver(self, frame: bytes) -> None:
        loop = self._loop
        if loop is None:
            self._on_rx(frame)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is listening
            loop.call_soon_threadsafe(self._on_rx, frame)


def _device(what: str, err: BaseException) -> InternalError:
    return InternalError(f"{what}: {err}", resource="device")


def _frame_gap(settings: dict[str, Any]) -> float:
    parity = 0 if settings["parity"] == serial.PARITY_NONE else 1
    bits = 1 + int(settings["bytesize"]) + parity + float(settings["stopbits"])
    return max(MIN_FRAME_GAP_S, 3.5 * bits / int(settings["baudrate"]))
