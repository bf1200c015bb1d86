"""Lens and autofocus routes over a simulated camera: motors move in world time, autofocus sweeps and
settles; the device-control service's refusals answer as ``handlers/device.go`` passes them on."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import gateway_token
from twin.camera.lens import FOCUS_SPEED, ZOOM_STEPS, Lens
from twin.camera.wing import cameras_of
from twin.serve import Twin

LENS = "/api/v1/device/lens"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


def lens(twin: Twin) -> Lens:
    return cameras_of(twin.world)["cam-01"].lens


async def status(gateway: httpx.AsyncClient, auth: dict[str, str], path: str = "/status") -> dict:
    resp = await gateway.get(LENS + path, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/lens/status"),
        ("GET", "/lens/af/status"),
        ("POST", "/lens/oneshot-af"),
        ("PUT", "/lens/zoom-level"),
        ("POST", "/zoom"),
        ("POST", "/autofocus"),
    ],
)
async def test_lens_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, "/api/v1/device" + path, json={})
    assert resp.status_code == 401
    assert resp.json()["code"] == 2000 and resp.json()["error"]["type"] == "auth"


async def test_status_and_zoom_level_move_over_world_time(gateway, auth, twin: Twin) -> None:
    s = await status(gateway, auth)
    assert set(s) == {
        "zoom_state", "focus_state", "zoom_rz_done", "focus_rz_done", "zoom_pos", "focus_pos", "iris_adc",
        "autofocus_enabled", "zoom_limit", "focus_limit",
    }  # fmt: skip
    assert s["zoom_pos"] == 0 and s["zoom_state"] == 1 and s["zoom_limit"] == {"min_pos": 0, "max_pos": 2000}
    resp = await gateway.put(LENS + "/zoom-level", json={"level": 0.5}, headers=auth)
    assert resp.json() == {"code": 0, "message": "Success", "data": {"success": True}}
    assert (await status(gateway, auth))["zoom_state"] == 2  # running
    twin.clock.advance(0.5)
    moving = (await status(gateway, auth))["zoom_pos"]
    assert 0 < moving < ZOOM_STEPS // 2
    twin.clock.advance(3)
    s = await status(gateway, auth)
    assert s["zoom_state"] == 1 and s["zoom_pos"] == 1000


async def test_continuous_focus_iris_target_and_reset_zero(gateway, auth, twin: Twin) -> None:
    start = (await status(gateway, auth))["focus_pos"]
    await gateway.post("/api/v1/device/focus", json={"speed": 50}, headers=auth)
    twin.clock.advance(1)
    await gateway.post("/api/v1/device/focus", json={"speed": 0}, headers=auth)
    s = await status(gateway, auth)
    assert s["focus_pos"] == start + round(FOCUS_SPEED / 2) and s["focus_state"] == 1
    await gateway.post(LENS + "/iris-target", json={"target": 800}, headers=auth)
    twin.clock.advance(2)
    assert (await status(gateway, auth))["iris_adc"] == 800
    await gateway.post(LENS + "/reset-zero", json={"zoom": True, "focus": True}, headers=auth)
    s = await status(gateway, auth)
    assert s["focus_state"] == 3 and s["focus_rz_done"] is False
    twin.clock.advance(5)
    s = await status(gateway, auth)
    assert (s["focus_pos"], s["zoom_pos"], s["focus_rz_done"], s["focus_state"]) == (0, 0, True, 1)


async def test_oneshot_autofocus_sweeps_settles_sharp_and_cancel_stops(gateway, auth, twin: Twin) -> None:
    idle = await status(gateway, auth, "/af/status")
    assert idle["state"] == "idle" and idle["busy"] is False and "estimated_distance_m" in idle
    await gateway.put(LENS + "/focus-level", json={"level": 0.9}, headers=auth)
    twin.clock.advance(3)
    assert lens(twin).defocus() > 1000
    job = (await gateway.post(LENS + "/af/oneshot", headers=auth)).json()["data"]
    assert job == {"accepted": True, "job_id": 1, "message": "queued"}
    busy = await gateway.post(LENS + "/oneshot-af", headers=auth)
    assert (busy.status_code, busy.json()["code"]) == (500, 7000)
    assert busy.json()["error"]["detail"] == "autofocus operation already active"
    twin.clock.advance(1)
    mid = await status(gateway, auth, "/af/status")
    assert (
        mid["busy"]
        and mid["operation"] == "oneshot"
        and 0 < mid["progress"] < 1
        and mid["elapsed_ms"] == 1000
    )
    twin.clock.advance(10)
    done = await status(gateway, auth, "/af/status")
    assert (
        done["state"] == "completed" and done["progress"] == 1.0 and not done["busy"] and done["job_id"] == 1
    )
    assert abs(done["best_focus"] - lens(twin).ideal_focus()) < 5 and lens(twin).defocus() < 5
    assert done["estimated_distance_m"] == pytest.approx(lens(twin).distance_m, rel=0.05)

    again = (await gateway.post(LENS + "/oneshot-af", headers=auth)).json()["data"]
    twin.clock.advance(0.5)
    other = await gateway.post(LENS + "/af/cancel", json={"job_id": 99}, headers=auth)
    assert other.json()["error"]["detail"] == "autofocus job id mismatch"
    cancel = (await gateway.post(LENS + "/af/cancel", json={"job_id": again["job_id"]}, headers=auth)).json()
    assert cancel["data"] == {"success": True, "message": "cancellation requested"}
    stopped = await status(gateway, auth, "/af/status")
    pos = stopped["focus_pos"]
    twin.clock.advance(5)
    after = await status(gateway, auth, "/af/status")
    assert after["state"] == "cancelled" and after["focus_pos"] == pos and not after["busy"]


async def test_zoom_follow_keeps_focus_on_the_curve(gateway, auth, twin: Twin) -> None:
    job = (await gateway.post(LENS + "/zoom-follow", json={"ratio": 3}, headers=auth)).json()["data"]
    assert job["accepted"] is True
    twin.clock.advance(1)
    assert (await status(gateway, auth, "/af/status"))["state"] == "path_moving"
    twin.clock.advance(5)
    done = await status(gateway, auth, "/af/status")
    assert done["state"] == "completed" and done["effective_ratio"] == pytest.approx(3.0, abs=0.01)
    assert lens(twin).defocus() < 2
    await gateway.post(LENS + "/goto", json={"zoom_ratio": 1.5, "focus_distance_m": 50}, headers=auth)
    twin.clock.advance(5)
    target = Lens.curve(lens(twin).zoom_motor.position(), 50)
    assert abs(lens(twin).focus_motor.position() - target) < 1


async def test_autofocus_enable_refocuses_after_zoom(gateway, auth, twin: Twin) -> None:
    resp = await gateway.post("/api/v1/device/autofocus", json={"enable": True}, headers=auth)
    assert resp.json()["data"] == {"success": True, "message": "queued AF job 1"}
    twin.clock.advance(10)
    assert (await status(gateway, auth))["autofocus_enabled"] is True
    await gateway.put(LENS + "/zoom-level", json={"level": 1.0}, headers=auth)
    twin.clock.advance(5)
    assert lens(twin).defocus() < 2
    manual = await gateway.post("/api/v1/device/focus", json={"speed": 20}, headers=auth)
    assert manual.json()["data"] == {"message": "manual focus disabled while autofocus is enabled"}
    level = await gateway.put(LENS + "/focus-level", json={"level": 0.2}, headers=auth)
    assert (level.status_code, level.json()["code"]) == (500, 7000)
    off = await gateway.post("/api/v1/device/autofocus", json={}, headers=auth)
    assert off.json()["data"] == {"success": True, "message": "cancellation requested"}


async def test_limits_and_init(gateway, auth, twin: Twin) -> None:
    body = {"zoom_limit": {"min_pos": 100, "max_pos": 1500}}
    assert (await gateway.put(LENS + "/limits", json=body, headers=auth)).status_code == 200
    await gateway.post("/api/v1/device/zoom", json={"speed": 100}, headers=auth)
    twin.clock.advance(5)
    s = await status(gateway, auth)
    assert s["zoom_pos"] == 1500 and s["zoom_limit"] == {"min_pos": 100, "max_pos": 1500}
    assert (await gateway.post(LENS + "/init", headers=auth)).status_code == 200
    twin.clock.advance(10)
    assert lens(twin).defocus() < 1 and (await status(gateway, auth))["zoom_pos"] == 100


@pytest.mark.parametrize(
    ("method", "path", "body", "status_code", "code", "detail"),
    [
        (
            "POST",
            "/api/v1/device/zoom",
            {"speed": "fast"},
            400,
            1001,
            "cannot unmarshal string into Go struct field .speed",
        ),
        (
            "POST",
            "/api/v1/device/focus",
            [1],
            400,
            1001,
            "cannot unmarshal array into Go value of type struct {",
        ),
        (
            "POST",
            "/api/v1/device/autofocus",
            {"enable": "yes"},
            400,
            1001,
            "Go struct field .enable of type bool",
        ),
        ("PUT", LENS + "/zoom-level", {"level": 9}, 500, 7000, "Level must be 0.0-1.0"),
        ("PUT", LENS + "/zoom-level", None, 400, 1001, "Invalid request body: EOF"),
        ("PUT", LENS + "/focus-level", {"level": -0.1}, 500, 7000, "Level must be 0.0-1.0"),
        ("POST", LENS + "/zoom-follow", {"ratio": 0}, 400, 1001, "ratio must be greater than zero"),
        ("POST", LENS + "/zoom-follow", {"ratio": True}, 400, 1001, "ratio must be greater than zero"),
        ("POST", LENS + "/iris", {"speed": 2**31}, 400, 1001, "cannot unmarshal number 2147483648 into"),
        ("POST", LENS + "/iris-target", {"target": -5}, 400, 1001, "Go struct field .target of type uint32"),
        (
            "PUT",
            LENS + "/limits",
            {"focus_limit": {"min_pos": 900, "max_pos": 100}},
            500,
            7000,
            "focus limit: min_pos must be below max_pos",
        ),
        (
            "PUT",
            LENS + "/limits",
            {"zoom_limit": {"min_pos": "0"}},
            400,
            1001,
            "Go struct field LensLimit.zoom_limit.min_pos of type int32",
        ),
        (
            "PUT",
            LENS + "/limits",
            {"zoom_limit": 5},
            400,
            1001,
            "field .zoom_limit of type devicepb.LensLimit",
        ),
        ("POST", LENS + "/goto", {"zoom_ratio": 2, "focus_distance_m": 0}, 500, 7000, "must be positive"),
        ("POST", LENS + "/goto", {"zoom_ratio": 9, "focus_distance_m": 3}, 500, 7000, "out of range"),
    ],
)
async def test_refusals_carry_the_handlers_codes_and_texts(
    gateway, auth, method: str, path: str, body: object, status_code: int, code: int, detail: str
) -> None:
    resp = await gateway.request(method, path, json=body, headers=auth)
    assert (resp.status_code, resp.json()["code"]) == (status_code, code), resp.text
    assert detail in resp.json()["error"]["detail"]


async def test_speeds_beyond_100_run_at_100_and_an_empty_body_stops(gateway, auth, twin: Twin) -> None:
    assert (await gateway.post("/api/v1/device/zoom", json={"speed": 150}, headers=auth)).json()["data"] == {
        "success": True
    }
    twin.clock.advance(1)
    await gateway.post("/api/v1/device/zoom", json={}, headers=auth)
    assert (await status(gateway, auth))["zoom_pos"] == 800


async def test_not_json_answers_1001(gateway, auth) -> None:
    resp = await gateway.post("/api/v1/device/zoom", content=b"speed=5", headers=auth)
    assert resp.status_code == 400 and resp.json()["code"] == 1001
    assert resp.json()["error"]["detail"].startswith("Invalid request body: ")


async def test_lens_and_peripherals_survive_snapshot_and_restore(gateway, auth, twin: Twin) -> None:
    await gateway.put(LENS + "/zoom-level", json={"level": 0.5}, headers=auth)
    await gateway.put(LENS + "/limits", json={"focus_limit": {"min_pos": 10, "max_pos": 2900}}, headers=auth)
    await gateway.post("/api/v1/device/light", json={"level": 40}, headers=auth)
    await gateway.post("/api/v1/device/ir-cut", json={"mode": "day"}, headers=auth)
    twin.clock.advance(5)
    before = await status(gateway, auth)
    device = (await gateway.get("/api/v1/device/status", headers=auth)).json()["data"]
    snap = twin.world.snapshot()
    await gateway.put(LENS + "/zoom-level", json={"level": 0}, headers=auth)
    await gateway.post("/api/v1/device/light", json={"level": 0}, headers=auth)
    twin.clock.advance(5)
    twin.world.restore(snap)
    twin.clock.rebased()
    auth = {"Authorization": await gateway_token(gateway)}  # sessions travel too, but a fresh one is simpler
    assert await status(gateway, auth) == before
    again = (await gateway.get("/api/v1/device/status", headers=auth)).json()["data"]
    assert (again["white_light_level"], again["ircut_mode"], again["zoom_pos"]) == (
        device["white_light_level"], device["ircut_mode"], device["zoom_pos"],
    )  # fmt: skip
