"""A real member behind the twin's layers: a second twin whose camera and automation server are
"real" ones (a first, simulated twin on loopback). Answers come back byte for byte, logins pass
through, WebSocket frames and event streams are relayed, and the fault layer, the rate-limit
storm, token expiry and the request journal act at the passthrough as they do on simulated members."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from hardware.ports.types import ClockMode
from tests.conftest import SCENARIOS
from tests.sockets import socket_settings, until
from twin import settings as settings_mod
from twin.serve import build, start, stop
from twin.settings import LOOPBACK, RealMemberError, Settings

pytestmark = pytest.mark.socket

PASSWORD = "abc12345"
"""The automation server's admin, set up through the passthrough."""
GATEWAY_PASSWORD = b"password"
API_KEY = "nmk_" + "cd" * 16
"""The real server's default key (``NEOMIND_API_KEY`` there); the front twin checks it at start."""
SAME_HEADERS = ("content-type", "content-length", "www-authenticate", "date", "server")


@pytest.fixture
async def pair(tmp_path: Path):
    """(front twin, upstream twin, their running servers): the front's cam-01 and automation
    server are the upstream's."""
    (tmp_path / "up").mkdir()
    (tmp_path / "front").mkdir()
    up_twin = build(socket_settings(api_key=API_KEY))
    up = await start(up_twin, tmp_path / "up")
    front_settings = Settings(
        scenario=SCENARIOS / "test.yaml",
        **LOOPBACK,
        real_automation=up.url("automation"),
        real_automation_api_key=API_KEY,
        real_cameras=(f"cam-01={up.url('cam-01/http')}",),
    )
    front_twin = build(front_settings)
    front = await start(front_twin, tmp_path / "front")
    try:
        yield front_twin, up_twin, front, up
    finally:
        await stop(front)
        await stop(up)


REQUEST_ID = re.compile(rb'"request_id":"[^"]*"')


def same(a: httpx.Response, b: httpx.Response) -> None:
    """The same answer, byte for byte but for the per-request id the automation server stamps."""
    assert (a.status_code, REQUEST_ID.sub(b"", a.content)) == (b.status_code, REQUEST_ID.sub(b"", b.content))
    for name in SAME_HEADERS:
        assert a.headers.get_list(name) == b.headers.get_list(name), name


async def rsa_login(http: httpx.AsyncClient, base: str) -> str:
    data = (await http.get(base + "/api/v1/auth/public-key")).json()["data"]
    key = serialization.load_pem_public_key(data["public_key"].encode())
    cipher = base64.b64encode(key.encrypt(GATEWAY_PASSWORD, padding.PKCS1v15())).decode()
    body = {"username": "admin", "password": cipher, "timestamp": data["unix_timestamp"]}
    login = await http.post(base + "/api/login", json=body)
    assert login.status_code == 200, login.text
    return login.json()["data"]["token"]


async def automation_token(http: httpx.AsyncClient, base: str) -> str:
    body = {"username": "admin", "password": PASSWORD}
    assert (await http.post(base + "/api/setup/initialize", json=body)).status_code == 200
    login = await http.post(base + "/api/auth/login", json=body)
    assert login.status_code == 200, login.text
    return login.json()["token"]


async def test_answers_and_logins_pass_through_byte_for_byte(pair) -> None:
    front_twin, _, front, up = pair
    assert front_twin.clock.mode is ClockMode.REALTIME and front_twin.clock.speed == 1.0
    cam, real_cam = front.url("cam-01/http"), up.url("cam-01/http")
    auto, real_auto = front.url("automation"), up.url("automation")
    async with httpx.AsyncClient(timeout=10, verify=False) as http:
        same(
            await http.get(cam + "/api/v1/auth/public-key"),
            await http.get(real_cam + "/api/v1/auth/public-key"),
        )
        token = await rsa_login(http, cam)  # the RSA login through the passthrough: a real session
        auth = {"Authorization": token}
        same(await http.get(real_cam + "/api/v1/system/info", headers=auth),
             await http.get(cam + "/api/v1/system/info", headers=auth))  # fmt: skip
        over_tls = await http.get(front.url("cam-01/https") + "/api/v1/system/info", headers=auth)
        same(over_tls, await http.get(real_cam + "/api/v1/system/info", headers=auth))
        same(await http.get(cam + "/api/v1/system/info"), await http.get(real_cam + "/api/v1/system/info"))
        bad = {"Authorization": "Bearer nope"}
        refused = await http.get(cam + "/api/v1/system/info", params={"token": "x"}, headers=bad)
        assert refused.status_code == 401 and refused.json()["code"] == 2000

        jwt = await automation_token(http, auto)  # setup and the JWT login, through the passthrough
        bearer = {"Authorization": f"Bearer {jwt}"}
        same(
            await http.get(auto + "/api/devices", headers=bearer),
            await http.get(real_auto + "/api/devices", headers=bearer),
        )
        created = await http.post(
            auto + "/api/auth/keys", headers={"X-API-Key": API_KEY}, json={"name": "ci"}
        )
        assert created.status_code == 200, created.text
        key = created.json()["api_key"]
        with_key = {"X-API-Key": key}
        same(
            await http.get(auto + "/api/devices", headers=with_key),
            await http.get(real_auto + "/api/devices", headers=with_key),
        )
        same(await http.post(auto + "/api/devices", headers=bearer, content=b"{"),
             await http.post(real_auto + "/api/devices", headers=bearer, content=b"{"))  # fmt: skip

    entries = front_twin.journal.entries
    assert {(e.server, e.method, e.route, e.status) for e in entries} >= {
        ("cam-01", "POST", "/api/login", 200),
        ("cam-01", "GET", "/api/v1/system/info", 200),
        ("cam-01", "GET", "/api/v1/system/info", 401),
        ("automation", "POST", "/api/auth/login", 200),
        ("automation", "GET", "/api/devices", 200),
    }
    text = json.dumps([e.to_json() for e in entries])
    for secret in (token.removeprefix("Bearer "), jwt, key, API_KEY, PASSWORD):
        assert secret not in text
    assert "token=***" in text


async def test_websocket_frames_and_event_streams_are_relayed_and_dropped(pair) -> None:
    front_twin, up_twin, front, up = pair
    cam = front.url("cam-01/http")
    async with httpx.AsyncClient(timeout=10) as http:
        token = (await rsa_login(http, cam)).removeprefix("Bearer ")
        jwt = await automation_token(http, front.url("automation"))
    ws_url = cam.replace("http://", "ws://") + f"/api/v1/h264/main?token={token}"
    async with (
        connect(ws_url) as direct,
        connect(
            up.url("cam-01/http").replace("http://", "ws://") + f"/api/v1/h264/main?token={token}"
        ) as real,
    ):
        config = await direct.recv()
        assert isinstance(config, bytes) and config == await real.recv()  # SPS/PPS as the device sent them
        up_twin.clock.advance(1)
        frames = [await direct.recv() for _ in range(10)]
        assert all(isinstance(f, bytes) and f[:4] == b"\xff\xd8\xff\x00" for f in frames)
        assert front_twin.faults["cam-01"].drop_streams() == 1
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await direct.recv()
        assert closed.value.rcvd.code == 1012
    with pytest.raises(InvalidStatus) as refused:  # the device's refusal of the upgrade, relayed
        await connect(cam.replace("http://", "ws://") + "/api/v1/h264/main?token=wrong")
    assert refused.value.response.status_code == 401 and b'"code":2000' in refused.value.response.body

    auto = front.url("automation")
    async with connect(auto.replace("http://", "ws://") + "/api/events/ws") as events:  # text frames
        await events.send(json.dumps({"type": "Auth", "token": jwt}))
        assert json.loads(await events.recv())["type"] == "Authenticated"
    async with (
        httpx.AsyncClient(timeout=10) as http,
        http.stream("GET", auto + f"/api/events/stream?token={jwt}") as sse,
    ):
        assert sse.status_code == 200 and sse.headers["content-type"].startswith("text/event-stream")
        lines = sse.aiter_lines()
        up_twin.clock.advance(10)  # the upstream's sensors report: events reach us through the relay
        seen = ""
        while "data:" not in seen:
            seen = await anext(lines)
        await until(lambda: front_twin.faults["automation"].streams)
        assert front_twin.faults["automation"].drop_streams(at=front_twin.clock.now()) == 1
        async for _ in lines:  # the stream ends cleanly
            pass
    ws_entry = next(e for e in front_twin.journal.entries if e.method == "WS")
    assert (ws_entry.route, ws_entry.status, ws_entry.fault, ws_entry.query) == (
        "/api/v1/h264/{stream_id}",
        101,
        "dropped",
        "",
    )
    sse_entry = next(e for e in front_twin.journal.entries if e.stream)
    assert sse_entry.fault == "dropped" and jwt not in sse_entry.query


async def test_faults_storm_and_token_expiry_act_at_the_passthrough(pair) -> None:
    front_twin, _, front, _ = pair
    cam, auto = front.url("cam-01/http"), front.url("automation")
    faults = front_twin.faults["cam-01"]
    async with httpx.AsyncClient(timeout=10) as http:
        token = await rsa_login(http, cam)
        auth = {"Authorization": token}
        faults.add_latency(0.2, "/api/v1/system")
        assert (await http.get(cam + "/api/v1/system/info", headers=auth)).status_code == 200
        faults.clear()
        faults.add_errors(503, "/api/v1/system", count=2)
        statuses = [(await http.get(cam + "/api/v1/system/info", headers=auth)).status_code for _ in range(3)]
        assert statuses == [503, 503, 200]

        front_twin.control.run_action("token_expiry", {"server": "cam-01"})  # the scenario action
        expired = await http.get(cam + "/api/v1/system/info", headers=auth)
        assert expired.status_code == 401 and expired.json()["code"] == 2000
        fresh = {"Authorization": await rsa_login(http, cam)}
        assert (await http.get(cam + "/api/v1/system/info", headers=fresh)).status_code == 200

        jwt = await automation_token(http, auto)
        bearer = {"Authorization": f"Bearer {jwt}"}
        front_twin.control.limiters["automation"].storm(2, 30)
        storm = [await http.get(auto + "/api/devices", headers=bearer) for _ in range(3)]
        assert [r.status_code for r in storm] == [200, 200, 429]
        assert storm[2].headers["retry-after"].isdigit()
        assert storm[2].json()["error"]["code"] == "RATE_LIMITED"
        assert (await http.get(auto + "/api/devices")).status_code == 401  # no credentials: the server's 401

    system = [e for e in front_twin.journal.entries if e.path == "/api/v1/system/info"]
    assert system[0].end - system[0].at >= 0.2  # the latency, in world time
    assert [e.status for e in system[1:4]] == [503, 503, 200] and system[1].fault == "http_503"
    limited = [e for e in front_twin.journal.entries if e.status == 429]
    assert limited and limited[0].retry_after == storm[2].headers["retry-after"]


async def test_a_self_signed_device_over_https_only_when_its_member_is_insecure(tmp_path: Path) -> None:
    (tmp_path / "up").mkdir()
    up_twin = build(socket_settings())
    up = await start(up_twin, tmp_path / "up")
    fronts = []
    try:
        for n, insecure in enumerate(((), ("cam-01",))):
            (tmp_path / str(n)).mkdir()
            real = (f"cam-01={up.url('cam-01/https')}",)
            settings = Settings(
                scenario=SCENARIOS / "test.yaml", **LOOPBACK, real_cameras=real, insecure=insecure
            )
            fronts.append(await start(build(settings), tmp_path / str(n)))
        verified, insecure_front = (f.url("cam-01/http") for f in fronts)
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(verified + "/api/v1/auth/public-key")).status_code == 502  # not trusted
            token = (await rsa_login(http, insecure_front)).removeprefix("Bearer ")
        wss = insecure_front.replace("http://", "ws://") + f"/api/v1/h264/sub?token={token}"
        async with connect(wss) as ws:  # relayed from the device's wss://
            assert (await ws.recv())[:4] == b"\xff\xd8\xff\x00"
    finally:
        for front in fronts:
            await stop(front)
        await stop(up)


def test_a_real_member_refuses_step_and_other_speeds(capsys) -> None:
    for flag in (["--step"], ["--speed", "60"]):
        with pytest.raises(SystemExit) as exited:
            settings_mod.parse(["run", "--real-camera", "cam-02=http://127.0.0.1:9", *flag])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert f"{flag[0]} " in err and "camera cam-02" in err
    _, ok = settings_mod.parse(["run", "--real-automation", "https://127.0.0.1:9", "--speed", "1"])
    assert ok.has_real_members and ok.insecure == ()


def test_real_member_configuration_errors(capsys) -> None:
    _, s = settings_mod.parse(
        ["run", "--real-camera", "http://127.0.0.1:9", "--real-camera", "cam-09=http://h:1"]
    )
    with pytest.raises(RealMemberError, match="cam-09"):
        s.real_members(["cam-01", "cam-02"])
    _, s = settings_mod.parse(["run", "--real-camera", "http://a:1", "--real-camera", "http://b:1"])
    with pytest.raises(RealMemberError, match="more than"):
        s.real_members(["cam-01"])
    _, s = settings_mod.parse(["run", "--real-camera", "http://a:1", "--insecure", "automation"])
    with pytest.raises(RealMemberError, match="automation"):
        s.real_members(["cam-01"])
    for argv, message in (
        (["--real-camera", "ftp://a"], "http:// or https://"),
        (["--real-automation", "http://a:1/api"], "no path"),
        (
            ["--real-automation", "http://a:1", "--real-automation-api-key-env", "NOPE_NOT_SET"],
            "NOPE_NOT_SET",
        ),
        (["--insecure", "cam-01"], "no"),
        (["--real-camera", "http://a:1", "--step"], "camera"),
    ):
        with pytest.raises(SystemExit):
            settings_mod.parse(["run", *argv], environ={})
        assert message in capsys.readouterr().err
    _, s = settings_mod.parse(
        ["run", "--real-automation", "http://a:1", "--real-automation-api-key-env", "KEY"],
        environ={"KEY": "nmk_x"},
    )
    assert s.real_automation_api_key == "nmk_x" and "nmk_x" not in repr(s)
