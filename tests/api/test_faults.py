"""Transport faults on the world clock: latency (many delayed requests cost one wait, not one each),
5xx bursts, resets, loss, hangs and bandwidth caps, driven through the control plane's actions."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from api.faults import FaultSet, InjectedReset
from tests.conftest import admin_token
from twin.serve import Twin


async def test_100_requests_waiting_5s_finish_after_one_advance(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient, gateway: httpx.AsyncClient
) -> None:
    resp = await control.post("/faults/automation/latency", json={"seconds": 5, "path_prefix": "/api/health"})
    assert resp.status_code == 200
    tasks = [asyncio.create_task(automation.get("/api/health")) for _ in range(100)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert not any(t.done() for t in tasks)

    # Meanwhile other requests are served: another server, and another path on the same server.
    assert (await gateway.get("/api/v1/system/health")).status_code == 200
    assert (await automation.get("/api/setup/status")).status_code == 200
    assert not any(t.done() for t in tasks)

    await control.post("/clock/advance", json={"seconds": 5})
    responses = await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
    assert [r.status_code for r in responses] == [200] * 100
    assert twin.clock.state().sim_time == 5

    await control.delete("/faults/automation")
    assert (await asyncio.wait_for(automation.get("/api/health"), timeout=30)).status_code == 200


async def test_5xx_burst_answers_the_next_n_requests_and_is_journalled(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    resp = await control.post("/actions/http_errors", json={"params": {"status": 502, "count": 2}})
    assert resp.status_code == 200
    codes = [(await automation.get("/api/health")).status_code for _ in range(3)]
    assert codes == [502, 502, 200]
    faults = [e["fault"] for e in (await control.get("/journal")).json()["entries"]]
    assert faults == ["http_502", "http_502", None]


async def test_reset_closes_the_connection_and_journals_status_0(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    await control.post("/actions/network_reset", json={"params": {"count": 1}})
    with pytest.raises(InjectedReset):  # in-process, the reset surfaces as the raised error
        await automation.get("/api/health")
    assert (await automation.get("/api/health")).status_code == 200
    entries = (await control.get("/journal")).json()["entries"]
    assert [(e["status"], e["fault"]) for e in entries] == [(0, "reset"), (200, None)]


async def test_hang_holds_requests_until_undone_on_the_world_clock(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    resp = await control.post("/actions/network_hang", json={"params": {"server": "automation"}, "for": 10})
    assert resp.json()["undo_at"] == 10
    task = asyncio.create_task(automation.get("/api/health"))
    for _ in range(5):
        await asyncio.sleep(0)
    await control.post("/clock/advance", json={"seconds": 5})
    assert not task.done()
    await control.post("/clock/advance", json={"seconds": 6})
    with pytest.raises(InjectedReset):
        await asyncio.wait_for(task, timeout=10)
    assert (await automation.get("/api/health")).status_code == 200


def test_loss_and_jitter_draw_the_same_numbers_for_the_same_seed() -> None:
    def draws(seed: int) -> tuple[list[bool], list[float]]:
        faults = FaultSet(seed=seed, loss=0.3)
        faults.add_latency(1.0, "/", jitter=0.5)
        return [faults.should_reset() for _ in range(50)], [faults.delay_for("/x") for _ in range(20)]

    resets, delays = draws(11)
    assert draws(11) == (resets, delays) and draws(12) != (resets, delays)
    assert 5 <= sum(resets) <= 25 and all(0.5 <= d <= 1.5 for d in delays) and len(set(delays)) > 10


async def test_bandwidth_cap_delays_the_body_on_the_world_clock(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    await control.post("/actions/bandwidth", json={"params": {"bytes_per_second": 1}})
    task = asyncio.create_task(automation.get("/api/health"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done()
    await control.post("/clock/advance", json={"seconds": 3600})
    assert (await asyncio.wait_for(task, timeout=10)).status_code == 200


@pytest.mark.parametrize(
    ("name", "body", "status", "needle"),
    [
        ("no_such_action", {}, 400, "unknown action"),
        ("device_offline", {"params": {"device": "x"}}, 404, "no simulated sensor 'x'"),
        ("device_online", {"params": {"device": "env_sensor-0001"}}, 400, "is not offline"),
        ("telemetry_gap", {"params": {"device": "env_sensor-0001", "seconds": 0}}, 400, "seconds"),
        (
            "telemetry_spike",
            {"params": {"device": "env_sensor-0001", "metric": "colour", "delta": 1}},
            400,
            "colour",
        ),
        ("telemetry_spike", {"params": {"device": "env_sensor-0001", "metric": "humidity"}}, 400, "delta"),
        ("latency", {"params": {"seconds": "slow"}}, 400, "seconds"),
        ("latency", {"params": {}}, 400, "seconds"),
        ("latency", {"params": {"seconds": 1, "colour": "red"}}, 400, "colour"),
        ("latency", {"params": {"seconds": 1, "server": "cam-99"}}, 404, "cam-99"),
        ("latency", {"params": {"seconds": 1}, "for": -1}, 400, "for"),
        ("device_delete", {"params": {"device": "nope"}}, 404, "nope"),
        ("ntp_jump", {"params": {"camera": "cam-07", "seconds": 5}}, 404, "cam-07"),
    ],
)
async def test_actions_refuse_bad_requests(
    control: httpx.AsyncClient, name: str, body: dict, status: int, needle: str
) -> None:
    resp = await control.post(f"/actions/{name}", json=body)
    assert resp.status_code == status, resp.text
    assert needle in resp.json()["error"]["message"]


async def test_action_catalogue_and_undo(control: httpx.AsyncClient, twin: Twin) -> None:
    listed = (await control.get("/actions")).json()
    names = {a["name"] for a in listed["actions"]}
    assert {"rate_limit_storm", "device_offline", "telemetry_spike"} <= names
    run = (await control.post("/actions/latency", json={"params": {"seconds": 2}})).json()
    assert (await control.get("/actions")).json()["active"] == [run["id"]]
    assert twin.faults["automation"].delay_for("/api") == 2
    assert (await control.delete(f"/actions/{run['id']}")).status_code == 200
    assert twin.faults["automation"].delay_for("/api") == 0
    again = await control.delete(f"/actions/{run['id']}")
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
    bad = await control.delete("/actions/first")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    wrong = await control.post("/actions/latency", json={"params": [1, 2]})
    assert wrong.status_code == 400


async def test_truncated_body_stops_halfway_and_is_journalled(
    twin: Twin, control: httpx.AsyncClient, automation: httpx.AsyncClient
) -> None:
    resp = await control.post("/actions/truncated_body", json={"params": {"count": 1}})
    assert resp.status_code == 200
    with pytest.raises(InjectedReset):
        await automation.get("/api/health")
    assert (await automation.get("/api/health")).status_code == 200
    entries = (await control.get("/journal")).json()["entries"]
    assert [(e["status"], e["fault"]) for e in entries] == [(0, "truncated"), (200, None)]


async def test_reset_and_truncation_over_a_real_socket(tmp_path) -> None:
    from tests.sockets import socket_settings
    from twin.serve import build, start, stop

    live = build(socket_settings())
    running = await start(live, tmp_path)
    try:
        base = running.url("automation")
        live.control.run_action("network_reset", {"count": 1})
        live.control.run_action("truncated_body", {"count": 1})
        async with httpx.AsyncClient(base_url=base) as client:
            for _ in range(2):
                with pytest.raises(httpx.RemoteProtocolError):
                    await client.get("/api/health")
            assert (await client.get("/api/health")).status_code == 200
    finally:
        await stop(running)
    faults = [e.fault for e in live.journal.entries]
    assert faults == ["reset", "truncated", None]


async def test_drop_streams_closes_open_websockets_with_1012(tmp_path) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from tests.sockets import socket_settings, until
    from twin.serve import build, start, stop

    live = build(socket_settings())
    running = await start(live, tmp_path)
    try:
        base = running.url("cam-01/http")
        async with httpx.AsyncClient(base_url=base) as client:
            login = await client.post("/api/login", json={"username": "admin", "password": "password"})
        token = login.json()["data"]["token"].removeprefix("Bearer ")
        url = base.replace("http", "ws", 1) + f"/api/v1/events/stream?token={token}"
        async with connect(url) as ws:
            await until(lambda: len(live.faults["cam-01"].streams) == 1)
            assert live.control.run_action("drop_streams", {"server": "cam-01"})["undo_at"] is None
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1012
        await until(lambda: any(e.method == "WS" for e in live.journal.entries))
        assert live.faults["cam-01"].streams == {}
    finally:
        await stop(running)
    (entry,) = [e for e in live.journal.entries if e.method == "WS"]
    assert (entry.status, entry.fault) == (101, "dropped")


async def test_drop_streams_ends_an_open_sse_stream_cleanly(tmp_path) -> None:
    from tests.sockets import socket_settings, until
    from twin.serve import build, start, stop

    live = build(socket_settings())
    running = await start(live, tmp_path)
    try:
        base = running.url("automation")
        async with httpx.AsyncClient(base_url=base, timeout=10) as client:
            token = await admin_token(client)
            live.clock.advance(12)
            async with client.stream("GET", "/api/events/stream", params={"token": token}) as resp:
                assert resp.status_code == 200
                await until(lambda: len(live.faults["automation"].streams) == 1)
                live.control.run_action("drop_streams", {"server": "automation"})
                body = await asyncio.wait_for(resp.aread(), timeout=10)  # the body ends: no reset
            assert isinstance(body, bytes)
            live.clock.advance(5)
            again = await client.get("/api/health")
            assert again.status_code == 200  # the server carries on
        await until(lambda: any(e.stream for e in live.journal.entries))
        assert live.faults["automation"].streams == {}
    finally:
        await stop(running)
    (entry,) = [e for e in live.journal.entries if e.stream]
    assert (entry.status, entry.fault, entry.at, entry.end) == (200, "dropped", 12.0, 12.0)
