"""A device's detail is kept while the world stands still: read again at the same instant it is the
same object, rendered once; any change to the device, its type, its samples, the clock or the
world shows in the very next read."""

from __future__ import annotations

import httpx

from twin.automation.server import automation_of
from twin.sensors import sensors_of
from twin.serve import Twin

SENSOR = "env_sensor-0001"


async def detail(client: httpx.AsyncClient, auth: dict[str, str], device_id: str = SENSOR) -> dict:
    resp = await client.get(f"/api/devices/{device_id}", headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def create(client: httpx.AsyncClient, auth: dict[str, str], **fields) -> None:
    body = {"device_type": "env_sensor", "name": "Lab", "adapter_type": "webhook", "connection_config": {}}
    resp = await client.post("/api/devices", json={**body, **fields}, headers=auth)
    assert resp.status_code == 200, resp.text


async def test_a_standing_world_reads_the_same_detail(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(30)
    devices = automation_of(twin.world).devices
    assert devices.detail(SENSOR) is devices.detail(SENSOR)
    first, second = await detail(automation, auth), await detail(automation, auth)
    assert first == second and first["status"] == "online" and first["current_values"]


async def test_the_clock_moving_shows_at_once(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(30)
    before = await detail(automation, auth)
    twin.clock.advance(10)
    after = await detail(automation, auth)
    assert after["last_seen"] != before["last_seen"]
    fleet = sensors_of(twin.world).groups["env_sensor"]
    assert after["current_values"]["temperature"] == fleet.current(SENSOR)["temperature"]


async def test_a_rename_a_new_timeout_and_a_delete_show_at_once(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(30)
    assert (await detail(automation, auth))["name"] == SENSOR
    resp = await automation.put(
        f"/api/devices/{SENSOR}", json={"name": "Kitchen", "offline_timeout_secs": 60}, headers=auth
    )
    assert resp.status_code == 200, resp.text
    renamed = await detail(automation, auth)
    assert renamed["name"] == "Kitchen" and renamed["effective_offline_timeout_secs"] == 60
    assert (await automation.delete(f"/api/devices/{SENSOR}", headers=auth)).status_code == 200
    assert (await automation.get(f"/api/devices/{SENSOR}", headers=auth)).status_code == 404


async def test_pushed_samples_show_at_once(
    twin: Twin, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await create(automation, auth, device_id="lab-1")
    before = await detail(automation, auth, "lab-1")
    assert before["current_values"] == {} and before["status"] == "disconnected"
    pushed = await automation.post("/api/devices/lab-1/webhook", json={"temperature": 21.5})
    assert pushed.status_code == 200, pushed.text
    after = await detail(automation, auth, "lab-1")
    assert after["current_values"] == {"temperature": 21.5} and after["status"] == "online"
    again = await automation.post("/api/devices/lab-1/webhook", json={"temperature": 22.5})
    assert again.status_code == 200
    assert (await detail(automation, auth, "lab-1"))["current_values"] == {"temperature": 22.5}


async def test_a_changed_device_type_shows_at_once(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    door = {
        "device_type": "door",
        "name": "Door sensor",
        "metrics": [{"name": "open", "display_name": "Open", "data_type": "Boolean"}],
        "commands": [],
        "default_offline_timeout_secs": 60,
    }
    assert (await automation.post("/api/device-types", json=door, headers=auth)).status_code == 200
    await create(automation, auth, device_type="door", device_id="d1")
    before = await detail(automation, auth, "d1")
    assert [m["name"] for m in before["metrics"]] == ["open"]
    assert before["effective_offline_timeout_secs"] == 60
    changed = {**door, "metrics": [*door["metrics"], {"name": "battery", "data_type": "float"}]}
    changed["default_offline_timeout_secs"] = 120
    assert (await automation.delete("/api/device-types/door", headers=auth)).status_code == 200
    assert (await automation.post("/api/device-types", json=changed, headers=auth)).status_code == 200
    after = await detail(automation, auth, "d1")
    assert [m["name"] for m in after["metrics"]] == ["open", "battery"]
    assert after["metric_count"] == 2 and after["effective_offline_timeout_secs"] == 120


async def test_an_outage_and_a_restored_snapshot_show_at_once(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(100)
    snap = (await control.post("/snapshots")).json()
    at_snapshot = await detail(automation, auth)
    resp = await control.post("/actions/device_offline", json={"params": {"device": SENSOR}})
    assert resp.status_code == 200, resp.text
    twin.clock.advance(400)  # past the 300 s timeout with no report since t=100
    quiet = await detail(automation, auth)
    assert quiet["status"] == "offline" and quiet["last_seen"] == at_snapshot["last_seen"]
    restored = await control.post(f"/snapshots/{snap['id']}/restore")
    assert restored.status_code == 200, restored.text
    assert await detail(automation, auth) == at_snapshot
