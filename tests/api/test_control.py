"""The control plane: clock, reset, seed, snapshot/restore, and what the vendor APIs then answer."""

from __future__ import annotations

import httpx
import jwt
import pytest

from tests.conftest import admin_token, gateway_token


async def timestamps(automation: httpx.AsyncClient, gateway: httpx.AsyncClient) -> dict[str, float]:
    """Every world timestamp the two APIs return: uptime, a fresh JWT's iat, the device's times."""
    await automation.post("/api/setup/initialize", json={"username": "someone", "password": "abc12345"})
    login = await automation.post("/api/auth/login", json={"username": "someone", "password": "abc12345"})
    key = (await gateway.get("/api/v1/auth/public-key")).json()["data"]
    return {
        "uptime": (await automation.get("/api/health/status")).json()["uptime"],
        "jwt.iat": jwt.decode(login.json()["token"], options={"verify_signature": False})["iat"],
        "gateway.health.time": (await gateway.get("/api/v1/system/health")).json()["data"]["time"],
        "gateway.public_key.unix_timestamp": key["unix_timestamp"],
    }


async def test_clock_read_pause_resume_speed(control: httpx.AsyncClient) -> None:
    clock = (await control.get("/clock")).json()
    assert clock == {
        "mode": "step",
        "speed": 1.0,
        "paused": False,
        "sim_time": 0.0,
        "epoch": 1767225600.0,
        "unix_time": 1767225600.0,
    }
    assert (await control.post("/clock/pause")).json()["paused"] is True
    assert (await control.post("/clock/resume")).json()["paused"] is False
    assert (await control.put("/clock/speed", json={"speed": 60})).json()["speed"] == 60


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("PUT", "/clock/speed", {"speed": 0}),
        ("PUT", "/clock/speed", {"speed": "fast"}),
        ("PUT", "/clock/speed", {}),
        ("POST", "/clock/advance", {"seconds": -5}),
        ("POST", "/clock/advance", {"seconds": 5, "extra": 1}),
        ("PUT", "/seed", {"seed": -1}),
    ],
)
async def test_bad_control_input_is_400(
    control: httpx.AsyncClient, method: str, path: str, body: dict
) -> None:
    resp = await control.request(method, path, json=body)
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid_input"


async def test_run_to_the_past_is_refused(control: httpx.AsyncClient) -> None:
    await control.post("/clock/advance", json={"seconds": 100})
    resp = await control.post("/clock/run-to", json={"sim_time": 50})
    assert resp.status_code == 400 and "past" in resp.json()["error"]["message"]
    assert (await control.post("/clock/run-to", json={"sim_time": 150})).json()["sim_time"] == 150


async def test_advancing_3600_moves_every_api_timestamp_by_exactly_3600(
    control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    before = await timestamps(automation, gateway)
    await control.post("/clock/advance", json={"seconds": 3600})
    after = await timestamps(automation, gateway)
    assert {k: after[k] - before[k] for k in before} == dict.fromkeys(before, 3600)


async def test_advance_delivers_telemetry_on_the_world_clock(twin, control: httpx.AsyncClient) -> None:
    sub = twin.automation.subscribe(maxlen=5000)
    await control.post("/clock/advance", json={"seconds": 3600})
    events = list(iter(sub.get_nowait, None))
    telemetry = [e for e in events if e.kind.value == "device.telemetry"]
    assert len(telemetry) == 3 * 361  # 3 sensors, samples at 0, 10, ..., 3600
    assert telemetry[-1].data["timestamp"] == 1767225600 + 3600


async def test_snapshot_reset_restore_gives_identical_answers(
    control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    token = await admin_token(automation)
    gw_token = await gateway_token(gateway)
    await control.post("/clock/advance", json={"seconds": 1234})

    async def answers() -> list:
        auth = {"Authorization": f"Bearer {token}"}
        return [
            (await automation.get("/api/setup/status")).json(),
            (await automation.get("/api/auth/me", headers=auth)).json(),
            (await automation.get("/api/health/status")).json(),
            (await gateway.get("/api/v1/system/health")).json(),
            (await gateway.get("/api/v1/system/info", headers={"Authorization": gw_token})).status_code,
            (await control.get("/clock")).json(),
        ]

    expected = await answers()
    snap = (await control.post("/snapshots")).json()
    assert snap["sim_time"] == 1234

    reset = await control.post("/reset")
    assert reset.json()["sim_time"] == 0
    assert (await automation.get("/api/setup/status")).json()["setup_required"] is True
    assert (await gateway.get("/api/v1/system/info", headers={"Authorization": gw_token})).status_code == 401

    restored = await control.post(f"/snapshots/{snap['id']}/restore")
    assert restored.json()["sim_time"] == 1234
    assert await answers() == expected


async def test_restore_unknown_snapshot_is_404(control: httpx.AsyncClient) -> None:
    resp = await control.post("/snapshots/snap-999/restore")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"


async def test_seed_resets_the_world_with_the_new_seed(twin, control: httpx.AsyncClient) -> None:
    assert (await control.get("/seed")).json() == {"seed": 1234}
    await control.post("/clock/advance", json={"seconds": 50})
    before = twin.world.sensors["env_sensor"].current("env_sensor-0001")
    resp = await control.put("/seed", json={"seed": 99})
    assert resp.json()["seed"] == 99 and resp.json()["clock"]["sim_time"] == 0
    await control.post("/clock/advance", json={"seconds": 50})
    assert twin.world.sensors["env_sensor"].current("env_sensor-0001") != before


async def test_fault_endpoints_name_servers(control: httpx.AsyncClient) -> None:
    assert set((await control.get("/faults")).json()) == {"automation", "cam-01"}
    resp = await control.post("/faults/nosuch/latency", json={"seconds": 1})
    assert resp.status_code == 404


async def test_clock_sleep_moves_step_time_and_holds_at_the_stop(twin, control: httpx.AsyncClient) -> None:
    import asyncio

    resp = await control.post("/clock/sleep", json={"seconds": 12.5})
    assert resp.status_code == 200 and resp.json()["sim_time"] == 12.5
    bad = await control.post("/clock/sleep", json={"seconds": -1})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    missing = await control.post("/clock/sleep", json={})
    assert missing.status_code == 400

    twin.control.stop_at = 20.0
    held = asyncio.create_task(control.post("/clock/sleep", json={"seconds": 60}))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not held.done() and twin.control.stopped.is_set()
    assert twin.clock.state().sim_time == 20.0
    held.cancel()
