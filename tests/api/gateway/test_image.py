"""Picture settings under /api/v1/media: image, transform, OSD and its images, privacy masks (the
device's 415 and strict body), the AI overlay; answers and failures as handlers/media.go gives them."""

from __future__ import annotations

import cv2
import httpx
import numpy as np
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


def frame(twin: Twin, stream_id: str = "sub") -> np.ndarray:
    """What the stream would encode now: the renderer at the stream's size through the current view."""
    return twin.gateways["cam-01"].media.render_now(stream_id)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/image"),
        ("PUT", "/transform"),
        ("GET", "/osd"),
        ("PUT", "/privacy-mask"),
        ("PUT", "/ai-overlay"),
    ],
)
async def test_picture_routes_need_a_token(gateway, method: str, path: str) -> None:
    resp = await gateway.request(method, MEDIA + path, json={})
    assert resp.status_code == 401 and resp.json()["code"] == 2000


async def test_image_settings_change_the_picture(gateway, auth, twin: Twin) -> None:
    assert await data(await gateway.get(MEDIA + "/image", headers=auth)) == {
        "manual_mode": False, "brightness": 50, "contrast": 50, "saturation": 50, "sharpness": 50,
        "auto_exposure": True, "backlight": 0, "exposure_time_us": 33333, "gain": 0,
        "noise_reduction": 50, "wdr_value": 0, "powerline_freq": 1, "awb_index": -1,
    }  # fmt: skip
    before = frame(twin).mean()
    resp = await gateway.put(MEDIA + "/image", json={"brightness": 80, "gain": 12}, headers=auth)
    assert (await data(resp)) == {"message": "ISP settings applied successfully"}
    got = await data(await gateway.get(MEDIA + "/image", headers=auth))
    assert got["brightness"] == 80 and got["gain"] == 12 and got["contrast"] == 50
    assert frame(twin).mean() > before + 40
    for body, detail in (
        ({"brightness": 150}, "brightness value 150 out of range [0, 100]"),
        ({"wdr_value": -1, "brightness": 101}, "brightness value 101 out of range [0, 100]"),
        ({"exposure_time_us": 0}, "exposure_time_us value 0 out of range [1, 1000000]"),
        ({"powerline_freq": 3}, "powerline_freq value 3 must be 0 (off), 1 (50Hz), or 2 (60Hz)"),
        ({"awb_index": 17}, "awb_index value 17 out of range [-1, 16]"),
        ({"gain": 2**31}, "Invalid request body"),
        ({"contrast": "high"}, None),
        ([1], None),
    ):
        bad = await gateway.put(MEDIA + "/image", json=body, headers=auth)
        assert bad.status_code == 400 and bad.json()["code"] == 1001, body
        assert detail is None or bad.json()["error"]["detail"] == detail


async def test_transform_flips_the_picture(gateway, auth, twin: Twin) -> None:
    await gateway.put(MEDIA + "/osd", json={"streams": [{"stream_name": "sub"}]}, headers=auth)  # no OSD
    before = frame(twin)
    resp = await gateway.put(MEDIA + "/transform", json={"flip": 3}, headers=auth)
    assert resp.json() == {
        "code": 0, "message": "Success", "data": {"message": "Transform config applied successfully"},
    }  # fmt: skip
    assert await data(await gateway.get(MEDIA + "/transform", headers=auth)) == {
        "rotation": 0, "flip": 3, "dewarp": False, "grayscale": False, "dis": False, "eis": False,
    }  # fmt: skip
    assert np.array_equal(frame(twin), cv2.flip(before, -1))
    await gateway.put(MEDIA + "/transform", json={"grayscale": True}, headers=auth)  # the flip is kept
    got = await data(await gateway.get(MEDIA + "/transform", headers=auth))
    assert got["flip"] == 3 and got["grayscale"] is True
    gray = frame(twin)
    assert np.array_equal(gray[..., 0], gray[..., 1]) and np.array_equal(gray[..., 1], gray[..., 2])
    for body, detail in (
        ({"rotation": 4}, "rotation value 4 must be 0 (0°), 1 (90°), 2 (180°), or 3 (270°)"),
        ({"flip": 7}, "flip value 7 must be 0 (none), 1 (horizontal), 2 (vertical), or 3 (both)"),
        ({"flip": -1}, "Invalid request body"),
        ({"flip": True}, None),
    ):
        bad = await gateway.put(MEDIA + "/transform", json=body, headers=auth)
        assert bad.status_code == 400 and bad.json()["code"] == 1001, body
        assert detail is None or bad.json()["error"]["detail"] == detail


async def test_osd_text_and_uploaded_image(gateway, auth, twin: Twin) -> None:
    osd = (await data(await gateway.get(MEDIA + "/osd", headers=auth)))["streams"]
    assert [o["stream_name"] for o in osd] == ["main", "sub", "third"]
    assert osd[0]["text_overlays"][0]["text"] == "cam-01" and osd[0]["datetime_overlays"]

    logo = np.zeros((200, 200, 3), np.uint8)
    logo[:, :, 1] = 255  # pure green
    png = cv2.imencode(".png", logo)[1].tobytes()
    up = await gateway.post(
        MEDIA + "/osd/upload-image", files={"file": ("logo.png", png, "image/png")}, headers=auth
    )
    assert await data(up) == {"path": "/data/aipc/etc/osd/logo.png", "size": len(png)}
    got = await gateway.get(MEDIA + "/osd/image/logo.png", headers=auth)
    assert got.status_code == 200 and got.content == png and got.headers["content-type"] == "image/png"
    text = {"id": "t", "text": "DOCK", "x": 0.1, "y": 0.1, "font_size": 80, "enabled": True}
    image = {"id": "l", "image_path": "/data/aipc/etc/osd/logo.png", "x": 0.6, "y": 0.6}
    body = {
        "streams": [
            {
                "stream_name": "sub",
                "text_overlays": [text, {**text, "id": " "}],  # no id: dropped
                "datetime_overlays": [{"id": "d", "x": -3, "y": 7, "enabled": True}],  # clamped
                "image_overlays": [
                    {**image, "width": 0.2, "height": 0.2, "enabled": True},
                    {**image, "id": "big", "width": 1.5, "height": 0.2},  # not in (0, 1]: dropped
                    {
                        **image,
                        "id": "gone",
                        "image_path": "/data/aipc/etc/osd/none.png",
                        "width": 0.1,
                        "height": 0.1,
                    },
                    {**image, "id": "out", "image_path": "/tmp/logo.png", "width": 0.1, "height": 0.1},
                ],
            },
            {"stream_name": "fifth"},  # no such stream: skipped
            {"stream_name": ""},
        ]
    }
    put = await gateway.put(MEDIA + "/osd", json=body, headers=auth)
    assert await data(put) == {"message": "OSD config updated successfully"}
    sub = next(
        o
        for o in (await data(await gateway.get(MEDIA + "/osd", headers=auth)))["streams"]
        if o["stream_name"] == "sub"
    )
    assert [t["id"] for t in sub["text_overlays"]] == ["t"]
    assert sub["text_overlays"][0] == {**text, "text_color": 0, "h_align": 0, "v_align": 0}
    assert (sub["datetime_overlays"][0]["x"], sub["datetime_overlays"][0]["y"]) == (0.0, 1.0)
    assert sub["image_overlays"] == [
        {
            **image,
            "image_size": len(png),
            "width": 0.2,
            "height": 0.2,
            "h_align": 0,
            "v_align": 0,
            "enabled": True,
        }
    ]
    img = frame(twin)
    h, w = img.shape[:2]
    patch = img[int(0.6 * h) + 2 : int(0.8 * h) - 2, int(0.6 * w) + 2 : int(0.8 * w) - 2]
    assert (patch[:, :, 1] == 255).all() and (patch[:, :, 0] == 0).all()

    for files, detail in (
        ({"file": ("x.jpg", b"nope", "image/jpeg")}, "only PNG and BMP images are supported"),
        ({"other": ("x.png", b"nope", "image/png")}, "file is required: http: no such file"),
    ):
        bad_upload = await gateway.post(MEDIA + "/osd/upload-image", files=files, headers=auth)
        assert bad_upload.status_code == 400 and bad_upload.json()["error"]["detail"] == detail
    missing = await gateway.get(MEDIA + "/osd/image/none.png", headers=auth)
    assert missing.status_code == 404 and missing.json()["code"] == 8000
    assert (await gateway.get(MEDIA + "/osd/font", headers=auth)).json()["code"] == 8000
    for osd_body in (
        {"streams": [{"stream_name": "sub", "text_overlays": [{"text": "x", "x": "2"}]}]},
        {"streams": [{"stream_name": 5}]},
        {"streams": "main"},
        None,
    ):
        resp = await gateway.put(MEDIA + "/osd", json=osd_body, headers=auth)
        assert resp.status_code == 400 and resp.json()["error"] == {"detail": "Invalid request body"}, (
            osd_body
        )


SQUARE = {"points_x": [0.25, 0.75, 0.75, 0.25], "points_y": [0.25, 0.25, 0.75, 0.75]}


async def test_privacy_masks_fill_their_polygons_and_the_body_is_strict(gateway, auth, twin: Twin) -> None:
    body = {"enabled": True, "regions": [{"id": "win", "name": "Window", "enabled": True, **SQUARE}]}
    resp = await gateway.put(MEDIA + "/privacy-mask", json=body, headers=auth)
    assert await data(resp) == {"message": "Privacy mask config applied successfully"}
    got = await data(await gateway.get(MEDIA + "/privacy-mask", headers=auth))
    assert got == {
        "enabled": True, "color": 0, "blur_radius": 0, "regions": body["regions"], "dpm_enabled": False,
        "dpm_labels": "", "dpm_mode": "", "dpm_color": 0,
    }  # fmt: skip
    img = frame(twin)
    h, w = img.shape[:2]
    assert img[h // 4 + 1 : 3 * h // 4 - 1, w // 4 + 1 : 3 * w // 4 - 1].max() == 0
    camel = {"blurRadius": 6, "dpmEnabled": True, "dpmMode": "mosaic", "color": 0xFF0000}
    assert (await gateway.put(MEDIA + "/privacy-mask", json=camel, headers=auth)).status_code == 200
    got = await data(await gateway.get(MEDIA + "/privacy-mask", headers=auth))
    assert (got["blur_radius"], got["dpm_enabled"], got["dpm_mode"]) == (6, True, "mosaic")
    assert got["regions"] == body["regions"]  # not sent: kept
    assert frame(twin)[h // 2, w // 2].max() > 0  # blurred, not filled

    plain = await gateway.put(
        MEDIA + "/privacy-mask", content=b"{}", headers={**auth, "Content-Type": "text/plain"}
    )
    assert plain.status_code == 415
    assert plain.json() == {
        "code": 1001, "message": "Invalid request",
        "error": {"type": "validation", "detail": "Content-Type must be application/json"},
    }  # fmt: skip
    vendor_json = {**auth, "Content-Type": "application/vnd.api+json"}
    assert (
        await gateway.put(MEDIA + "/privacy-mask", content=b'{"enabled":false}', headers=vendor_json)
    ).status_code == 200
    for bad, detail in (
        ({}, "No supported privacy mask fields were provided"),
        (
            {"enabled": True, "color": "red"},
            "Invalid request body: json: cannot unmarshal string into Go struct field .color of type uint32",
        ),
        ({"enabled": True, "masks": []}, 'Invalid request body: json: unknown field "masks"'),
        ({"regions": [{**SQUARE, "shape": "oval"}]}, 'Invalid request body: json: unknown field "shape"'),
        (
            {"regions": [{"points_x": [0.1] * 9, "points_y": [0.1] * 9}]},
            "Each region must have at most 8 vertices",
        ),
        ({"regions": [{"points_x": [1.5], "points_y": [0.1]}]}, "points_x must be in [0.0, 1.0]"),
        ({"blur_radius": 65}, "blur_radius must be in [0, 64]"),
        ({"blur_radius": 3, "blurRadius": 4}, "blur_radius and its camelCase alias disagree"),
        ({"dpm_mode": "pixelate"}, "dpm_mode must be one of: mosaic, blur, overlay"),
        ({"dpm_color": 0x1000000}, "dpm_color must be a 24-bit RGB value"),
        (
            {"enabled": "yes"},
            "Invalid request body: json: cannot unmarshal string into Go struct field .enabled of type bool",
        ),
    ):
        resp = await gateway.put(MEDIA + "/privacy-mask", json=bad, headers=auth)
        assert resp.status_code == 400 and resp.json()["code"] == 1001, bad
        assert resp.json()["error"]["detail"] == detail


async def test_ai_overlay_draws_the_models_detections(gateway, auth, twin: Twin) -> None:
    await gateway.put(MEDIA + "/osd", json={"streams": [{"stream_name": "sub"}]}, headers=auth)
    before = frame(twin)
    resp = await gateway.put(MEDIA + "/ai-overlay", json={"enabled": True, "line_thickness": 4}, headers=auth)
    assert resp.json()["data"] == {"message": "AI overlay config updated successfully"}
    detections = twin.gateways["cam-01"].picture.detections()
    assert detections and all(0 < d.confidence < 1 for d in detections)
    after = frame(twin)
    green = (after[:, :, 1] == 255) & (after[:, :, 0] == 0) & (after[:, :, 2] == 0)
    assert green.sum() > 50 and not ((before[:, :, 1] == 255) & (before[:, :, 0] == 0)).any()
    for bad_body in ({"line_thickness": -1}, {"enabled": "on"}, None):
        bad = await gateway.put(MEDIA + "/ai-overlay", json=bad_body, headers=auth)
        assert bad.status_code == 400 and bad.json()["error"] == {"detail": "Invalid request body"}
    await gateway.put(MEDIA + "/ai-overlay", json={"enabled": True}, headers=auth)
    config = await data(await gateway.get(MEDIA + "/config", headers=auth))
    assert config["ai_overlay"] == {  # the fields not sent are Go's zero values, not the old ones
        "enabled": True, "show_label": False, "show_confidence": False, "line_thickness": 0,
    }  # fmt: skip
