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
    assert mics["devices"][0]["id"] == "mic0" and 16000 in mics["devices"][0]["sample_rates"]
    speakers = await data(await gateway.get(AUDIO + "/playback-devices", headers=auth))
    assert speakers["devices"][0]["id"] == "spk0"
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert status["capture"] == {"running": False, "device": ""} and status["talk_active"] is False
    assert status["config"] == {"sample_rate": 16000, "channels": 1, "volume": 80, "format": "S16LE"}
    assert (
        await gateway.post(AUDIO + "/capture/start", json={"device": "mic0"}, headers=auth)
    ).status_code == 200
    assert (await gateway.post(AUDIO + "/playback/start", headers=auth)).status_code == 200
    assert (
        await gateway.put(AUDIO + "/config", json={"sample_rate": 8000, "volume": 50}, headers=auth)
    ).status_code == 200
    status = await data(await gateway.get(AUDIO + "/status", headers=auth))
    assert status["capture"]["running"] and status["playback"] == {"running": True, "device": "spk0"}
    assert status["config"]["sample_rate"] == 8000 and status["config"]["volume"] == 50
    await gateway.post(AUDIO + "/capture/stop", headers=auth)
    await gateway.post(AUDIO + "/playback/stop", headers=auth)
    assert not (await data(await gateway.get(AUDIO + "/status", headers=auth)))["capture"]["running"]
    for path, body, status_code, code in [
        ("/capture/start", {"device": "mic9"}, 404, 4000),
        ("/playback/start", {"device": 3}, 400, 1001),
    ]:
        resp = await gateway.post(AUDIO + path, json=body, headers=auth)
        assert (resp.status_code, resp.json()["code"]) == (status_code, code)
    for body in (
        {"sample_rate": 44100},
        {"channels": 3},
        {"volume": 101},
        {"format": "F32"},
        {"volume": "loud"},
    ):
        resp = await gateway.put(AUDIO + "/config", json=body, headers=auth)
        assert resp.status_code == 400 and resp.json()["code"] == 1001, body


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
        await until(lambda: twin.gateways["cam-01"].audio.status().capture_running)
        twin.clock.advance(1.0)
        chunks = [await ws.recv() for _ in range(round(1.0 / CHUNK_S))]
    pcm = np.frombuffer(b"".join(chunks), "<i2").astype(np.float64)
    assert len(pcm) == 16000 and all(len(c) == 2 * 1600 for c in chunks)
    spectrum = np.abs(np.fft.rfft(pcm))
    freqs = np.fft.rfftfreq(len(pcm), 1 / 16000)
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
