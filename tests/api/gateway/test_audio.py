"""Audio over the gateway: devices, status, config, capture and playback; the live PCM stream over a
real WebSocket, paced by the world clock; two-way talk with a second talker refused (4002/429)."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.conftest import gateway_token
from tests.sockets import socket_settings, until
from twin.camera.video.audio import CHUNK_S, TONE_HZ
from twin.serve import build, start, stop

AUDIO = "/api/v1/audio"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def data(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def test_devices_status_config_capture_playback(gateway, auth) -> None:
    assert (await gateway.get(AUDIO + "/status")).status_code == 401
    mics = await data(await gateway.get(AUDIO + "/capture-devices", headers=auth))
    assert mics["devices"] == [{"name": "default", "description": "Built-in microphone"}]
    speakers = await data(await gateway.get(AUDIO + "/playback-devices", headers=auth))
    assert speakers["devices"][0]["name"] == "default"
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert status == {
        "capturing": False,
        "playing": False,
        "device": "default",
        "sample_rate": 48000,
        "channels": 1,
        "codec": "pcm",
        "volume": 1.0,
        "mute": False,
        "playback_enabled": True,
    }
    for method, path, body, message in (
        ("POST", "/capture/start", {"volume": 0.5}, "Audio capture started"),
        ("POST", "/playback/start", {}, "Audio playback started"),
        (
            "PUT",
            "/config",
            {"sample_rate": 16000, "mute": True, "playback_enabled": False},
            "Audio config updated",
        ),
    ):
        resp = await gateway.request(method, AUDIO + path, json=body, headers=auth)
        assert resp.status_code == 200 and resp.json()["data"] == {"message": message}, resp.text
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert status["capturing"] and status["playing"] and status["volume"] == 0.5 and status["mute"]
    assert status["playback_enabled"] is False
    assert status["sample_rate"] == 48000  # stored: the daemon opens the device with it at its next start
    for path, message in (
        ("/capture/stop", "Audio capture stopped"),
        ("/playback/stop", "Audio playback stopped"),
    ):
        resp = await gateway.post(AUDIO + path, headers=auth)
        assert resp.json()["data"] == {"message": message}
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert not status["capturing"] and not status["playing"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status_code", "code", "detail"),
    [
        ("POST", "/playback/start", {"device": "hw:9,0"}, 500, 7002, "Playback start failed"),
        ("POST", "/playback/start", None, 400, 1001, "Invalid request body: EOF"),
        (
            "POST",
            "/playback/start",
            {"device": 3},
            400,
            1001,
            "Invalid request body: json: cannot unmarshal number into Go struct field .device of type string",
        ),
        (
            "PUT",
            "/config",
            {"sample_rate": -1},
            400,
            1001,
            "Invalid request body: json: cannot unmarshal number -1 into Go struct field "
            "audioConfigReq.sample_rate of type uint32",
        ),
        (
            "PUT",
            "/config",
            {"volume": "loud"},
            400,
            1001,
            "Invalid request body: json: cannot unmarshal string into Go struct field "
            "audioConfigReq.volume of type float32",
        ),
        (
            "PUT",
            "/config",
            [1],
            400,
            1001,
            "Invalid request body: json: cannot unmarshal array into Go value of type "
            "handlers.audioConfigReq",
        ),
        (
            "POST",
            "/capture/start",
            {"mute": 1},
            400,
            1001,
            "Invalid request body: json: cannot unmarshal number into Go struct field .mute of type bool",
        ),
    ],
)
async def test_refusals_carry_the_handlers_texts(
    gateway, auth, method, path, body, status_code, code, detail
) -> None:
    resp = await gateway.request(method, AUDIO + path, json=body, headers=auth)
    assert (resp.status_code, resp.json()["code"]) == (status_code, code), resp.text
    assert resp.json()["error"] == {"detail": detail}


async def test_a_partial_config_keeps_the_fields_not_sent(gateway, auth, twin) -> None:
    await gateway.put(AUDIO + "/config", json={"codec": "aac", "channels": 2, "volume": 0.0}, headers=auth)
    await gateway.put(AUDIO + "/config", json={"bitrate": 64000, "sample_rate": 0}, headers=auth)
    stored = twin.gateways["cam-01"].audio.stored
    assert (stored.codec, stored.channels, stored.bitrate, stored.sample_rate) == ("aac", 2, 64000, 48000)
    assert stored.volume == 0.0  # a pointer: zero is a change
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert status["volume"] == 0.0 and status["codec"] == "pcm"


@pytest.fixture
async def live(tmp_path: Path):
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient(base_url=base) as http:
        login = await http.post("/api/login", json={"username": "admin", "password": "password"})
        token = login.json()["data"]["token"].removeprefix("Bearer ")
    try:
        yield twin, base.replace("http://", "ws://"), token
    finally:
        await stop(running)


async def test_stream_sends_the_tone_paced_by_world_time(live) -> None:
    twin, ws_base, token = live
    with pytest.raises(InvalidStatus) as refused:
        async with connect(ws_base + "/api/v1/audio/stream"):
            pass
    assert refused.value.response.status_code == 401
    async with connect(f"{ws_base}/api/v1/audio/stream?token={token}") as ws:
        await until(lambda: twin.gateways["cam-01"].audio.status().capturing)
        twin.clock.advance(1.0)
        chunks = [await ws.recv() for _ in range(round(1.0 / CHUNK_S))]
    pcm = np.frombuffer(b"".join(chunks), "<i2").astype(np.float64)
    assert len(pcm) == 48000 and all(len(c) == 2 * 4800 for c in chunks)
    spectrum = np.abs(np.fft.rfft(pcm))
    freqs = np.fft.rfftfreq(len(pcm), 1 / 48000)
    assert abs(freqs[np.argmax(spectrum[freqs > 500]) + np.sum(freqs <= 500)] - TONE_HZ) < 2


async def test_a_second_talker_is_refused_with_4002(live) -> None:
    twin, ws_base, token = live
    url = f"{ws_base}/api/v1/audio/talk?token={token}"
    async with connect(url) as first:
        await first.send(np.zeros(800, "<i2").tobytes())
        await until(lambda: twin.gateways["cam-01"].audio.status().talk_bytes == 1600)
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url):
                pass
        assert refused.value.response.status_code == 429
        assert b'"code":4002' in refused.value.response.body
        assert twin.gateways["cam-01"].audio.status().talk_active is True
    await until(lambda: not twin.gateways["cam-01"].audio.status().talk_active)
    async with connect(url) as again:
        await again.send(b"\x00\x00")
