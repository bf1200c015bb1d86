"""The earlier-release profile (``--release 0.9.17``): old paths, open registration with the first
registrant as administrator, ``hours`` ignored, ``value`` always the average, the ``PORT`` variable."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import httpx
import pytest

from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings, parse


@pytest.fixture
def old(settings: Settings) -> Twin:
    return build(dataclasses.replace(settings, release="0.9.17"))


@pytest.fixture
async def client(old: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(old.automation_app, "http://automation") as c:
        yield c


def test_port_variable() -> None:
    assert parse(["run", "--release", "0.9.17"], {"PORT": "7000", "NEOMIND_PORT": "7001"})[1].port == 7000
    assert parse(["run"], {"PORT": "7000", "NEOMIND_PORT": "7001"})[1].port == 7001


async def test_open_registration_first_user_is_admin(client: httpx.AsyncClient) -> None:
    first = await client.post("/api/auth/register", json={"username": "first", "password": "pw1234"})
    assert first.status_code == 201 and first.json()["user"]["role"] == "admin"
    second = await client.post(
        "/api/auth/register", json={"username": "second", "password": "pw1234", "role": "admin"}
    )
    assert second.status_code == 201 and second.json()["user"]["role"] == "user"


async def test_old_device_paths(old: Twin, client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    old.clock.advance(7200)
    types = (await client.get("/api/devices/types", headers=auth)).json()["data"]
    assert "env_sensor" in {t["device_type"] for t in types["device_types"]}
    history = await client.get(
        "/api/devices/env_sensor-0001/history?metric=temperature&time_range=1h", headers=auth
    )
    rows = history.json()["data"]["data"]["temperature"]
    assert len(rows) == 100 and rows[0]["timestamp"] == 1767225600 + 7200  # newest first, default limit
    url = "/api/devices/env_sensor-0001/history?metric=temperature&time_range=1h&limit=5000"
    whole = await client.get(url, headers=auth)
    assert len(whole.json()["data"]["data"]["temperature"]) == 361  # t = 3600 .. 7200 every 10 s
    control = await client.post(
        "/api/devices/env_sensor-0001/control", json={"command": "identify"}, headers=auth
    )
    assert control.status_code == 200 and control.json()["data"]["sent"] is True
    bad = await client.get("/api/devices/env_sensor-0001/history?time_range=forever", headers=auth)
    assert bad.status_code == 400
    assert (await client.get("/api/devices/ghost/history", headers=auth)).status_code == 404
    assert (
        await client.post("/api/devices/env_sensor-0001/control", json={}, headers=auth)
    ).status_code == 422
    assert (await client.get("/api/devices/env_sensor-0001/history")).status_code == 401


async def test_old_paths_do_not_exist_in_0924(twin: Twin, automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    assert (await automation.get("/api/devices/env_sensor-0001/history", headers=auth)).status_code == 404
    assert (await automation.post("/api/devices/env_sensor-0001/control", json={"command": "x"},
                                  headers=auth)).status_code in (404, 405)  # fmt: skip


async def test_hours_ignored_and_value_is_the_average(old: Twin, client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    old.clock.advance(3 * 3600)
    url = "/api/devices/env_sensor-0001/telemetry?metric=temperature&limit=5000"
    one_hour = (await client.get(url + "&hours=1", headers=auth)).json()["data"]
    default = (await client.get(url, headers=auth)).json()["data"]
    # hours ignored: both are the newest 5000 of the day (the world's past fills the hours before t=0)
    assert one_hour["data"] == default["data"] and len(default["data"]["temperature"]) == 5000
    assert default["pagination"]["total"] == 24 * 360 + 1
    for fn in ("max", "min", "sum", "last", "nonsense"):
        row = (await client.get(url + f"&aggregate={fn}", headers=auth)).json()["data"]["data"][
            "temperature"
        ][0]
        assert row["value"] == pytest.approx(row["sum"] / row["count"])


async def test_deleting_an_unknown_device_is_a_500(client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    gone = await client.delete("/api/devices/nope", headers=auth)
    assert gone.status_code == 500 and gone.json()["error"]["code"] == "INTERNAL_ERROR"
    assert "nope" in gone.json()["error"]["message"]
    assert (await client.delete("/api/devices/env_sensor-0001", headers=auth)).status_code == 200


async def test_cursor_is_the_window_start_and_a_large_offset_is_seconds(
    old: Twin, client: httpx.AsyncClient
) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(client)}"}
    old.clock.advance(7200)
    url = "/api/devices/env_sensor-0001/telemetry?metric=temperature&limit=5000"
    now = 1767225600 + 7200
    page = (await client.get(url + f"&cursor={now - 100}", headers=auth)).json()["data"]
    stamps = [p["timestamp"] for p in page["data"]["temperature"]]
    assert stamps[0] == now and stamps[-1] == now - 100  # newer than the cursor, not older
    page = (await client.get(url + "&offset=300", headers=auth)).json()["data"]
    stamps = [p["timestamp"] for p in page["data"]["temperature"]]
    assert stamps[0] == now and stamps[-1] == now - 300 and len(stamps) == 31  # 300 s, not 300 rows
    page = (await client.get(url + "&offset=5", headers=auth)).json()["data"]
    assert page["data"]["temperature"][0]["timestamp"] == now - 50  # up to 100: rows skipped
