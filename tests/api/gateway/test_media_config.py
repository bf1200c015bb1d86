"""The camera daemon's configuration over the gateway: the document, one field, export/import,
encoders and their reconfiguration, RTSP, profiles, the pipeline, media streams and /streams."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import gateway_token
from twin.serve import Twin

MEDIA = "/api/v1/media"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def data(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def status_of(gateway, auth, stream_id: str) -> dict:
    rows = (await data(await gateway.get(MEDIA + "/status", headers=auth)))["streams"]
    return next(r for r in rows if r["stream_id"] == stream_id)


DEVICE_PROFILES = (
    "Daylight_Basic",
    "High_Dynamic_Range_Basic",
    "AI_ISP_Gen1_Basic",
    "AI_ISP_Gen2_Basic",
    "AI_ISP_Gen3_Basic",
)  # the camera daemon's medialib profiles, in its order


def fails(resp: httpx.Response, status: int = 400, code: int = 1001) -> bool:
    return resp.status_code == status and resp.json()["code"] == code and "error" in resp.json()


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/config"), ("POST", "/config"), ("GET", "/config/export"), ("PUT", "/encoder/reconfig"),
     ("GET", "/profiles"), ("POST", "/streams"), ("DELETE", "/streams/sub/disable")],
)  # fmt: skip
async def test_media_config_routes_need_a_token(gateway, method: str, path: str) -> None:
    resp = await gateway.request(method, MEDIA + path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000
    assert (await gateway.get("/api/v1/streams")).status_code == 401


async def test_config_document_overlay_is_validated_whole(gateway, auth) -> None:
    doc = await data(await gateway.get(MEDIA + "/config", headers=auth))
    assert [s["name"] for s in doc["streams"]] == ["main", "sub", "third"]
    assert set(doc) >= {
        "streams",
        "image",
        "transform",
        "osd",
        "privacy_mask",
        "ai_overlay",
        "rtsp",
        "profile",
    }
    resp = await gateway.post(
        MEDIA + "/config", json={"image": {"contrast": 25}, "rtsp": {"port": 9554}}, headers=auth
    )
    assert resp.json()["data"] == {"message": "Configuration saved and applied"}
    assert (await data(await gateway.get(MEDIA + "/image", headers=auth)))["contrast"] == 62  # 0..100
    bad = {"image": {"contrast": 10}, "streams": [{"name": "sub", "encoder": {"width": 7}}]}
    assert fails(await gateway.post(MEDIA + "/config", json=bad, headers=auth))
    assert (await data(await gateway.get(MEDIA + "/image", headers=auth)))[
        "contrast"
    ] == 62  # nothing applied
    plain = await gateway.post(
        MEDIA + "/config", content=b"{}", headers={**auth, "Content-Type": "text/plain"}
    )
    assert plain.status_code == 415 and plain.json()["error"]["type"] == "validation"
    assert fails(
        await gateway.post(
            MEDIA + "/config", content=b"[1]", headers={**auth, "Content-Type": "application/json"}
        )
    )


async def test_config_field_get_and_set(gateway, auth) -> None:
    got = await data(await gateway.get(MEDIA + "/config/field?field_path=image.brightness", headers=auth))
    assert got == {"field_path": "image.brightness", "type": 1, "type_name": "INT32", "value": "0"}
    body = {"field_path": "rtsp.enabled", "type": 0, "value": "false"}
    assert (await gateway.put(MEDIA + "/config/field", json=body, headers=auth)).status_code == 200
    got = await data(await gateway.get(MEDIA + "/config/field?field_path=rtsp.enabled", headers=auth))
    assert got["value"] == "false" and got["type_name"] == "BOOL"
    assert fails(await gateway.get(MEDIA + "/config/field", headers=auth))
    assert fails(await gateway.get(MEDIA + "/config/field?field_path=secret.key", headers=auth))
    for bad in (
        {"field_path": "rtsp.enabled", "type": 1, "value": "1"},
        {"field_path": "image.brightness", "type": 1, "value": "bright"},
        {"field_path": "image.brightness", "type": 1, "value": "500"},
        {"field_path": "rtsp.port", "type": 9, "value": "1"},
        {"field_path": "rtsp.port", "value": "1"},
    ):
        assert fails(await gateway.put(MEDIA + "/config/field", json=bad, headers=auth)), bad


async def test_export_then_import(gateway, auth) -> None:
    exported = await data(await gateway.get(MEDIA + "/config/export", headers=auth))
    assert exported["schema"] == "aipc.media_config" and exported["version"] == 1
    exported["config"]["image"]["saturation"] = -40
    resp = await gateway.post(MEDIA + "/config/import", json=exported, headers=auth)
    assert resp.status_code == 200
    assert (await data(await gateway.get(MEDIA + "/image", headers=auth)))["saturation"] == 30  # 0..100
    assert fails(
        await gateway.post(MEDIA + "/config/import", json={**exported, "schema": "other"}, headers=auth)
    )
    assert fails(await gateway.post(MEDIA + "/config/import", json={**exported, "version": 2}, headers=auth))
    assert fails(
        await gateway.post(MEDIA + "/config/import", json={"schema": "aipc.media_config"}, headers=auth)
    )
    plain = await gateway.post(
        MEDIA + "/config/import", content=b"{}", headers={**auth, "Content-Type": "text/csv"}
    )
    assert plain.status_code == 415


async def test_encoder_update_and_reconfigure_interrupts_briefly(gateway, auth, twin: Twin) -> None:
    body = {"stream_name": "sub", "bitrate_bps": 1_000_000, "framerate": 20, "gop": 40}
    assert (await gateway.put(MEDIA + "/encoder", json=body, headers=auth)).status_code == 200
    row = await status_of(gateway, auth, "sub")
    assert (row["bitrate_bps"], row["fps"], row["gop"]) == (1_000_000, 20, 40)
    viewer = twin.gateways["cam-01"].media.open_viewer("main")
    await viewer.stream.primed()
    body = {"stream_name": "main", "width": 320, "height": 180, "fps": 10}
    answer = await data(await gateway.put(MEDIA + "/encoder/reconfig", json=body, headers=auth))
    assert answer == {"message": "Encoder reconfigured", "interrupt_ms": 200}
    row = await status_of(gateway, auth, "main")
    assert row["status"] == "starting" and (row["width"], row["height"], row["fps"]) == (320, 180, 10)
    twin.clock.advance(0.5)
    await twin.gateways["cam-01"].media.stream("main").settle()
    assert (await status_of(gateway, auth, "main"))["status"] == "active"
    assert viewer.pending() > 0
    viewer.close()
    for bad, status, code in [
        ({"stream_name": "main", "width": 63}, 400, 1001),
        ({"stream_name": "main", "width": 321}, 400, 1001),
        ({"stream_name": "main", "codec": "h265"}, 400, 1001),
        ({"stream_name": "main", "fps": -1}, 400, 1001),
        ({"stream_name": "nope", "fps": 10}, 404, 4000),
        ({"fps": 10}, 400, 1001),
    ]:
        assert fails(await gateway.put(MEDIA + "/encoder/reconfig", json=bad, headers=auth), status, code), (
            bad
        )
    assert fails(await gateway.put(MEDIA + "/encoder", json={"stream_name": "x"}, headers=auth), 404, 4000)
    assert fails(await gateway.put(MEDIA + "/encoder", json={"bitrate_bps": 5}, headers=auth))
    pipeline = await data(await gateway.post(MEDIA + "/pipeline/reconfigure", headers=auth))
    assert pipeline["interrupt_ms"] == 200


async def test_rtsp_and_profiles(gateway, auth) -> None:
    on = await gateway.put(MEDIA + "/rtsp", json={"enabled": True}, headers=auth)
    assert await data(on) == {"message": "RTSP state updated successfully", "enabled": True}
    empty = await gateway.put(MEDIA + "/rtsp", json={}, headers=auth)  # a Go bool: absent is false
    assert await data(empty) == {"message": "RTSP state updated successfully", "enabled": False}
    assert (await data(await gateway.get(MEDIA + "/config", headers=auth)))["rtsp"]["enabled"] is False
    assert fails(await gateway.put(MEDIA + "/rtsp", json={"enabled": "yes"}, headers=auth))
    assert fails(await gateway.put(MEDIA + "/rtsp", content=b"[1]", headers=auth))
    profiles = await data(await gateway.get(MEDIA + "/profiles", headers=auth))
    assert profiles == {"profiles": list(DEVICE_PROFILES), "current_profile": "Daylight_Basic"}
    assert await data(await gateway.get(MEDIA + "/profile", headers=auth)) == {
        "profile_name": "Daylight_Basic"
    }
    await gateway.put(MEDIA + "/image", json={"brightness": 30}, headers=auth)
    saved = await data(await gateway.post(MEDIA + "/profile/backup", json={"name": "bright"}, headers=auth))
    assert saved == {"success": True, "message": "Profile backed up"}
    switched = await gateway.post(
        MEDIA + "/profile/switch", json={"profile_name": "AI_ISP_Gen2_Basic"}, headers=auth
    )
    assert await data(switched) == {"success": True, "message": "ok", "interrupt_ms": 0}
    assert (await data(await gateway.get(MEDIA + "/image", headers=auth)))["brightness"] == 50
    profiles = await data(await gateway.get(MEDIA + "/profiles", headers=auth))
    assert profiles == {"profiles": [*DEVICE_PROFILES, "bright"], "current_profile": "AI_ISP_Gen2_Basic"}
    await gateway.post(MEDIA + "/profile/switch", json={"profile_name": "bright"}, headers=auth)
    assert (await data(await gateway.get(MEDIA + "/image", headers=auth)))["brightness"] == 30
    assert await data(await gateway.get(MEDIA + "/profile", headers=auth)) == {"profile_name": "bright"}
    for name in ("AI_ISP_Gen1_Basic", "AI_ISP_Gen3_Basic", "Daylight_Basic"):  # the console's switch
        switched = await gateway.post(MEDIA + "/profile/switch", json={"profile_name": name}, headers=auth)
        assert switched.status_code == 200, switched.text
        assert await data(await gateway.get(MEDIA + "/profile", headers=auth)) == {"profile_name": name}
    # the daemon's allowlist refuses the HDR profile it lists, and any name it does not know
    for name in ("High_Dynamic_Range_Basic", "nope", "default", "ai_isp_gen1_basic"):
        refused = await gateway.post(MEDIA + "/profile/switch", json={"profile_name": name}, headers=auth)
        assert fails(refused, 500, 7002), name
        assert refused.json()["error"]["detail"] == (
            "Switch profile failed: rpc error: code = PermissionDenied desc = profile not in switch allowlist"
        )
    assert await data(await gateway.get(MEDIA + "/profile", headers=auth)) == {
        "profile_name": "Daylight_Basic"
    }
    empty = await gateway.post(MEDIA + "/profile/switch", json={}, headers=auth)
    assert fails(empty, 400, 1004) and empty.json()["error"]["detail"] == "profile_name is required"
    assert fails(await gateway.post(MEDIA + "/profile/switch", json={"profile_name": 3}, headers=auth))
    assert fails(await gateway.post(MEDIA + "/profile/backup", json={"name": "../x"}, headers=auth))


async def test_media_streams_add_remove_enable_disable_and_streams_listing(gateway, auth) -> None:
    body = {"stream_id": "ai", "width": 640, "height": 360, "fps": 15}
    added = await gateway.post(MEDIA + "/streams", json=body, headers=auth)
    assert await data(added) == {"message": "Stream added successfully", "stream_id": "ai"}
    listing = await data(await gateway.get("/api/v1/streams", headers=auth))
    assert [s["id"] for s in listing["streams"]] == ["main", "sub", "third", "ai"]
    ai = await data(await gateway.get("/api/v1/streams/ai", headers=auth))
    assert ai == {
        "id": "ai", "name": "ai", "url": "/api/v1/h264/ai", "width": 640, "height": 360, "fps": 15,
        "codec": "h264", "bitrate": 1_000_000,
    }  # fmt: skip
    assert fails(await gateway.post(MEDIA + "/streams", json=body, headers=auth), 409, 4001)
    missing = await gateway.post(
        MEDIA + "/streams", json={"stream_id": "x", "width": 320, "height": 180}, headers=auth
    )
    assert fails(missing)
    assert missing.json()["error"]["detail"] == (
        "Invalid request body: Key: 'FPS' Error:Field validation for 'FPS' failed on the 'required' tag"
    )
    assert fails(
        await gateway.post(MEDIA + "/streams", json={**body, "stream_id": "b", "width": 5000}, headers=auth)
    )
    assert fails(await gateway.get("/api/v1/streams/zzz", headers=auth), 404, 4000)

    off = await gateway.delete(MEDIA + "/streams/sub/disable", headers=auth)
    assert (await data(off))["message"] == "Stream disabled successfully — parameters preserved in config"
    again = await gateway.delete(MEDIA + "/streams/sub/disable", headers=auth)
    assert await data(again) == {"message": "Stream is already disabled", "stream": "sub"}
    row = await status_of(gateway, auth, "sub")
    assert row["status"] == "inactive" and row["ms_since_last_frame"] is None
    assert (await gateway.post(MEDIA + "/streams/sub/enable", headers=auth)).status_code == 200
    assert (await status_of(gateway, auth, "sub"))["status"] == "active"
    for method, path, detail in (
        ("DELETE", "/streams/main", "Cannot remove main stream"),
        ("POST", "/streams/main/enable", "Main stream is always enabled"),
        ("DELETE", "/streams/main/disable", "Main stream cannot be disabled"),
    ):
        refused = await gateway.request(method, MEDIA + path, headers=auth)
        assert fails(refused) and refused.json()["error"]["detail"] == detail
    gone = await gateway.delete(MEDIA + "/streams/ai", headers=auth)
    assert await data(gone) == {"message": "Stream removed successfully", "stream": "ai"}
    assert [s["id"] for s in (await data(await gateway.get("/api/v1/streams", headers=auth)))["streams"]] == [
        "main", "sub", "third",
    ]  # fmt: skip
    assert fails(await gateway.delete(MEDIA + "/streams/ai", headers=auth), 404, 4000)
    assert fails(await gateway.post(MEDIA + "/streams/ai/enable", headers=auth), 404, 4000)
