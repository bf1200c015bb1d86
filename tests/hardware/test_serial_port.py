"""A camera's RS485 on a real serial port through the gateway API: ``loop://`` (what is sent comes
back as ``camera.rs485_rx``), a pty whose other end this test plays as a Modbus device, and the
failure paths (a port that cannot be opened at start-up, one that goes away mid-use, values the UART
or the handler refuses)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from hardware.adapters.serial_port import SerialPortError, SerialRs485
from hardware.ports.camera_hw import Rs485Line
from hardware.ports.events import EventKind
from tests.conftest import SCENARIOS, gateway_token
from tests.sockets import socket_settings
from twin.camera.wing import cameras_of
from twin.cli import main
from twin.scenario.model import ScenarioError, load_scenario
from twin.serve import Twin, build, start, stop
from twin.settings import RealMemberError, Settings, parse
from twin.wings import close_host_hardware

DEV = "/api/v1/device"
RX_TIMEOUT_S = 20.0
"""How long a test waits for the reader thread at the most (a loaded machine), never a sleep."""


def settings_with(**overrides: object) -> Settings:
    return Settings(scenario=SCENARIOS / "test.yaml", step=True, **overrides)  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def gateway_of(twin: Twin) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://cam-01") as client:
            yield client, {"Authorization": await gateway_token(client)}
    finally:
        close_host_hardware(twin.gateways.values())


async def post(
    client: httpx.AsyncClient, auth: dict[str, str], path: str, body: object = None
) -> httpx.Response:
    return await client.post(DEV + path, json=body, headers=auth)


def tx(data: bytes) -> dict[str, str]:
    return {"data": base64.b64encode(data).decode()}


async def received(sub, length: int) -> bytes:
    """The bytes of ``camera.rs485_rx`` events until ``length`` have come (one frame or several)."""
    out = b""
    while len(out) < length:
        event = await asyncio.wait_for(sub.get(), RX_TIMEOUT_S)
        assert event.kind is EventKind.CAMERA_RS485_RX and event.source == "cam-01"
        out += bytes.fromhex(event.data["data"])
    return out


# loop:// ------------------------------------------------------------------------------------------
async def test_what_is_sent_on_loop_comes_back_as_an_event() -> None:
    twin = build(settings_with(rs485=("cam-01=loop://",)))
    line = twin.gateways["cam-01"].rs485
    assert isinstance(line, SerialRs485) and isinstance(line, Rs485Line)
    sub = twin.world.bus.subscribe([EventKind.CAMERA_RS485_RX])
    async with gateway_of(twin) as (gateway, auth):
        early = await post(gateway, auth, "/rs485/tx", tx(b"\x01"))
        assert early.status_code == 200
        assert early.json()["data"] == {"success": False, "message": "HAL error: -19"}  # as the daemon
        init = await post(gateway, auth, "/rs485/init", {"baudrate": 115200, "config": "8E1"})
        assert init.json() == {"code": 0, "message": "Success", "data": {"success": True, "message": "OK"}}
        sent = await post(gateway, auth, "/rs485/tx", tx(b"\x01\x03hello"))
        assert sent.json()["data"] == {"success": True, "message": "OK"}
        assert await received(sub, 7) == b"\x01\x03hello"
        again = await post(gateway, auth, "/rs485/init", {"baudrate": 9600, "config": "7O2"})
        assert again.json()["data"]["success"] is True  # the open port is set up anew
        await post(gateway, auth, "/rs485/tx", tx(b"ping"))
        assert await received(sub, 4) == b"ping"
        released = await post(gateway, auth, "/rs485/deinit")
        assert released.json()["data"] == {"success": True, "message": "OK"}
        after = await post(gateway, auth, "/rs485/tx", tx(b"\x01"))
        assert after.json()["data"] == {"success": False, "message": "HAL error: -19"}
        lights = await post(gateway, auth, "/light", {"level": 40})
        assert lights.status_code == 200  # the other peripherals are the simulated camera's
    assert cameras_of(twin.world)["cam-01"].peripherals.light_level == 40


async def test_a_scenario_group_puts_its_cameras_rs485_on_a_serial_port(tmp_path: Path) -> None:
    text = (
        (SCENARIOS / "test.yaml").read_text().replace("    count: 1\n", "    count: 1\n    rs485: loop://\n")
    )
    (tmp_path / "rs485.yaml").write_text(text)
    twin = build(Settings(scenario=tmp_path / "rs485.yaml", step=True))
    sub = twin.world.bus.subscribe([EventKind.CAMERA_RS485_RX])
    async with gateway_of(twin) as (gateway, auth):
        assert (await post(gateway, auth, "/rs485/init", {"baudrate": 9600})).json()["data"]["success"]
        await post(gateway, auth, "/rs485/tx", tx(b"scenario"))
        assert await received(sub, 8) == b"scenario"
    assert isinstance(twin.gateways["cam-01"].rs485, SerialRs485)


# A pty: the test is the device ----------------------------------------------------------------------
def crc16(frame: bytes) -> bytes:
    """Modbus RTU's CRC-16 (polynomial 0xA001, little-endian on the wire)."""
    crc = 0xFFFF
    for byte in frame:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc.to_bytes(2, "little")


def modbus(body: bytes) -> bytes:
    return body + crc16(body)


@pytest.fixture
def pty() -> Iterator[tuple[int, str]]:
    """A pty pair: the device's end (the master, this test) and the port's path (the slave)."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    yield master, os.ttyname(slave)
    for fd in (master, slave):
        with contextlib.suppress(OSError):
            os.close(fd)


class ModbusDevice:
    """Unit 1 on the master end of a pty: answers ``read holding registers`` (0x03) with register
    values 42, 500, ...; a request with a bad CRC gets no answer (as on a real line)."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.requests: list[bytes] = []
        self._buffer = b""
        asyncio.get_running_loop().add_reader(master, self._readable)

    def _readable(self) -> None:
        with contextlib.suppress(BlockingIOError):
            self._buffer += os.read(self.master, 256)
        while len(self._buffer) >= 8:
            request, self._buffer = self._buffer[:8], self._buffer[8:]
            self.requests.append(request)
            if request[6:] != crc16(request[:6]) or request[:2] != b"\x01\x03":
                continue
            count = int.from_bytes(request[4:6], "big")
            values = b"".join((42 + 458 * i).to_bytes(2, "big") for i in range(count))
            os.write(self.master, modbus(bytes([1, 3, 2 * count]) + values))

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self.master)


async def test_a_modbus_device_on_a_pty_answers_through_the_gateway(pty: tuple[int, str]) -> None:
    master, path = pty
    twin = build(settings_with(rs485=(f"cam-01={path}",)))
    sub = twin.world.bus.subscribe([EventKind.CAMERA_RS485_RX])
    device = ModbusDevice(master)
    try:
        async with gateway_of(twin) as (gateway, auth):
            init = await post(gateway, auth, "/rs485/init", {"baudrate": 19200, "config": "8N1"})
            assert init.json()["data"] == {"success": True, "message": "OK"}
            request = modbus(b"\x01\x03\x00\x00\x00\x02")  # unit 1, registers 0..1
            assert (await post(gateway, auth, "/rs485/tx", tx(request))).json()["data"]["success"] is True
            answer = await received(sub, 9)
            assert answer == modbus(b"\x01\x03\x04\x00\x2a\x01\xf4")
            assert device.requests == [request]
    finally:
        device.close()


async def test_a_port_that_goes_away_mid_use_answers_the_devices_error(pty: tuple[int, str]) -> None:
    master, path = pty
    twin = build(settings_with(rs485=(f"cam-01={path}",)))
    async with gateway_of(twin) as (gateway, auth):
        assert (await post(gateway, auth, "/rs485/init", {"baudrate": 9600})).json()["data"]["success"]
        os.close(master)  # the adapter is unplugged
        gone = await post(gateway, auth, "/rs485/tx", tx(b"\x01\x03"))
        assert gone.status_code == 500
        body = gone.json()
        assert (body["code"], body["message"]) == (7000, "Device error")
        assert body["error"]["detail"].startswith("RS485 port failed: ")
        assert "data" not in body
        assert (await post(gateway, auth, "/rs485/deinit")).json()["data"]["success"] is True
        reopen = await post(gateway, auth, "/rs485/init", {"baudrate": 9600})  # its master is gone
        assert reopen.status_code == 500 and reopen.json()["code"] == 7000
        assert reopen.json()["error"]["detail"].startswith("RS485 port cannot be opened: ")


# Refused values --------------------------------------------------------------------------------------
REFUSED_AS_SIMULATED = [
    {"baudrate": 1234},
    {"baudrate": "fast"},
    {"baudrate": -9600},
    {"baudrate": 9600, "config": 81},
    [9600],
]


async def test_bad_values_answer_as_the_simulated_port_does() -> None:
    """Each refused body gets the simulated camera's answer: the handler's 1001 with its text for a
    body that does not bind, the daemon's ``HAL error: -22`` for a rate the UART refuses."""
    serial_twin, simulated = build(settings_with(rs485=("cam-01=loop://",))), build(settings_with())
    async with gateway_of(serial_twin) as (real, auth), gateway_of(simulated) as (sim, sim_auth):
        for body in REFUSED_AS_SIMULATED:
            got = await post(real, auth, "/rs485/init", body)
            want = await post(sim, sim_auth, "/rs485/init", body)
            assert (got.status_code, got.json()) == (want.status_code, want.json()), body
            if got.status_code == 200:
                assert got.json()["data"] == {"success": False, "message": "HAL error: -22"}, body
            else:
                assert got.json()["code"] == 1001 and got.json()["error"]["detail"], body
        fast = await post(real, auth, "/rs485/init", {"baudrate": "fast"})
        assert fast.json() == {
            "code": 1001,
            "message": "Invalid request",
            "error": {
                "detail": "Invalid request body: json: cannot unmarshal string into Go struct field "
                ".baudrate of type uint32"
            },
        }
        bad_data = await post(real, auth, "/rs485/tx", {"data": "not base64!"})
        assert bad_data.status_code == 400 and bad_data.json()["code"] == 1001
    assert serial_twin.gateways["cam-01"].host_rs485._port is None  # nothing was opened


@pytest.mark.parametrize("config", ["9N1", "8X1", "8N3", "8n0"])
async def test_a_frame_format_the_uart_cannot_take_is_a_hal_error(config: str) -> None:
    """The simulated port takes any three characters; a real UART refuses what it cannot set."""
    twin = build(settings_with(rs485=("cam-01=loop://",)))
    async with gateway_of(twin) as (gateway, auth):
        refused = await post(gateway, auth, "/rs485/init", {"baudrate": 9600, "config": config})
        assert refused.json()["data"] == {"success": False, "message": "HAL error: -22"}
        lower = await post(gateway, auth, "/rs485/init", {"baudrate": 9600, "config": "8e1"})
        assert lower.json()["data"]["success"] is True  # parity letters in either case
        other_length = await post(gateway, auth, "/rs485/init", {"baudrate": 9600, "config": "8N1 rtu"})
        assert other_length.json()["data"]["success"] is True  # not three characters: 8N1, as the daemon


# Start-up ------------------------------------------------------------------------------------------
def test_a_port_that_cannot_be_opened_stops_the_start(tmp_path: Path) -> None:
    missing = tmp_path / "ttyUSB9"
    with pytest.raises(SerialPortError, match=f"cam-01: RS485 port {missing} cannot be opened: "):
        build(settings_with(rs485=(f"cam-01={missing}",)))
    with pytest.raises(SerialPortError, match=r"RS485 port loop://\?nope=1 cannot be opened"):
        build(settings_with(rs485=("cam-01=loop://?nope=1",)))  # a URL's options are read as it opens


def test_the_command_line_names_the_port_it_cannot_open(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "ttyUSB9"
    args = ["run", "--scenario", str(SCENARIOS / "test.yaml"), "--step", "--rs485", f"cam-01={missing}"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"twin: cam-01: RS485 port {missing} cannot be opened: " in err
    assert "No such file or directory" in err


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("loop://", "expected ID=URL: a camera id and a serial port"),
        ("cam-01=bogus://x", "'bogus://x' is not a serial port URL pyserial can open"),
        ("cam-01=", "a serial port URL is empty"),
    ],
)
def test_the_command_line_refuses_a_bad_rs485_option(value: str, why: str, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(["run", "--rs485", value])
    assert exit_.value.code == 2 and why in capsys.readouterr().err


def test_the_command_line_sets_a_cameras_port() -> None:
    _, settings = parse(["run", "--rs485", "cam-01=loop://", "--rs485", "cam-02=/dev/ttyUSB0"])
    assert settings.rs485 == ("cam-01=loop://", "cam-02=/dev/ttyUSB0")


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"rs485": ("cam-07=loop://",)}, "--rs485: the fleet has no camera 'cam-07'"),
        ({"cameras": 2, "rs485": ("cam-01=/dev/null", "cam-02=/dev/null")}, "/dev/null is given to more"),
        ({"rs485": ("cam-01=loop://",), "real_cameras": ("cam-01=http://127.0.0.1:9",)}, "cam-01 is real"),
    ],
)
def test_ports_the_fleet_cannot_take_are_refused(overrides: dict, why: str) -> None:
    with pytest.raises(RealMemberError, match=why):
        build(settings_with(**overrides))


def test_a_scenario_names_a_bad_serial_url_at_its_line(tmp_path: Path) -> None:
    text = (
        (SCENARIOS / "test.yaml")
        .read_text()
        .replace("    count: 1\n", "    count: 1\n    rs485: bogus://x\n")
    )
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ScenarioError) as err:
        load_scenario(tmp_path / "bad.yaml")
    assert any("fleet.cameras" in p and "rs485" in p and "bogus://x" in p for p in err.value.problems)


def test_the_reader_hands_frames_over_without_an_event_loop() -> None:
    """Used outside a server (no running loop), a frame goes to ``on_rx`` on the reader thread."""
    frames: list[bytes] = []
    got = threading.Event()
    port = SerialRs485("cam-01", "loop://", lambda frame: (frames.append(frame), got.set()))
    assert port.rs485_init(9600, "8N1").success
    try:
        assert port.rs485_tx(b"\x10\x20").success
        assert got.wait(RX_TIMEOUT_S)  # set by the reader thread
        assert frames == [b"\x10\x20"]
    finally:
        port.close()


# The whole twin on sockets ----------------------------------------------------------------------------
@pytest.mark.socket
async def test_a_started_twin_serves_the_port_and_stop_closes_it(tmp_path: Path) -> None:
    twin = build(socket_settings(rs485=("cam-01=loop://",), host_stats=("cam-01",)))
    sub = twin.world.bus.subscribe([EventKind.CAMERA_RS485_RX])
    running = await start(twin, tmp_path)
    port = twin.gateways["cam-01"].host_rs485
    try:
        async with httpx.AsyncClient(base_url=running.url("cam-01/http"), timeout=30) as http:
            auth = {"Authorization": await gateway_token(http)}
            assert (await post(http, auth, "/rs485/init", {"baudrate": 57600})).json()["data"]["success"]
            await post(http, auth, "/rs485/tx", tx(b"over a socket"))
            assert await received(sub, 13) == b"over a socket"
            summary = (await http.get("/api/v1/monitor/summary", headers=auth)).json()["data"]
            assert summary["host"]["hostname"] == os.uname().nodename
        reader = port._reader
        assert reader is not None and reader.is_alive()
    finally:
        await stop(running)
    assert port._port is None and not reader.is_alive()
