"""Peripheral routes over a simulated camera: status, light and IR, PTZ, GPIO (inputs become events),
fan and heater over the thermal model, radar, alarm outputs, Wiegand (card reads become events), RS485;
answers and refusals as ``handlers/device.go`` gives them."""

from __future__ import annotations

import base64

import httpx
import pytest

from hardware.ports.events import EventKind
from tests.conftest import gateway_token
from twin.camera.wing import cameras_of
from twin.serve import Twin

DEV = "/api/v1/device"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def data(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def events(sub, kind: EventKind) -> list[dict]:
    out = []
    while (event := sub.get_nowait()) is not None:
        if event.kind is kind:
            out.append(event.data)
    return out


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/status"), ("POST", "/light"), ("GET", "/gpio"), ("GET", "/fan"), ("POST", "/rs485/tx")],
)
async def test_peripheral_routes_need_a_token(gateway, method: str, path: str) -> None:
    resp = await gateway.request(method, DEV + path, json={}, headers={"Authorization": "Bearer nope"})
    assert resp.status_code == 401 and resp.json()["code"] == 2000


async def test_status_light_ir_and_capabilities(gateway, auth, twin: Twin) -> None:
    s = await data(await gateway.get(DEV + "/status", headers=auth))
    assert set(s) == {
        "soc_temp_c", "mcu_temp_c", "light_sensor", "ptz_pan_pos", "ptz_tilt_pos", "zoom_pos", "focus_pos",
        "autofocus_enabled", "ircut_mode", "white_light_level", "ir_led_level", "mcu_version",
        "mcu_uptime_ms",
    }  # fmt: skip
    assert s["ircut_mode"] == 2 and s["white_light_level"] == 0 and s["light_sensor"] == 0  # midnight
    assert await data(await gateway.post(DEV + "/light", json={"level": 60}, headers=auth)) == {
        "success": True
    }
    await gateway.post(DEV + "/ir-led", json={"level": 80}, headers=auth)
    assert await data(await gateway.post(DEV + "/ir-cut", json={"mode": "Night"}, headers=auth)) == {
        "success": True
    }
    twin.clock.advance(1)
    s = await data(await gateway.get(DEV + "/status", headers=auth))
    assert (s["white_light_level"], s["ir_led_level"], s["ircut_mode"]) == (60, 80, 2)
    assert s["light_sensor"] > 0 and s["mcu_uptime_ms"] >= 1000
    caps = await data(await gateway.get(DEV + "/capabilities", headers=auth))
    assert caps["has_video"] is True and caps["has_audio"] is True and len(caps) == 11


async def test_day_night_switches_with_the_world_clock(gateway, auth, twin: Twin) -> None:
    sub = twin.world.bus.subscribe([EventKind.CAMERA_DAY_NIGHT])
    twin.clock.advance(10 * 3600)  # 00:00 -> 10:00 UTC
    assert events(sub, EventKind.CAMERA_DAY_NIGHT) == [{"mode": "day"}]
    assert cameras_of(twin.world)["cam-01"].peripherals.night() is False
    s = await data(await gateway.get(DEV + "/status", headers=auth))
    assert s["light_sensor"] > 500


async def test_ptz_pan_tilt_and_presets(gateway, auth, twin: Twin) -> None:
    sub = twin.world.bus.subscribe([EventKind.CAMERA_PTZ_PRESET])
    await gateway.post(DEV + "/ptz", json={"action": "preset", "preset_id": 3}, headers=auth)  # stores centre
    await gateway.post(DEV + "/ptz", json={"action": "pan", "direction": "right", "speed": 100}, headers=auth)
    twin.clock.advance(1)
    await gateway.post(DEV + "/ptz", json={"action": "stop"}, headers=auth)
    await gateway.post(DEV + "/ptz", json={"action": "tilt", "direction": "up", "speed": 10}, headers=auth)
    twin.clock.advance(2)
    s = await data(await gateway.get(DEV + "/status", headers=auth))
    assert s["ptz_pan_pos"] == 30 and s["ptz_tilt_pos"] == 6
    await gateway.post(DEV + "/ptz", json={"action": "preset", "preset_id": 3}, headers=auth)
    twin.clock.advance(5)
    s = await data(await gateway.get(DEV + "/status", headers=auth))
    assert s["ptz_pan_pos"] == 0 and s["ptz_tilt_pos"] == 0
    assert events(sub, EventKind.CAMERA_PTZ_PRESET) == [{"preset_id": 3}]
    await gateway.post(DEV + "/ptz", json={"action": "zoom", "zoom_speed": 100}, headers=auth)
    twin.clock.advance(1)
    assert (await data(await gateway.get(DEV + "/status", headers=auth)))["zoom_pos"] == 800
    beyond = await gateway.post(DEV + "/ptz", json={"action": "preset", "preset_id": 17}, headers=auth)
    assert await data(beyond) == {"message": "Preset ID must be 1-16"}  # the service's refusal: a 200


async def test_gpio_read_write_and_input_events(gateway, auth, twin: Twin) -> None:
    sub = twin.world.bus.subscribe([EventKind.CAMERA_GPIO_CHANGE])
    listing = await data(await gateway.get(DEV + "/gpio", headers=auth))
    assert listing["available_pins"] == [12, 13, 21, 22]
    assert listing["input_pins"] == [12, 13] and listing["output_pins"] == [21, 22]
    assert listing["results"][2] == {"pin": 21, "status": {"success": True}, "direction": "output"}  # low
    assert await data(await gateway.post(DEV + "/gpio", json={"pin": 21, "value": True}, headers=auth)) == {
        "success": True
    }
    assert await data(await gateway.get(DEV + "/gpio/21", headers=auth)) == {
        "pin": 21,
        "value": True,
        "status": {"success": True},
    }
    some = await data(await gateway.get(DEV + "/gpio?pins=21, 42", headers=auth))
    assert some["results"][1] == {"pin": 42, "status": {"message": "GPIO read returned no data"}}
    twin.clock.advance(4 * 3600)
    changes = events(sub, EventKind.CAMERA_GPIO_CHANGE)
    assert changes[0] == {"pin": 21, "value": True, "direction": "output"}
    inputs = [c for c in changes if c["direction"] == "input"]
    assert len(inputs) > 4 and {c["pin"] for c in inputs} <= {12, 13}
    refused = {"message": "MCU raw request failed: -22"}
    for body in ({"pin": 12, "value": True}, {"pin": 99, "value": True}):  # an input; no such pin
        assert await data(await gateway.post(DEV + "/gpio", json=body, headers=auth)) == refused
    for method, path, body, detail in [
        (
            "POST",
            "/gpio",
            {"pin": "5", "value": True},
            "Invalid request body: json: cannot unmarshal string into Go struct field .pin of type uint32",
        ),
        ("GET", "/gpio/x", None, "Invalid pin number"),
        ("GET", "/gpio/-1", None, "Invalid pin number"),
        ("GET", "/gpio?pins=a,b", None, "Invalid pin number: a"),
        ("GET", "/gpio?pins=" + ",".join(["1"] * 65), None, "Too many pins (max 64)"),
    ]:
        resp = await gateway.request(method, DEV + path, json=body, headers=auth)
        assert (resp.status_code, resp.json()["code"]) == (400, 1001), path
        assert resp.json()["error"]["detail"] == detail


async def test_fan_and_heater_drive_the_thermal_model(gateway, auth, twin: Twin) -> None:
    twin.clock.advance(3600)
    base = (await data(await gateway.get(DEV + "/status", headers=auth)))["soc_temp_c"]
    fan = await data(await gateway.post(DEV + "/fan", json={"enable": True}, headers=auth))
    assert fan == {"success": True, "enabled": True, "message": "OK"}
    assert (await data(await gateway.get(DEV + "/fan", headers=auth)))["enabled"] is True
    twin.clock.advance(1800)
    cooled = (await data(await gateway.get(DEV + "/status", headers=auth)))["soc_temp_c"]
    await gateway.post(DEV + "/fan", json={"enable": False}, headers=auth)
    await gateway.post(DEV + "/heat", json={"enable": True}, headers=auth)
    twin.clock.advance(1800)
    heated = (await data(await gateway.get(DEV + "/status", headers=auth)))["soc_temp_c"]
    assert cooled < base - 4 and heated > base + 4
    assert (await gateway.post(DEV + "/heat", json={"enable": "on"}, headers=auth)).status_code == 400
    off = await data(await gateway.post(DEV + "/heat", json={}, headers=auth))  # enable defaults to false
    assert off == {"success": True, "enabled": False, "message": "OK"}


async def test_radar_alarm_outputs_and_wiegand_events(gateway, auth, twin: Twin) -> None:
    assert (await data(await gateway.get(DEV + "/radar", headers=auth)))["enabled"] is False
    await gateway.post(DEV + "/radar", json={"enable": True}, headers=auth)
    radar = await data(await gateway.get(DEV + "/radar", headers=auth))
    assert radar == {"success": True, "enabled": True, "message": "OK"}
    field_lines = cameras_of(twin.world)["cam-01"].peripherals.field_lines
    targets, truth = field_lines.radar_targets(), field_lines.scene.boxes(twin.world.env.now)
    assert [t["id"] for t in targets] == [b.object_id for b in truth] and len(targets) >= 2
    assert [t["range_m"] for t in targets] == [round(b.depth, 2) for b in truth]  # how far each object is
    assert all(5 <= t["range_m"] <= 40 for t in targets)

    await gateway.post(DEV + "/alarm-out", json={"channel": 1, "enable": True}, headers=auth)
    assert (await data(await gateway.get(DEV + "/alarm-out/1", headers=auth)))["enabled"] is True
    outputs = await data(await gateway.get(DEV + "/alarm-outputs", headers=auth))
    assert outputs == {
        "success": True, "message": "OK", "alarm_out0": False, "alarm_out1": True, "wiegand0": False,
        "wiegand1": False,
    }  # fmt: skip
    hal_error = {"success": False, "enabled": False, "message": "HAL error: -22"}
    assert await data(await gateway.get(DEV + "/alarm-out/7", headers=auth)) == hal_error
    assert await data(
        await gateway.post(DEV + "/alarm-out", json={"channel": 9, "enable": True}, headers=auth)
    ) == (hal_error)
    bad = await gateway.get(DEV + "/wiegand/x", headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["detail"] == "Invalid channel number"

    sub = twin.world.bus.subscribe([EventKind.CAMERA_WIEGAND])
    twin.clock.advance(6 * 3600)
    assert events(sub, EventKind.CAMERA_WIEGAND) == []  # readers disabled
    for channel in (0, 1):
        await gateway.post(DEV + "/wiegand", json={"channel": channel, "enable": True}, headers=auth)
    assert (await data(await gateway.get(DEV + "/wiegand/0", headers=auth)))["enabled"] is True
    twin.clock.advance(6 * 3600)
    reads = events(sub, EventKind.CAMERA_WIEGAND)
    assert len(reads) > 5 and all(r["bits"] == 26 and 0 <= r["card"] < 65536 for r in reads)


async def test_rs485_init_tx_loopback_and_deinit(gateway, auth, twin: Twin) -> None:
    sub = twin.world.bus.subscribe([EventKind.CAMERA_RS485_RX])
    payload = {"data": base64.b64encode(b"\x01\x03hello").decode()}
    hal = {"success": False, "message": "HAL error: -19"}
    assert await data(await gateway.post(DEV + "/rs485/tx", json=payload, headers=auth)) == hal
    bad_rate = await gateway.post(DEV + "/rs485/init", json={"baudrate": 1234}, headers=auth)
    assert await data(bad_rate) == {"success": False, "message": "HAL error: -22"}
    init = await gateway.post(
        DEV + "/rs485/init", json={"baudrate": 9600, "config": "8N1 loopback"}, headers=auth
    )
    assert await data(init) == {"success": True, "message": "OK"}
    assert await data(await gateway.post(DEV + "/rs485/tx", json=payload, headers=auth)) == {
        "success": True,
        "message": "OK",
    }
    twin.clock.advance(1)
    assert events(sub, EventKind.CAMERA_RS485_RX) == [{"data": b"\x01\x03hello".hex()}]
    bad = await gateway.post(DEV + "/rs485/tx", json={"data": "not base64!"}, headers=auth)
    assert bad.status_code == 400
    assert bad.json()["error"]["detail"] == "Invalid base64 data: illegal base64 data at input byte 3"
    assert (await gateway.post(DEV + "/rs485/deinit", headers=auth)).status_code == 200
    assert await data(await gateway.post(DEV + "/rs485/tx", json=payload, headers=auth)) == hal


@pytest.mark.parametrize(
    ("path", "body", "detail"),
    [
        ("/light", {"level": 101}, "Level must be between 0 and 100"),
        (
            "/light",
            {"level": "high"},
            "Invalid request body: json: cannot unmarshal string into Go struct field .level of type uint32",
        ),
        ("/light", None, "Invalid request body: EOF"),
        (
            "/ir-led",
            {"level": -1},
            "Invalid request body: json: cannot unmarshal number -1 into Go struct field .level of type "
            "uint32",
        ),
        ("/ir-led", {"level": 101}, "Level must be 0-100"),
        ("/ir-cut", {"mode": "dusk"}, "Mode must be 'auto', 'day', or 'night'"),
        (
            "/ir-cut",
            {"mode": 2},
            "Invalid request body: json: cannot unmarshal number into Go struct field .mode of type string",
        ),
        (
            "/ptz",
            {"action": "spin"},
            "Invalid action. Must be 'pan', 'tilt', 'stop', 'preset', 'zoom', or 'focus'",
        ),
        ("/ptz", {}, "Invalid action. Must be 'pan', 'tilt', 'stop', 'preset', 'zoom', or 'focus'"),
        ("/ptz", {"action": "preset", "preset_id": 0}, "Preset ID must be between 1 and 255"),
        ("/ptz", {"action": "preset", "preset_id": 256}, "Preset ID must be between 1 and 255"),
        (
            "/ptz",
            {"action": "zoom", "zoom_speed": 1.5},
            "Invalid request body: json: cannot unmarshal number 1.5 into Go struct field .zoom_speed of "
            "type int32",
        ),
        (
            "/fan",
            [True],
            "Invalid request body: json: cannot unmarshal array into Go value of type struct { Enable bool "
            '"json:\\"enable\\"" }',
        ),
    ],
)
async def test_bad_bodies_answer_1001_with_the_handlers_text(
    gateway, auth, path: str, body, detail: str
) -> None:
    resp = await gateway.post(DEV + path, json=body, headers=auth)
    assert resp.status_code == 400, resp.text
    assert resp.json()["code"] == 1001 and resp.json()["message"] == "Invalid request"
    assert resp.json()["error"]["detail"] == detail


async def test_an_unknown_direction_stops_the_axis(gateway, auth, twin: Twin) -> None:
    await gateway.post(DEV + "/ptz", json={"action": "pan", "direction": "left", "speed": 300}, headers=auth)
    twin.clock.advance(1)  # a speed above 100 runs at 100
    assert (await data(await gateway.get(DEV + "/status", headers=auth)))["ptz_pan_pos"] == -30
    sideways = await gateway.post(DEV + "/ptz", json={"action": "pan", "direction": "sideways"}, headers=auth)
    assert await data(sideways) == {"success": True}
    twin.clock.advance(1)
    assert (await data(await gateway.get(DEV + "/status", headers=auth)))["ptz_pan_pos"] == -30
