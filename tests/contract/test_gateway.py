"""The edge gateway's contract, as a client of the real camera relies on it: the RSA login and its
failures, the token on every private route and the 401 it gets without one, the system, device
and media reads, a picture write put back afterwards, the vendor's 404 shapes, the files listing
and the event stream's WebSocket. Run against every backend (see conftest.py)."""

from __future__ import annotations

import asyncio
import re
import ssl

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.contract.backends import Camera

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.socket]

V1 = "/api/v1"
UNAUTHORIZED = {
    "code": 2000,
    "message": "Unauthorized",
    "error": {"type": "auth", "detail": "Invalid or missing authentication token"},
}
NO_ROUTE = {"code": 404, "message": "Not found"}
TOKEN = re.compile(r"Bearer [A-Za-z0-9_-]{43}")


def ok(resp: httpx.Response) -> dict | list:
    """A success's ``data``: HTTP 200 with ``{"code": 0, "message": "Success", "data": ...}``."""
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert (body["code"], body["message"]) == (0, "Success"), body
    return body["data"]


def failed(resp: httpx.Response, status: int, code: int) -> dict:
    """A failure in the device's envelope: the status, the code, the fixed message, ``error``."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["code"] == code and isinstance(body["message"], str) and isinstance(body["error"], dict), body
    return body


def ws_ssl(url: str) -> ssl.SSLContext | None:
    """WebSocket TLS that accepts the device's self-signed certificate."""
    if not url.startswith("wss://"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


# Login -------------------------------------------------------------------------------------------
async def test_public_key_is_served_without_a_token(camera: Camera, http: httpx.AsyncClient) -> None:
    data = ok(await http.get(camera.url + V1 + "/auth/public-key"))
    assert data["public_key"].startswith("-----BEGIN PUBLIC KEY-----")
    assert data["algorithm"] == "RSA-2048/PKCS1v15"
    assert isinstance(data["unix_timestamp"], int) and data["unix_timestamp"] > 0


async def test_login_with_the_encrypted_password_gives_a_bearer_token(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    data = ok(await camera.login(http))
    assert TOKEN.fullmatch(data["token"]) and data["username"] == camera.username
    session = {"Authorization": data["token"]}
    assert ok(await http.get(camera.url + V1 + "/system/info", headers=session))
    assert (await http.post(camera.url + V1 + "/logout", headers=session)).status_code == 200
    assert (await http.get(camera.url + V1 + "/system/info", headers=session)).status_code == 401  # ended


async def test_a_wrong_password_is_code_2000_with_401(camera: Camera, http: httpx.AsyncClient) -> None:
    body = failed(await camera.login(http, password="not-the-password-1"), 401, 2000)
    assert body["message"] == "Unauthorized"
    assert body["error"]["detail"] == "Invalid username or password"


@pytest.mark.parametrize(
    "payload",
    [{"json": {"username": "admin"}}, {"json": {"password": "x"}}, {"content": b"username=admin"}],
    ids=["no-password", "no-username", "not-json"],
)
async def test_a_login_missing_fields_is_code_1001_with_400(
    camera: Camera, http: httpx.AsyncClient, payload: dict
) -> None:
    body = failed(await http.post(camera.url + "/api/login", **payload), 400, 1001)
    assert body["error"]["detail"] == "Invalid input format"


async def test_a_stale_login_timestamp_is_code_1005_with_400(camera: Camera, http: httpx.AsyncClient) -> None:
    body = {"username": camera.username, "password": "any-password-1", "timestamp": 1_000_000}
    failed(await http.post(camera.url + "/api/login", json=body), 400, 1005)


async def test_logout_is_public_and_idempotent(camera: Camera, http: httpx.AsyncClient) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-session"}):
        resp = await http.post(camera.url + V1 + "/logout", headers=headers)
        assert resp.status_code == 200 and resp.json() == {"code": 0, "message": "Success"}


# The token ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("token", [None, "Bearer not-a-session"], ids=["missing", "unknown"])
async def test_private_routes_need_the_token(
    camera: Camera, http: httpx.AsyncClient, token: str | None
) -> None:
    headers = {"Authorization": token} if token else {}
    resp = await http.get(camera.url + V1 + "/system/info", headers=headers)
    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
    assert resp.json() == UNAUTHORIZED


async def test_the_token_is_read_from_the_header_with_or_without_bearer_and_from_the_query(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    token = await camera.token(http)
    raw = token.removeprefix("Bearer ")
    url = camera.url + V1 + "/system/info"
    for request in (
        http.get(url, headers={"Authorization": token}),
        http.get(url, headers={"Authorization": raw}),
        http.get(url, params={"token": raw}),
    ):
        assert ok(await request)


async def test_health_and_upgrade_status_are_public(camera: Camera, http: httpx.AsyncClient) -> None:
    health = ok(await http.get(camera.url + V1 + "/system/health"))
    assert health["status"] == "healthy" and health["service"] == "platform-api"
    assert isinstance(health["time"], int)
    assert "status" in ok(await http.get(camera.url + V1 + "/system/ota/status"))
    assert "status" in ok(await http.get(camera.url + V1 + "/system/os-upgrade/status"))


# Reads -------------------------------------------------------------------------------------------
async def test_system_info_names_the_services(camera: Camera, http: httpx.AsyncClient) -> None:
    info = ok(await http.get(camera.url + V1 + "/system/info", headers=await camera.auth(http)))
    assert isinstance(info["version"], str) and info["version"]
    assert set(info["services"]) == {"ai-runtime", "event-bus", "device-control", "app-manager"}
    assert all(isinstance(up, bool) for up in info["services"].values())


async def test_device_info_fields(camera: Camera, http: httpx.AsyncClient) -> None:
    info = ok(await http.get(camera.url + V1 + "/device-info", headers=await camera.auth(http)))
    for name in ("device_name", "model", "serial_number", "firmware_version", "hardware_version",
                 "os_version", "kernel_version", "mac_address", "ip_address", "install_prefix"):  # fmt: skip
        assert isinstance(info[name], str), name
    assert re.fullmatch(r"[A-Za-z0-9_-]+", info["device_name"])
    assert {"vendor", "model"} <= set(info["soc"]) and {"model", "cores", "frequency_mhz"} <= set(info["cpu"])
    assert {"total_gb", "used_gb", "used_percent"} <= set(info["memory"])
    assert isinstance(info["uptime"], int) and isinstance(info["ota"]["update_available"], bool)


async def test_media_config_and_status_read(camera: Camera, http: httpx.AsyncClient) -> None:
    auth = await camera.auth(http)
    assert isinstance(ok(await http.get(camera.url + V1 + "/media/config", headers=auth)), dict)
    assert isinstance(ok(await http.get(camera.url + V1 + "/apps", headers=auth)), list)  # bare, not wrapped
    streams = ok(await http.get(camera.url + V1 + "/media/status", headers=auth))["streams"]
    assert streams and {s["stream_id"] for s in streams} >= {"main"}
    statuses = {"active", "starting", "stalled", "stopped", "error", "unknown", "inactive"}
    for stream in streams:
        assert stream["status"] in statuses
        assert {"has_encoder", "codec", "width", "height", "fps", "bitrate_bps", "gop"} <= set(stream)
        assert {"ms_since_last_frame", "measured_fps", "status_detail"} <= set(stream)


IMAGE_KEYS = {
    "manual_mode", "brightness", "contrast", "saturation", "sharpness", "auto_exposure", "backlight",
    "exposure_time_us", "gain", "noise_reduction", "wdr_value", "powerline_freq", "awb_index",
}  # fmt: skip


async def test_a_brightness_write_is_read_back_and_put_back(camera: Camera, http: httpx.AsyncClient) -> None:
    auth = await camera.auth(http)
    url = camera.url + V1 + "/media/image"
    before = ok(await http.get(url, headers=auth))
    assert set(before) == IMAGE_KEYS and 0 <= before["brightness"] <= 100
    probe = 61 if before["brightness"] != 61 else 39
    try:
        assert "message" in ok(await http.put(url, json={"brightness": probe}, headers=auth))
        after = ok(await http.get(url, headers=auth))
        assert after == {**before, "brightness": probe}  # only the field sent changes
    finally:
        ok(await http.put(url, json={"brightness": before["brightness"]}, headers=auth))
    assert ok(await http.get(url, headers=auth)) == before


async def test_an_out_of_range_picture_value_is_refused_and_changes_nothing(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    auth = await camera.auth(http)
    url = camera.url + V1 + "/media/image"
    before = ok(await http.get(url, headers=auth))
    failed(await http.put(url, json={"contrast": 300}, headers=auth), 400, 1001)
    assert ok(await http.get(url, headers=auth)) == before


async def test_a_media_config_write_needs_a_json_content_type(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    headers = {**await camera.auth(http), "Content-Type": "text/plain"}
    body = failed(
        await http.post(camera.url + V1 + "/media/config", content=b"{}", headers=headers), 415, 1001
    )
    assert body["error"]["type"] == "validation"


# Not found ---------------------------------------------------------------------------------------
async def test_unknown_ids_and_paths_answer_the_vendor_404s(camera: Camera, http: httpx.AsyncClient) -> None:
    auth = await camera.auth(http)
    model = failed(await http.get(camera.url + V1 + "/ai/models/no-such-model", headers=auth), 404, 5000)
    assert model["message"] == "Model not found"
    failed(await http.get(camera.url + V1 + "/containers/no-such-container", headers=auth), 404, 4000)
    failed(
        await http.get(camera.url + V1 + "/h264/no-such-stream", headers=auth), 404, 4000
    )  # before the upgrade
    for path in (V1 + "/no/such/route", "/api/no-such-route"):
        resp = await http.get(camera.url + path, headers=auth)
        assert resp.status_code == 404 and resp.json() == NO_ROUTE, path


# Files -------------------------------------------------------------------------------------------
async def test_files_list_the_default_directory_directories_first(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    listing = ok(await http.get(camera.url + V1 + "/files", headers=await camera.auth(http)))
    assert listing["path"].startswith("/")
    entries = listing["files"] or []
    dirs = [entry["is_dir"] for entry in entries]
    assert dirs == sorted(dirs, reverse=True)
    for entry in entries:
        assert entry["path"] == listing["path"].rstrip("/") + "/" + entry["name"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", entry["mod_time"])
        assert re.fullmatch(r"(-|[dalTLDpSugct?]+)[-rwx]{9}", entry["mode"])  # Go's FileMode.String
        assert isinstance(entry["size"], int)


async def test_files_outside_the_allowed_roots_are_8004(camera: Camera, http: httpx.AsyncClient) -> None:
    auth = await camera.auth(http)
    for path in ("/etc", "/data/../etc"):
        body = failed(
            await http.get(camera.url + V1 + "/files", params={"path": path}, headers=auth), 403, 8004
        )
        assert "outside allowed directories" in body["error"]["detail"], path


# Events ------------------------------------------------------------------------------------------
async def test_the_event_stream_opens_with_the_token_and_refuses_without(
    camera: Camera, http: httpx.AsyncClient
) -> None:
    raw = (await camera.token(http)).removeprefix("Bearer ")
    url = camera.ws(V1 + "/events/stream")
    async with connect(f"{url}?token={raw}", ssl=ws_ssl(url), open_timeout=20) as ws:
        await asyncio.wait_for(await ws.ping(), 20)  # open: the pong comes back
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, ssl=ws_ssl(url), open_timeout=20):
            pass
    assert refused.value.response.status_code == 401
