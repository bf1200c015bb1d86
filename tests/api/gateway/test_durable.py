"""What the camera's web console writes survives a restart of the twin on the same state directory:
each test writes through the gateway, rebuilds the twin on the state dir and reads back where the
console reads. (The time area, device name, settings and network: tests/api/gateway/test_system.py.)"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import cv2
import httpx
import numpy as np
import pytest

from tests.conftest import _client, gateway_token
from twin.camera.video.backend import MEDIA_KIND
from twin.camera.wing import cameras_of
from twin.serve import build
from twin.settings import Settings


@pytest.fixture
def durable(settings: Settings, tmp_path: Path) -> Settings:
    return dataclasses.replace(settings, state_dir=tmp_path / "state")


@asynccontextmanager
async def started(
    settings: Settings, password: str = "password"
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """A twin built on ``settings``, a logged-in client of camera 1; the store closed after."""
    twin = build(settings)
    try:
        async with _client(twin.gateway_apps["cam-01"], "http://cam-01") as gateway:
            login = await gateway.post("/api/login", json={"username": "admin", "password": password})
            assert login.status_code == 200, login.text
            yield gateway, {"Authorization": login.json()["data"]["token"]}
    finally:
        twin.world.store.close()


async def read_all(gateway: httpx.AsyncClient, auth: dict[str, str], paths: tuple[str, ...]) -> list:
    out = []
    for path in paths:
        resp = await gateway.get("/api/v1" + path, headers=auth)
        assert resp.status_code == 200, (path, resp.text)
        out.append(resp.json()["data"])
    return out


def png(color: tuple[int, int, int]) -> bytes:
    ok, data = cv2.imencode(".png", np.full((8, 16, 3), color, np.uint8))
    assert ok
    return data.tobytes()


PICTURE = ("/media/image", "/media/transform", "/media/osd", "/media/privacy-mask", "/media/config")


async def test_picture_settings_and_osd_images_survive_a_restart(durable: Settings) -> None:
    logo = png((0, 0, 255))
    osd = {
        "streams": [
            {
                "stream_name": "main",
                "text_overlays": [
                    {"id": "t", "text": "Gate 3", "x": 0.1, "y": 0.2, "font_size": 30, "enabled": True}
                ],
                "image_overlays": [
                    {
                        "id": "i",
                        "image_path": "/data/aipc/etc/osd/logo.png",
                        "x": 0.5,
                        "y": 0.5,
                        "width": 0.2,
                        "height": 0.1,
                        "enabled": True,
                    }
                ],
            }
        ]
    }
    square = {"points_x": [0.1, 0.3, 0.3, 0.1], "points_y": [0.1, 0.1, 0.4, 0.4]}
    mask = {"enabled": True, "blur_radius": 5, "regions": [{"id": "m", "enabled": True, **square}]}
    async with started(durable) as (gateway, auth):
        files = {"file": ("logo.png", logo, "image/png")}
        up = await gateway.post("/api/v1/media/osd/upload-image", files=files, headers=auth)
        assert up.status_code == 200, up.text
        for path, body in (
            ("/media/image", {"brightness": 70, "wdr_value": 40, "manual_mode": True, "awb_index": 3}),
            ("/media/image", {"contrast": 300}),  # refused: changes nothing
            ("/media/transform", {"rotation": 2, "flip": 1, "grayscale": True}),
            ("/media/osd", osd),
            ("/media/privacy-mask", mask),
            ("/media/ai-overlay", {"enabled": True, "show_label": False}),
        ):
            await gateway.put("/api/v1" + path, json=body, headers=auth)
        before = await read_all(gateway, auth, PICTURE)
    assert before[0]["brightness"] == 70 and before[0]["wdr_value"] == 40 and before[0]["awb_index"] == 3
    assert before[1]["rotation"] == 2 and before[1]["grayscale"] is True
    assert before[2]["streams"][0]["image_overlays"][0]["image_path"] == "/data/aipc/etc/osd/logo.png"
    assert before[2]["streams"][0]["image_overlays"][0]["image_size"] == len(logo)
    assert before[4]["ai_overlay"]["enabled"] is True and before[4]["ai_overlay"]["show_label"] is False
    assert before[3]["regions"][0]["points_x"] == square["points_x"] and before[3]["blur_radius"] == 5

    async with started(durable) as (gateway, auth):
        assert await read_all(gateway, auth, PICTURE) == before
        image = await gateway.get("/api/v1/media/osd/image/logo.png", headers=auth)
        assert (image.status_code, image.content, image.headers["content-type"]) == (200, logo, "image/png")
    async with started(dataclasses.replace(durable, state_dir=None)) as (gateway, auth):
        image = (await read_all(gateway, auth, ("/media/image",)))[0]
        assert image["brightness"] == 50 and image["wdr_value"] == 0  # no state dir, no memory


MEDIA = ("/media/config", "/media/profiles", "/media/profile", "/media/status")


async def test_encoder_profiles_and_streams_survive_a_restart(durable: Settings) -> None:
    async with started(durable) as (gateway, auth):
        for method, path, body in (
            ("PUT", "/media/encoder", {"stream_name": "main", "bitrate_bps": 2_500_000, "framerate": 20}),
            ("PUT", "/media/encoder/reconfig", {"stream_name": "sub", "width": 960, "height": 540}),
            ("POST", "/media/streams", {"name": "extra", "width": 320, "height": 192, "fps": 10}),
            ("DELETE", "/media/streams/third/disable", None),
            ("POST", "/media/profile/backup", {"name": "night"}),
            ("PUT", "/media/rtsp", {"enabled": False}),
            ("PUT", "/media/encoder", {"stream_name": "nope", "bitrate_bps": 1}),  # refused
        ):
            resp = await gateway.request(method, "/api/v1" + path, json=body, headers=auth)
            assert resp.status_code == (404 if "nope" in str(body) else 200), (path, resp.text)
        before = await read_all(gateway, auth, MEDIA)
    config = before[0]
    assert [s["name"] for s in config["streams"]] == ["main", "sub", "third", "extra"]
    assert config["streams"][0]["encoder"]["bitrate_bps"] == 2_500_000
    assert config["streams"][2]["enabled"] is False and config["rtsp"]["enabled"] is False
    assert "night" in str(before[1])

    async with started(durable) as (gateway, auth):
        assert await read_all(gateway, auth, MEDIA[:3]) == before[:3]
        status = (await read_all(gateway, auth, ("/media/status",)))[0]
        assert str(status).count("'inactive'") == 1  # the stream disabled before is still off
        switched = await gateway.post(
            "/api/v1/media/profile/switch", json={"profile_name": "AI_ISP_Gen2_Basic"}, headers=auth
        )
        assert switched.status_code == 200, switched.text
        after_switch = await read_all(gateway, auth, ("/media/config",))
    async with started(durable) as (gateway, auth):
        assert await read_all(gateway, auth, ("/media/config",)) == after_switch
        assert after_switch[0]["profile"] == "AI_ISP_Gen2_Basic"
        assert await read_all(gateway, auth, ("/media/profile",)) == [{"profile_name": "AI_ISP_Gen2_Basic"}]


async def test_audio_configuration_survives_a_restart(durable: Settings) -> None:
    async with started(durable) as (gateway, auth):
        for body in (
            {
                "sample_rate": 16000,
                "channels": 2,
                "codec": "g711a",
                "volume": 0.35,
                "playback_enabled": False,
            },
            {"volume": "loud"},  # refused: changes nothing
        ):
            await gateway.put("/api/v1/audio/config", json=body, headers=auth)
        await gateway.post("/api/v1/audio/capture/start", json={"mute": True}, headers=auth)
        before = (await read_all(gateway, auth, ("/audio/status",)))[0]
    assert before["volume"] == 0.35 and before["mute"] is True and before["playback_enabled"] is False
    async with started(durable) as (gateway, auth):
        after = (await read_all(gateway, auth, ("/audio/status",)))[0]
    assert after == {
        **before,
        "capturing": False,  # the daemon starts with nothing captured
        "mute": False,  # StartCapture's mute is not stored
        "sample_rate": 16000,  # the stored fields apply from this start
        "channels": 2,
        "codec": "g711a",
    }


async def test_a_changed_password_survives_a_restart(durable: Settings) -> None:
    change = {"old_password": "password", "new_password": "gate-east-77"}
    async with started(durable) as (gateway, auth):
        resp = await gateway.post("/api/v1/system/password", json=change, headers=auth)
        assert resp.status_code == 200, resp.text
    twin = build(durable)
    async with _client(twin.gateway_apps["cam-01"], "http://cam-01") as gateway:
        with pytest.raises(AssertionError):
            await gateway_token(gateway)  # the old password no longer works
    twin.world.store.close()
    async with started(durable, password="gate-east-77") as (gateway, auth):
        assert (await gateway.get("/api/v1/system/time", headers=auth)).status_code == 200


async def test_the_file_manager_opens_at_the_install_prefix(settings: Settings) -> None:
    """The console lists ``device-info.install_prefix`` first: the files API must allow it."""
    async with started(settings) as (gateway, auth):
        prefix = (await read_all(gateway, auth, ("/device-info",)))[0]["install_prefix"]
        listing = await gateway.get("/api/v1/files", params={"path": prefix}, headers=auth)
    assert listing.status_code == 200, listing.text


async def test_uploads_renames_and_deletes_survive_a_restart(durable: Settings) -> None:
    """Including those of files the tree ships with: a deleted or renamed one stays gone."""
    async with started(durable) as (gateway, auth):
        upload = {"files": {"file": ("a.txt", b"alpha")}, "data": {"path": "/data/aipc"}}
        for method, path, kwargs in (
            ("POST", "/files/upload", upload),
            ("POST", "/files/rename", {"json": {"old_path": "/data/aipc/a.txt", "new_path": "/tmp/b.txt"}}),
            ("POST", "/files/rename", {"json": {"old_path": "/data/aipc/README.txt", "new_path": "/tmp/r"}}),
            ("DELETE", "/files", {"params": {"path": "/data/aipc/config"}}),
        ):
            resp = await gateway.request(method, "/api/v1" + path, headers=auth, **kwargs)
            assert resp.status_code == 200, (path, resp.text)
        before = await read_all(gateway, auth, ("/files?path=/data/aipc", "/files?path=/tmp"))
    names = [f["name"] for f in before[0]["files"]]
    assert not {"a.txt", "README.txt", "config"} & set(names)

    async with started(durable) as (gateway, auth):
        assert await read_all(gateway, auth, ("/files?path=/data/aipc", "/files?path=/tmp")) == before
        again = await gateway.post("/api/v1/files/mkdir", json={"path": "/data/aipc/config"}, headers=auth)
        assert again.status_code == 200
    async with started(durable) as (gateway, auth):
        listing = (await read_all(gateway, auth, ("/files?path=/data/aipc",)))[0]
    assert "config" in [f["name"] for f in listing["files"]]  # made again after the delete: back


async def test_the_rtsp_port_follows_the_port_served_now_and_an_unreadable_document_is_skipped(
    durable: Settings,
) -> None:
    first = build(durable)
    media = first.gateways["cam-01"].media
    media_config = first.gateways["cam-01"].media_config
    media.use_rtsp_port(20000)
    media_config.set_rtsp(False)
    assert media_config.config()["rtsp"] == {"enabled": False, "port": 20000}
    first.world.store.close()

    again = build(durable)
    media = again.gateways["cam-01"].media
    media_config = again.gateways["cam-01"].media_config
    media.use_rtsp_port(21000)  # this start's server got another port
    assert media_config.config()["rtsp"] == {"enabled": False, "port": 21000}
    broken = {"config": {"streams": []}, "profiles": {}, "rtsp_served": 21000}
    again.world.store.collection(MEDIA_KIND).put("cam-01", broken)
    again.world.store.close()

    third = build(durable)
    assert third.gateways["cam-01"].media_config.config()["rtsp"]["enabled"] is True  # the defaults
    assert (MEDIA_KIND, "cam-01") in third.world.store.unreadable
    third.world.store.close()


async def test_an_older_document_without_the_device_profiles_gains_them(durable: Settings) -> None:
    first = build(durable)
    media_config = first.gateways["cam-01"].media_config
    media_config.set_rtsp(False)  # writes the document
    doc = first.world.store.collection(MEDIA_KIND).get("cam-01")
    old = {**doc["config"], "profile": "default"}
    first.world.store.collection(MEDIA_KIND).put(
        "cam-01", {**doc, "config": old, "profiles": {"default": old}}
    )
    first.world.store.close()

    again = build(durable)
    media_config = again.gateways["cam-01"].media_config
    names = [name for name, _ in media_config.profiles()]
    assert names == [
        "Daylight_Basic",
        "High_Dynamic_Range_Basic",
        "AI_ISP_Gen1_Basic",
        "AI_ISP_Gen2_Basic",
        "AI_ISP_Gen3_Basic",
        "default",
    ]
    assert media_config.profile()["name"] == "default" and media_config.config()["rtsp"]["enabled"] is False
    media_config.switch_profile("AI_ISP_Gen3_Basic")
    assert media_config.profile()["name"] == "AI_ISP_Gen3_Basic"
    again.world.store.close()


DEVICE = ("/device/status", "/device/fan", "/device/heat", "/device/radar", "/device/alarm-outputs")


async def test_peripheral_settings_and_the_iris_target_survive_a_restart(durable: Settings) -> None:
    """What the device keeps: the console's peripheral settings, the PTZ presets and the lens's iris target
    (its ``lens_config.json``); the zoom and focus motors start at the wide end again."""
    async with started(durable) as (gateway, auth):
        for path, body in (
            ("/device/light", {"level": 35}),
            ("/device/ir-led", {"level": 70}),
            ("/device/ir-cut", {"mode": "day"}),
            ("/device/gpio", {"pin": 22, "value": True}),
            ("/device/fan", {"enable": True}),
            ("/device/radar", {"enable": True}),
            ("/device/alarm-out", {"channel": 1, "enable": True}),
            ("/device/wiegand", {"channel": 0, "enable": True}),
            ("/device/rs485/init", {"baudrate": 19200, "config": "7E1"}),
            ("/device/ptz", {"action": "preset", "preset_id": 4}),  # stores the centre as preset 4
            ("/device/lens/iris-target", {"target": 900}),
            ("/device/light", {"level": 101}),  # refused: changes nothing
        ):
            await gateway.post("/api/v1" + path, json=body, headers=auth)
        await gateway.put("/api/v1/device/lens/zoom-level", json={"level": 0.5}, headers=auth)
        before = await read_all(gateway, auth, DEVICE)
    assert (before[0]["white_light_level"], before[0]["ir_led_level"], before[0]["ircut_mode"]) == (35, 70, 1)

    twin = build(durable)
    try:
        async with _client(twin.gateway_apps["cam-01"], "http://cam-01") as gw:
            login = await gw.post("/api/login", json={"username": "admin", "password": "password"})
            auth = {"Authorization": login.json()["data"]["token"]}
            after = await read_all(gw, auth, DEVICE)
            gpio = (await read_all(gw, auth, ("/device/gpio/22",)))[0]
            lens = (await read_all(gw, auth, ("/device/lens/status",)))[0]
        camera = cameras_of(twin.world)["cam-01"]
        assert camera.peripherals.rs485.setup == {"baudrate": 19200, "config": "7E1", "loopback": False}
        assert 4 in camera.peripherals.presets
    finally:
        twin.world.store.close()
    for key in ("white_light_level", "ir_led_level", "ircut_mode"):
        assert after[0][key] == before[0][key]
    assert after[1:] == before[1:]
    assert gpio == {"pin": 22, "value": True, "status": {"success": True}}
    assert lens["iris_adc"] == 900 and lens["zoom_pos"] == 0
