"""Record and replay: ``twin record`` in front of a stand-in device (a twin on loopback) writes a
fixture; a scenario that replays it gives a client the same statuses and body bytes at the same
world times, event frames only as the world clock reaches their offsets, the vendor's not-found for
anything not recorded, and its faults and journal as on any member. Secrets never reach the file."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import re
import signal
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from api.members import record as record_module
from api.members.record import RecordOptions, Summary, record
from api.members.redact import credentials_in, mask, mask_bytes, secrets_in
from api.members.replay import Replay, schedule
from hardware.ports.fixture import OPENING_S, FixtureError, parse_fixture
from tests.api.members.test_passthrough import API_KEY, PASSWORD, automation_token, rsa_login
from tests.sockets import socket_settings, until
from twin import cli
from twin.scenario.model import ScenarioError, parse_scenario
from twin.serve import Running, build, start, stop
from twin.settings import LOOPBACK, Settings

pytestmark = pytest.mark.socket

HEADER = {"format": "twin-fixture", "version": 1, "vendor": "gateway"}


class Recorder:
    """``twin record`` in-process: its address, then its summary once stopped."""

    def __init__(self, options: RecordOptions) -> None:
        self.address: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(record(options, self.address.set_result, self.stop))

    async def url(self) -> str:
        return await asyncio.wait_for(asyncio.shield(self.address), 10)

    async def finish(self) -> Summary:
        self.stop.set()
        return await asyncio.wait_for(self.task, 20)


@pytest.fixture
async def stand_in(tmp_path: Path):
    """A twin on loopback in step mode: the "real" device and server that get recorded."""
    (tmp_path / "up").mkdir()
    up_twin = build(socket_settings(api_key=API_KEY))
    up = await start(up_twin, tmp_path / "up")
    try:
        yield up_twin, up
    finally:
        await stop(up)


async def replaying(tmp_path: Path, fleet: str, servers: str = "", **settings) -> Running:
    scenario = tmp_path / "replay.yaml"
    scenario.write_text(f"name: replay\nclock: {{mode: step}}\nfleet:\n{fleet}\n{servers}")
    (tmp_path / "front").mkdir()
    return await start(build(Settings(scenario=scenario, **LOOPBACK, **settings)), tmp_path / "front")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def at(lines: list[dict], kind: str, path: str) -> list[float]:
    return [r["t"] for r in lines if r.get("kind") == kind and r.get("path") == path]


async def test_a_stream_open_at_the_end_closes_with_1001_however_slow_its_upstream(
    stand_in, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder ends its open streams (1001) before its server shuts down, which would close
    them with 1012: on a loaded machine the upstream's close handshake outlasts the server's tick."""
    from websockets.asyncio.client import ClientConnection

    close = ClientConnection.close

    async def slow_close(self, *args, **kwargs):
        await asyncio.sleep(0.5)  # a busy machine
        return await close(self, *args, **kwargs)

    monkeypatch.setattr(ClientConnection, "close", slow_close)
    _, up = stand_in
    recorder = Recorder(
        RecordOptions("gateway", up.url("cam-01/http"), tmp_path / "cam.ndjson", duration=120)
    )
    base = await recorder.url()
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        token = (await rsa_login(http, base)).removeprefix("Bearer ")
    async with connect(base.replace("http://", "ws://") + f"/api/v1/events/stream?token={token}") as ws:
        await recorder.finish()
        with pytest.raises(ConnectionClosed) as ended:
            await asyncio.wait_for(ws.recv(), 10)
    assert ended.value.rcvd is not None and ended.value.rcvd.code == 1001


async def test_a_recorded_camera_replays_on_the_world_clock(stand_in, tmp_path: Path) -> None:
    up_twin, up = stand_in
    out = tmp_path / "cam.ndjson"
    recorder = Recorder(RecordOptions("gateway", up.url("cam-01/http"), out, duration=120))
    base = await recorder.url()
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        token = await rsa_login(http, base)  # through the recorder: a real session, not recorded
        auth = {"Authorization": token}
        info = await http.get("/api/v1/system/info", headers=auth)
        first = await http.get("/api/v1/system/stats", headers=auth)
        up_twin.clock.advance(3600)  # the device's figures move on
        await asyncio.sleep(0.05)
        later = await http.get("/api/v1/system/stats", headers=auth)
        refused = await http.get("/api/v1/system/info")
        bare = token.removeprefix("Bearer ")
        async with connect(base.replace("http://", "ws://") + f"/api/v1/events/stream?token={bare}") as ws:
            sent = []
            for n in range(2):
                await asyncio.sleep(OPENING_S + 0.1)  # past the stream's opening: these are events
                body = {"topic": f"app/demo/e{n}", "payload": {"n": n}}
                assert (await http.post("/api/v1/events/publish", headers=auth, json=body)).status_code == 200
                sent.append(await asyncio.wait_for(ws.recv(), 10))
    async with connect(base.replace("http://", "ws://") + f"/api/v1/events/stream?token={bare}") as open_ws:
        summary = await recorder.finish()  # a stream still open ends with the recording
        with pytest.raises(ConnectionClosed) as ended:
            await asyncio.wait_for(open_ws.recv(), 10)
        assert ended.value.rcvd is not None and ended.value.rcvd.code == 1001
    assert first.content != later.content and (info.status_code, refused.status_code) == (200, 401)
    assert (summary.exchanges, summary.streams, summary.frames) == (6, 2, 2)

    text = out.read_text()
    lines = records(out)
    assert {k: lines[0][k] for k in HEADER} == HEADER and lines[-1]["kind"] == "end"
    assert bare not in text and "/api/login" not in text and "public-key" not in text
    assert "token=***" in text
    t_first, t_later = at(lines, "http", "/api/v1/system/stats")
    frames = [r["t"] for r in lines if r.get("kind") == "frame" and not r.get("opening")]  # events

    front = await replaying(tmp_path, f"  cameras: {{count: 1, replay: {out}}}")
    twin = front.twin
    try:
        cam = front.url("cam-01/http")
        async with httpx.AsyncClient(base_url=cam, timeout=10) as http:
            token = await rsa_login(http, cam)  # the twin's own login answers on a replayed camera
            auth = {"Authorization": token}

            async def same(path: str, want: httpx.Response, headers=auth) -> None:
                got = await http.get(path, headers=headers)
                assert (got.status_code, got.content) == (want.status_code, want.content), path
                assert got.headers["content-type"] == want.headers["content-type"]

            assert twin.world.env.now < t_first
            await same("/api/v1/system/stats", first)  # before its first recording: the first one
            await same("/api/v1/system/info", info)
            twin.clock.run_to(t_later - 1e-6)
            await same("/api/v1/system/stats", first)
            twin.clock.run_to(t_later)
            await same("/api/v1/system/stats", later)
            await same("/api/v1/system/info", refused, headers={})  # no credentials: the device's 401
            wrong = await http.get("/api/v1/system/info", headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and wrong.json()["code"] == 2000
            unknown = await http.get("/api/v1/ai/models", headers=auth)
            assert (unknown.status_code, unknown.json()) == (404, {"code": 404, "message": "Not found"})
            preflight = {"Origin": "http://console", "Access-Control-Request-Method": "GET"}
            allowed = await http.options("/api/v1/system/info", headers=preflight)  # the camera's own CORS
            assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "*"
            twin.faults["cam-01"].add_errors(503, "/api/v1/system", count=1)
            assert (await http.get("/api/v1/system/info", headers=auth)).status_code == 503
            await same("/api/v1/system/info", info)

        bare = token.removeprefix("Bearer ")
        ws_url = cam.replace("http://", "ws://") + f"/api/v1/events/stream?token={bare}"
        assert twin.world.env.now < frames[0]
        async with connect(ws_url) as ws:
            with pytest.raises(TimeoutError):  # the world has not reached the first frame's offset
                await asyncio.wait_for(ws.recv(), 0.3)
            twin.clock.run_to(frames[0])
            assert await asyncio.wait_for(ws.recv(), 10) == sent[0]
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(ws.recv(), 0.2)
            twin.clock.run_to(frames[1])
            assert await asyncio.wait_for(ws.recv(), 10) == sent[1]
        with pytest.raises(InvalidStatus) as refused_ws:
            await connect(cam.replace("http://", "ws://") + "/api/v1/events/stream?token=wrong")
        assert refused_ws.value.response.status_code == 401
    finally:
        await stop(front)
    journal = {(e.server, e.method, e.path, e.status, e.fault) for e in twin.journal.entries}
    assert {
        ("cam-01", "GET", "/api/v1/system/stats", 200, None),
        ("cam-01", "GET", "/api/v1/system/info", 503, "http_503"),
        ("cam-01", "GET", "/api/v1/ai/models", 404, None),
        ("cam-01", "WS", "/api/v1/events/stream", 101, None),
    } <= journal


async def test_a_recorded_automation_server_replays_with_its_polls_and_event_stream(
    stand_in, tmp_path: Path, caplog
) -> None:
    caplog.set_level(logging.DEBUG)
    up_twin, up = stand_in
    out = tmp_path / "auto.ndjson"
    options = RecordOptions("automation", up.url("automation"), out, 120, api_key=API_KEY, poll_s=0.05)
    recorder = Recorder(options)
    base = await recorder.url()
    async with httpx.AsyncClient(base_url=base, timeout=10) as http:
        jwt = await automation_token(http, base)  # setup and login through the recorder
        bearer = {"Authorization": f"Bearer {jwt}"}
        devices = await http.get("/api/devices", headers=bearer)
        assert devices.status_code == 200
        async with http.stream("GET", f"/api/events/stream?token={jwt}") as sse:
            assert sse.status_code == 200
            chunks = sse.aiter_raw()
            await asyncio.sleep(OPENING_S + 0.1)  # past the stream's opening: an event, not a greeting
            up_twin.clock.advance(10)  # the stand-in's sensors report
            first_chunk = await asyncio.wait_for(anext(chunks), 10)
        ws_url = base.replace("http://", "ws://") + "/api/events/ws"
        async with connect(ws_url) as events:  # signs in with its first frame
            await events.send(json.dumps({"type": "Auth", "token": jwt}))
            signed_in = await asyncio.wait_for(events.recv(), 10)
        await until(lambda: b"/api/stats/system" in out.read_bytes())
    await recorder.finish()

    text = out.read_text()
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("twin"))
    for secret in (jwt, API_KEY, PASSWORD):
        assert secret not in text and secret not in logged
    assert "recorded" in logged  # the recorder's summary: counts only
    lines = records(out)
    assert {r["path"] for r in lines if r.get("kind") == "http"} >= {
        "/api/health",
        "/api/stats/system",
        "/api/devices",
    }
    stream = next(r for r in lines if r.get("kind") == "stream")
    assert (stream["transport"], stream["query"], stream["status"]) == ("sse", "token=***", 200)
    sse_id = stream["id"]
    frames = [r for r in lines if r.get("kind") == "frame" and r["stream"] == sse_id]
    assert frames[0]["text"].encode() == first_chunk and not frames[0].get("opening")  # an event
    greeting = next(r for r in lines if r.get("kind") == "frame" and r["stream"] != sse_id)
    assert greeting["opening"] and jwt not in greeting["text"]  # the answer to the sign-in

    servers = f"servers:\n  automation: {{replay: {out}}}\n"
    front = await replaying(tmp_path, "  cameras: {count: 1}", servers, api_key=API_KEY)
    twin = front.twin
    try:
        auto = front.url("automation")
        async with httpx.AsyncClient(base_url=auto, timeout=10) as http:
            jwt = await automation_token(http, auto)  # the twin's own setup and login
            bearer = {"Authorization": f"Bearer {jwt}"}
            (t_devices,) = [
                r["t"] for r in lines if r.get("body") == devices.text
            ]  # the client's, not a poll's
            twin.clock.run_to(t_devices)
            got = await http.get("/api/devices", headers=bearer)
            assert (got.status_code, got.content) == (devices.status_code, devices.content)
            keyed = await http.get("/api/devices", headers={"X-API-Key": API_KEY})
            assert (keyed.status_code, keyed.content) == (devices.status_code, devices.content)
            refused = await http.get("/api/devices", headers={"X-API-Key": "nmk_" + "00" * 16})
            assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHORIZED"
            unknown = await http.get("/api/rules", headers=bearer)
            assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "NOT_FOUND"

            twin.clock.run_to(0.0 + twin.world.env.now)
            async with http.stream("GET", f"/api/events/stream?token={jwt}") as sse:
                assert sse.status_code == 200
                chunks = sse.aiter_raw()
                pending = asyncio.ensure_future(anext(chunks))
                if twin.world.env.now < frames[0]["t"]:
                    await asyncio.sleep(0.2)
                    assert not pending.done()  # not before the world reaches the frame's offset
                twin.clock.run_to(max(frames[0]["t"], twin.world.env.now))
                assert await asyncio.wait_for(pending, 10) == first_chunk

        events_url = auto.replace("http://", "ws://") + "/api/events/ws"
        async with connect(events_url) as events:  # the replay checks the sign-in as the server does
            await events.send(json.dumps({"type": "Auth", "token": jwt}))
            assert await asyncio.wait_for(events.recv(), 10) == signed_in
        async with connect(events_url) as events:
            await events.send(json.dumps({"type": "Auth", "token": "forged"}))
            refused = json.loads(await asyncio.wait_for(events.recv(), 10))
            assert refused == {"type": "Error", "message": "Invalid or expired token"}
    finally:
        await stop(front)


def fixture_file(tmp_path: Path, *lines: str, name: str = "f.ndjson") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def scenario_problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as failed:
        parse_scenario(text, "s.yaml")
    return failed.value.problems


def test_a_missing_or_corrupt_fixture_is_a_scenario_error_naming_file_line_and_path(tmp_path: Path) -> None:
    header = json.dumps(HEADER)
    bad = fixture_file(
        tmp_path, header, '{"t": 1, "kind": "http", "method": "GET", "path": "/a", "status": "x"}'
    )
    missing = tmp_path / "missing.ndjson"
    automation = fixture_file(tmp_path, json.dumps({**HEADER, "vendor": "automation"}), name="a.ndjson")
    (problem,) = scenario_problems(f"name: s\nfleet:\n  cameras: {{count: 1, replay: {missing}}}\n")
    assert problem.startswith("s.yaml:3: fleet.cameras.replay:") and f"{missing}: cannot read" in problem
    (problem,) = scenario_problems(f"name: s\nfleet:\n  cameras:\n    - replay: {bad}\n")
    assert problem.startswith("s.yaml:4: fleet.cameras.0.replay:") and f"{bad}:2: status:" in problem
    (problem,) = scenario_problems(f"name: s\nfleet:\n  cameras: {{replay: {automation}}}\n")
    assert "recorded from the automation, not the gateway" in problem
    gateway = fixture_file(tmp_path, header, name="g.ndjson")
    (problem,) = scenario_problems(f"name: s\nservers:\n  automation: {{replay: {gateway}}}\n")
    assert problem.startswith("s.yaml:3: servers.automation") and "not the automation" in problem
    (problem,) = scenario_problems(
        f"name: s\nservers:\n  automation: {{real: http://h:1, replay: {automation}}}\n"
    )
    assert "exactly one of 'real'" in problem


def test_fixture_problems_name_their_line_and_key() -> None:
    header = json.dumps(HEADER)
    text = "\n".join(
        [
            header,
            "{not json",
            '{"t": -1, "kind": "http", "method": "GET", "path": "/a", "status": 200, "extra": 1}',
            '{"t": 1, "kind": "frame", "stream": 7, "text": "x"}',
            '{"t": 1, "kind": "frame", "stream": 7, "b64": "!!"}',
            '{"t": 1, "kind": "teleport"}',
        ]
    )
    with pytest.raises(FixtureError) as failed:
        parse_fixture(text, "x.ndjson")
    problems = failed.value.problems
    assert problems[0].startswith("x.ndjson:2: not JSON")
    assert any(p.startswith("x.ndjson:3: t:") for p in problems)
    assert "x.ndjson:3: extra: unknown key" in problems
    assert "x.ndjson:4: stream: stream 7 is not opened in this file" in problems
    assert any(p.startswith("x.ndjson:5: ") and "base64" in p for p in problems)
    assert any(p.startswith("x.ndjson:6: record:") and "teleport" in p for p in problems)
    for text in ("", '{"t": 1, "kind": "end"}', json.dumps({**HEADER, "version": 2})):
        with pytest.raises(FixtureError, match=r"header|version"):
            parse_fixture(text, "x.ndjson")


def test_the_record_command_line(capsys, monkeypatch) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "record " in capsys.readouterr().out
    for argv, message in (
        (["--duration", "5", "--out", "f"], "--camera"),
        (["--camera", "ftp://x", "--duration", "5", "--out", "f"], "http://"),
        (["--camera", "http://h:1", "--duration", "0", "--out", "f"], "positive"),
        (["--camera", "http://h:1", "--duration", "5", "--out", "f", "--listen", "h"], "HOST:PORT"),
        (
            ["--camera", "http://h:1", "--duration", "5", "--out", "f", "--api-key-env", "NOPE_UNSET"],
            "NOPE_UNSET",
        ),
    ):
        monkeypatch.delenv("NOPE_UNSET", raising=False)
        with pytest.raises(SystemExit) as exited:
            cli.main(["record", *argv])
        assert exited.value.code == 2 and message in capsys.readouterr().err


def test_opening_frames_come_at_once_and_events_keep_their_offsets() -> None:
    lines = [
        json.dumps(HEADER),
        '{"t": 10, "kind": "stream", "id": 1, "transport": "ws", "path": "/s", "status": 101}',
        '{"t": 10.1, "kind": "frame", "stream": 1, "text": "hello", "opening": true}',
        '{"t": 15, "kind": "frame", "stream": 1, "text": "early"}',
        '{"t": 30, "kind": "frame", "stream": 1, "b64": "AAE="}',
    ]
    recorded = parse_fixture("\n".join(lines)).socket("/s", "", 0.0)
    assert recorded is not None
    on_time = [(at, f.payload) for at, f in schedule(recorded, 0.0)]
    assert on_time == [(0.0, "hello"), (15.0, "early"), (30.0, b"\x00\x01")]
    late = [(round(at, 6), f.payload) for at, f in schedule(recorded, 20.0)]
    assert late == [(20.0, "hello"), (30.0, b"\x00\x01")]


async def test_twin_record_runs_as_a_process_until_interrupted(stand_in, tmp_path: Path) -> None:
    _, up = stand_in
    out = tmp_path / "process.ndjson"
    argv = ["record", "--camera", up.url("cam-01/http"), "--duration", "120", "--out", str(out)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "twin.cli", *argv, "--listen", "127.0.0.1:0", "--poll", "0.1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        url = re.search(r"recording at (http://\S+)", line)
        assert url is not None, line
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(url.group(1) + "/api/v1/system/health")).status_code == 200
        await until(lambda: b'"/api/v1/monitor/summary"' in out.read_bytes(), attempts=1500)  # a poll
        proc.send_signal(signal.SIGINT)
        output = (await asyncio.wait_for(proc.communicate(), 60))[0].decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0 and f"wrote {out}" in output, output
    lines = records(out)
    assert lines[-1]["kind"] == "end" and {r.get("status") for r in lines[1:-1]} >= {200, 401}


def test_an_answer_is_chosen_by_time_then_like_requests_first() -> None:
    def http(t: float, body: str, auth: bool = True, digest: str | None = None) -> str:
        record = {"t": t, "kind": "http", "method": "POST", "path": "/p", "status": 200, "body": body}
        return json.dumps({**record, "auth": auth, "body_sha256": digest})

    a, b = "a" * 64, "b" * 64
    fixture = parse_fixture(
        "\n".join(
            [json.dumps(HEADER), http(5, "one", digest=a), http(9, "two", digest=b), http(7, "bare", False)]
        )
    )

    def body(t: float, auth: bool = True, digest: str | None = None) -> str | None:
        found = fixture.answer("POST", "/p", "", digest, auth, t)
        return found.body if found is not None else None

    assert [body(0), body(5), body(8.9), body(9), body(100)] == ["one", "one", "one", "two", "two"]
    assert [body(100, digest=a), body(100, digest="c" * 64)] == ["one", "two"]
    assert [body(0, auth=False), body(100, auth=False)] == ["bare", "bare"]
    assert fixture.answer("GET", "/p", "", None, True, 5) is None
    assert fixture.answer("POST", "/p", "x=1", None, True, 5) is None


def test_secrets_are_masked_wherever_they_appear() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZG1pbiJ9.c2lnbmF0dXJlLXZhbHVl"
    body = json.dumps({"token": "s3cr3t-t0ken", "api_key": "nmk_" + "ab" * 16, "note": f"Bearer {jwt}"})
    assert secrets_in(body) >= {"s3cr3t-t0ken", jwt}
    masked = mask(body + " seen-elsewhere", known={"seen-elsewhere", "abc"})
    assert "s3cr3t" not in masked and "nmk_" not in masked and jwt not in masked
    assert "seen-elsewhere" not in masked and masked.count("***") == 4
    assert mask('{"has_password": true, "token_type": ""}') == '{"has_password": true, "token_type": ""}'
    assert mask_bytes(b"\x00" + jwt.encode() + b"\x01", known={"zzzzzz"}) == b"\x00***\x01"
    url = '{"webhook_url":"http://h/api/devices/d1/webhook?token=wh-s3cret&x=1"}'
    assert mask(url) == '{"webhook_url":"http://h/api/devices/d1/webhook?token=***&x=1"}'
    assert "wh-s3cret" in secrets_in(url)
    assert credentials_in(
        {"type": "http", "headers": [(b"x-api-key", b"k1")], "query_string": b"a=1&access_token=t2"}
    ) == ["k1", "t2"]


def test_frames_past_the_cap_are_relayed_but_not_recorded(monkeypatch) -> None:
    monkeypatch.setattr(record_module, "MAX_FRAMES", 10)
    out = io.StringIO()
    writer = record_module.FixtureWriter(out, "gateway", clock=lambda: 0.0)
    for text in ("12345", "6789", "abc"):
        writer.write({"t": 0.0, "kind": "frame", "stream": 1, **writer.frame(text, 0.0)})
    writer.end()
    frames = [json.loads(line) for line in out.getvalue().splitlines() if '"frame"' in line]
    assert [f["text"] for f in frames] == ["12345", "6789"]
    assert (writer.summary.frames, writer.summary.skipped) == (2, 1)


async def test_a_frame_waits_no_later_than_its_offset() -> None:
    now, at = 0.382741, 2.647693  # at - now, added back to now, lands past at
    assert now + (at - now) > at
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    fixture = parse_fixture(json.dumps(HEADER))
    replay = Replay(fixture, SimpleNamespace(state=None), now=lambda: now, sleep=sleep)
    await replay._until(at)
    assert waited and now + waited[0] <= at
