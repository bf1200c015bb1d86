"""reconnects_stream over its three transports: WebSockets and Server-Sent Events from the request
journal, MQTT sessions from the embedded broker's session log. Judged on hand-made records, then on
what a real SSE response and a real MQTT client leave behind."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from pathlib import Path

import httpx
import pytest
from amqtt.client import MQTTClient

from api.realtime.broker import BRIDGE_CLIENT_ID, EmbeddedBroker, MqttSession, SessionLog
from tests.conftest import admin_token
from tests.sockets import socket_settings, until
from twin.journal import JournalEntry
from twin.scenario import ScenarioError
from twin.scenario.expectations import ReconnectsStream, RunRecord
from twin.scenario.model import parse_scenario
from twin.serve import build, start, stop

_seq = itertools.count(1)
EVENTS_WS = "/api/v1/events/stream"
EVENTS_SSE = "/api/events/stream"


def ws(at: float, end: float, status: int = 101) -> JournalEntry:
    return JournalEntry(next(_seq), at, end, "cam-01", "WS", EVENTS_WS, EVENTS_WS, "", status, "::1")


def sse(at: float, end: float, status: int = 200, route: str = EVENTS_SSE) -> JournalEntry:
    opened = status == 200 and route == EVENTS_SSE
    return JournalEntry(
        next(_seq), at, end, "automation", "GET", route, route, "", status, "::1", stream=opened
    )


def judge(run: RunRecord, **kw) -> tuple[bool | None, str]:
    verdict = ReconnectsStream(expect="reconnects_stream", **kw).judge(run)
    return (None if verdict.inconclusive else verdict.passed), verdict.message


def record(journal=(), mqtt=(), outages=(), end: float = 300) -> RunRecord:
    return RunRecord(journal=list(journal), events=[], end=end, mqtt=list(mqtt), broker_outages=list(outages))


# WebSockets: as before, now one transport of three ------------------------------------------------
def test_websocket_drops_are_judged_as_before() -> None:
    run = record([ws(0, 30), ws(32, 300)])
    assert judge(run, transport="ws") == (True, "reconnected after 1 dropped WS stream")
    late = record([ws(0, 30), ws(45, 300)])
    assert judge(late, transport="ws") == (False, "no new WS connection within 10 s of the drop at t=30")
    refused = record([ws(0, 30), ws(31, 31, status=403)])
    assert judge(refused, transport="ws") == (False, "never had its WS stream back after the drop at t=30")
    assert judge(late, transport="sse") == (None, "not exercised: no SSE stream was dropped")


# Server-Sent Events ---------------------------------------------------------------------------------
def test_an_sse_stream_opened_again_in_time_passes() -> None:
    run = record([sse(0, 40), sse(41, 42, status=401), sse(43, 300)])
    assert judge(run, server="automation", transport="sse") == (
        True,
        "reconnected after 1 dropped SSE stream",
    )
    assert judge(run, server="automation", transport="sse", seconds=0.5)[0] is False  # first attempt at 41


def test_an_sse_stream_never_had_again_fails() -> None:
    run = record([sse(0, 40), sse(41, 41, status=401), sse(50, 50, status=401)])
    ok, message = judge(run, server="automation", transport="sse")
    assert not ok and message == "never had its SSE stream back after the drop at t=40"
    gone = record([sse(0, 40)])
    ok, message = judge(gone, server="automation", transport="sse")
    assert not ok and message == "no new SSE connection within 10 s of the drop at t=40"


def test_plain_requests_and_late_drops_are_not_sse_drops() -> None:
    run = record([sse(0, 0, route="/api/devices"), sse(5, 5, route="/api/devices"), sse(0, 295)])
    assert judge(run, server="automation") == (None, "not exercised: no WS/SSE/MQTT stream was dropped")
    other = record([sse(0, 40)])
    assert judge(other, server="cam-01", transport="sse")[0] is None  # another server's stream


# MQTT ------------------------------------------------------------------------------------------------
def session(client: str, at: float, end: float | None, clean: bool | None) -> MqttSession:
    return MqttSession(client, at, end, clean)


def test_an_mqtt_session_back_after_the_outage_passes() -> None:
    run = record(mqtt=[session("qa", 0, 30, False), session("qa", 104, None, None)], outages=[(30, 100)])
    assert judge(run, transport="mqtt", seconds=15) == (True, "reconnected after 1 dropped MQTT stream")


def test_the_seconds_run_from_the_broker_coming_back() -> None:
    run = record(mqtt=[session("qa", 0, 30, False), session("qa", 120, None, None)], outages=[(30, 100)])
    ok, message = judge(run, transport="mqtt", seconds=15)
    assert not ok
    assert message == "no new MQTT connection within 15 s of the drop at t=30 (possible again from t=100)"
    assert judge(run, transport="mqtt", seconds=30)[0]


def test_only_the_same_client_id_counts_as_reconnecting() -> None:
    run = record(mqtt=[session("qa", 0, 30, False), session("other", 101, None, None)], outages=[(30, 100)])
    assert not judge(run, transport="mqtt", seconds=15)[0]


def test_a_drop_without_an_outage_counts_from_the_drop() -> None:
    run = record(mqtt=[session("qa", 0, 50, False), session("qa", 55, None, None)])
    assert judge(run, transport="mqtt")[0]
    assert not judge(record(mqtt=[session("qa", 0, 50, False)]), transport="mqtt")[0]


def test_what_is_not_an_mqtt_drop() -> None:
    said_goodbye = record(mqtt=[session("qa", 0, 50, True)])
    assert judge(said_goodbye, transport="mqtt") == (None, "not exercised: no MQTT stream was dropped")
    never_back = record(mqtt=[session("qa", 0, 30, False)], outages=[(30, None)])
    assert judge(never_back, transport="mqtt")[0] is None
    too_late = record(mqtt=[session("qa", 0, 30, False)], outages=[(30, 295)])
    assert judge(too_late, transport="mqtt")[0] is None
    still_open = record(mqtt=[session("qa", 0, None, None)])
    assert judge(still_open, transport="mqtt")[0] is None


def test_any_transport_judges_mqtt_whatever_the_server() -> None:
    run = record([ws(0, 300)], mqtt=[session("qa", 0, 30, False)], outages=[(30, 100)])
    assert judge(run, server="automation", seconds=15)[0] is False
    assert judge(run, server="automation", transport="ws")[0] is None


def test_the_transport_field_validates() -> None:
    text = "name: x\nexpectations:\n  - expect: reconnects_stream\n    transport: {}\n"
    assert parse_scenario(text.format("mqtt"), "s.yaml").expectations[0].transport == "mqtt"
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text.format("carrier"), "s.yaml")
    assert "s.yaml:4: expectations.0.transport" in str(err.value)


# Real sockets -----------------------------------------------------------------------------------------
async def test_a_real_sse_stream_is_journalled_when_it_ends_and_judged() -> None:
    live = build(socket_settings())
    with tempfile.TemporaryDirectory() as tmp:
        running = await start(live, Path(tmp))
        try:
            base = running.url("automation") + "/api"
            async with httpx.AsyncClient(timeout=10) as http:
                token = await admin_token(httpx.AsyncClient(base_url=running.url("automation")))
                url = f"{base}/events/stream"

                async def open_for(seconds: float, expected: int) -> None:
                    async with http.stream("GET", url, params={"token": token}) as resp:
                        assert resp.status_code == 200
                        assert resp.headers["content-type"].startswith("text/event-stream")
                        live.clock.advance(seconds)
                    await until(lambda: sum(e.stream for e in live.journal.entries) == expected)

                await open_for(10, 1)
                live.clock.advance(3)
                assert (await http.get(url, params={"token": "wrong"})).status_code == 401
                await open_for(5, 2)
                live.clock.advance(12)
        finally:
            await stop(running)
    entries = [e for e in live.journal.entries if e.route == EVENTS_SSE]
    first, refused, second = entries
    assert (first.at, first.end, first.status, first.stream, first.query) == (0, 10, 200, True, "token=***")
    assert (refused.status, refused.stream) == (401, False)
    assert (second.at, second.end, second.stream) == (13, 18, True)
    assert "stream_end=10.000000" in first.trace_line()
    run = RunRecord(
        journal=live.journal.entries, events=[], end=20
    )  # the second stream ends too late to judge
    assert judge(run, server="automation", transport="sse", seconds=5)[0]
    assert judge(run, server="automation", transport="sse", seconds=2) == (
        False,
        "no new SSE connection within 2 s of the drop at t=10",
    )


async def test_the_broker_logs_real_sessions_and_outages_on_the_given_clock() -> None:
    now = [0.0]
    log = SessionLog(lambda: now[0])
    broker = EmbeddedBroker("127.0.0.1", 0, sessions=log)
    await broker.start()
    port = broker.port
    url = f"mqtt://127.0.0.1:{port}"

    def client(client_id: str) -> MQTTClient:
        return MQTTClient(client_id=client_id, config={"auto_reconnect": False, "plugins": {}})

    try:
        polite = client("qa")
        await polite.connect(url)
        bridge = client(BRIDGE_CLIENT_ID)
        await bridge.connect(url)
        now[0] = 5.0
        await polite.disconnect()
        await until(lambda: log.sessions and log.sessions[0].end is not None)
        assert list(log.sessions) == [MqttSession("qa", 0.0, 5.0, True)]

        now[0] = 10.0
        dropped = client("qa")
        await dropped.connect(url)
        await until(lambda: len(log.sessions) == 2)
        now[0] = 30.0
        await broker.stop()
        assert log.sessions[1] == MqttSession("qa", 10.0, 30.0, False) and log.outages == [(30.0, None)]

        now[0] = 40.0
        broker = EmbeddedBroker("127.0.0.1", port, sessions=log)
        await broker.start()
        assert log.outages == [(30.0, 40.0)]
        now[0] = 44.0
        again = client("qa")
        await again.connect(url)
        await until(lambda: len(log.sessions) == 3)
        assert log.sessions[2] == MqttSession("qa", 44.0, None, None)
        await asyncio.gather(again.disconnect(), bridge.disconnect(), return_exceptions=True)
    finally:
        await broker.stop()
    run = record(mqtt=list(log.sessions), outages=log.outages, end=100)
    assert judge(run, transport="mqtt", seconds=5) == (True, "reconnected after 1 dropped MQTT stream")
    assert judge(run, transport="mqtt", seconds=3)[0] is False
    assert all(s.client_id == "qa" for s in log.sessions)  # the bridge's own sessions are not logged
