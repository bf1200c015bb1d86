"""Each gateway route family's responses against the device handler's field list and types
(tests/api/handler_shapes.py, written from the Go source), on a freshly built twin."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.api import handler_shapes as hs
from tests.conftest import gateway_token
from twin.serve import Twin
from twin.settings import Settings

ROOT = Path(__file__).resolve().parents[3]

FAMILIES = {
    "device": hs.DEVICE,
    "media": hs.MEDIA,
    "audio": hs.AUDIO,
    "device control": hs.DEVICE_CONTROL,
    "lens": hs.LENS,
    "logs": hs.LOGS,
    "apps": hs.APPS,
    "time": hs.TIME,
    "system": hs.SYSTEM,
    "ai": hs.AI,
    "events": hs.EVENTS,
    "storage": hs.STORAGE,
    "files": hs.FILES,
    "containers": hs.CONTAINERS,
    "monitor": hs.MONITOR,
    "processes": hs.PROCESSES,
    "network, settings, ssh": hs.NETWORK_SETTINGS_SSH,
    "store": hs.STORE,
    "dev": hs.DEV,
}
ROUTES = [(family, route) for family, table in FAMILIES.items() for route in table]


@pytest.fixture
def settings() -> Settings:
    """The default scenario: its camera runs an app, so the app rows are not empty."""
    return Settings(scenario=ROOT / "scenarios" / "default.yaml", step=True)


@pytest.fixture
async def auth(gateway: httpx.AsyncClient, twin: Twin) -> dict[str, str]:
    twin.clock.advance(30)
    return {"Authorization": await gateway_token(gateway)}


@pytest.mark.parametrize(("family", "route"), ROUTES, ids=[r for _, r in ROUTES])
async def test_response_has_the_handlers_fields_and_types(
    gateway: httpx.AsyncClient, auth: dict[str, str], family: str, route: str
) -> None:
    method, path = route.split(" ", 1)
    resp = await gateway.request(method, path, headers=auth)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["code"] == 0 and body["message"] == "Success"
    assert hs.mismatches(body["data"], FAMILIES[family][route]) == []


async def test_device_info_values(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await gateway.get("/api/v1/device-info", headers={**auth, "Host": "10.1.2.3:8080"})
    info = resp.json()["data"]
    assert info["ip_address"] == "10.1.2.3"
    assert info["serial_number"] == info["factory"]["serial_number"] and info["cpu"]["cores"] == 4
    assert info["ota"] == {"update_available": False, "current_version": info["firmware_version"]}
    assert info["uptime_formatted"].endswith("minutes")


async def test_system_stats_carry_the_ai_runtimes_stats(gateway: httpx.AsyncClient, auth: dict) -> None:
    ai = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
    system = (await gateway.get("/api/v1/system/stats", headers=auth)).json()["data"]
    assert system["services"]["ai-runtime"] == ai and ai["model_stats"][0]["model_id"] == "yolov8n"
    assert isinstance(ai["model_stats"][0]["avg_latency_us"], int)


async def test_factory_field_write(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    url = "/api/v1/device-info/factory"
    resp = await gateway.post(url, headers=auth, json={"field": "mac-address", "value": "AA:BB:CC:DD:EE:0F"})
    data = resp.json()["data"]
    assert data["field"] == "MAC" and data["value"] == "aa:bb:cc:dd:ee:0f"
    assert data["message"] == "Factory EEPROM field updated and verified"
    assert hs.mismatches(data["factory"], hs.FACTORY) == []
    assert data["factory"]["mac_address"] == data["value"]
    for body, detail in (
        ({"field": "colour", "value": "x"}, 'unsupported factory EEPROM field "colour"'),
        ({"field": "SN", "value": " "}, "SN cannot be empty"),
        ({"field": "MAC", "value": "zz"}, 'invalid MAC address "zz"'),
    ):
        bad = await gateway.post(url, headers=auth, json=body)
        assert bad.status_code == 400 and bad.json()["code"] == 1004, body
        assert bad.json()["error"]["detail"] == detail
    empty = await gateway.put("/api/v1/device-info", headers=auth, json={})
    assert empty.status_code == 400 and empty.json()["error"]["detail"] == "Device name cannot be empty"


async def test_file_manager_writes(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    """Each file manager action's answer, in the order a user would take them."""
    steps = (
        ("POST", "/api/v1/files/content", {"json": {"path": "/data/a.txt", "content": "hi"}}),
        ("GET", "/api/v1/files/content", {"params": {"path": "/data/a.txt"}}),
        ("POST", "/api/v1/files/mkdir", {"json": {"path": "/data/d"}}),
        ("POST", "/api/v1/files/rename", {"json": {"old_path": "/data/a.txt", "new_path": "/data/b.txt"}}),
        ("POST", "/api/v1/files/upload", {"files": {"file": ("u.txt", b"abc")}, "data": {"path": "/data"}}),
        ("DELETE", "/api/v1/files", {"params": {"path": "/data/u.txt"}}),
        ("POST", "/api/v1/files/batch-delete", {"json": {"paths": ["/data/b.txt", "/data/d"]}}),
    )
    for method, path, kwargs in steps:
        resp = await gateway.request(method, path, headers=auth, **kwargs)
        assert resp.status_code == 200, (path, resp.text)
        assert hs.mismatches(resp.json()["data"], hs.FILE_WRITES[f"{method} {path}"]) == [], path
    assert resp.json()["data"] == {"deleted": ["/data/b.txt", "/data/d"], "count": 2}


async def test_dev_project_answers(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    made = await gateway.post(
        "/api/v1/dev/projects", headers=auth, json={"name": "D", "key": "d", "base_image_id": 1}
    )
    project = made.json()["data"]  # CreateProject answers the bare AppProject
    assert hs.mismatches(project, hs.PROJECT) == [] and project["status"] == "draft"
    detail = (await gateway.get(f"/api/v1/dev/projects/{project['id']}", headers=auth)).json()["data"]
    assert hs.mismatches(detail, hs.DEV_PROJECT) == [] and detail["builds"] == []
    gone = await gateway.delete(f"/api/v1/dev/projects/{project['id']}", headers=auth)
    assert gone.json()["data"] == {"deleted": project["id"]}


def test_the_checker_catches_what_it_should() -> None:
    assert hs.mismatches({"k": [1], "n": None}, hs.MapOf(hs.OrNull([int]))) == []
    assert hs.mismatches({"k": {"x": "1"}}, hs.MapOf({"x": int})) == ["data.k.x: expected int, got str '1'"]
    shape = {"a": int, "b?": str, "c": [{"d": float}]}
    assert hs.mismatches({"a": 1, "c": [{"d": 2}]}, shape) == []
    found = hs.mismatches({"a": True, "b": 3, "c": [{}], "x": 0}, shape)
    assert found == [
        "data.x: not in the handler's struct",
        "data.a: expected int, got bool True",
        "data.b: expected str, got int 3",
        "data.c[0].d: missing",
    ]


async def test_device_and_audio_write_answers(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    """The hardware writes answer the device-control Status, the HAL's gin.H or gin.H{message}."""
    steps = (
        ("POST", "/api/v1/device/light", {"level": 30}, hs.STATUS),
        ("POST", "/api/v1/device/ptz", {"action": "stop"}, hs.STATUS),
        ("POST", "/api/v1/device/fan", {"enable": True}, hs.SWITCHED),
        ("POST", "/api/v1/device/alarm-out", {"channel": 1, "enable": True}, hs.SWITCHED),
        ("POST", "/api/v1/device/rs485/init", {"baudrate": 9600}, hs.RS485),
        ("POST", "/api/v1/device/lens/af/oneshot", None, hs.AF_JOB),
        ("POST", "/api/v1/device/lens/af/cancel", {}, hs.STATUS),
        ("PUT", "/api/v1/device/lens/zoom-level", {"level": 0.25}, hs.STATUS),
        ("PUT", "/api/v1/audio/config", {"volume": 0.5}, hs.MESSAGE),
        ("POST", "/api/v1/audio/capture/start", {}, hs.MESSAGE),
        ("PUT", "/api/v1/media/ai-overlay", {"enabled": True}, hs.MESSAGE),
        ("PUT", "/api/v1/media/privacy-mask", {"enabled": False}, hs.MESSAGE),
        ("PUT", "/api/v1/media/osd", {"streams": []}, hs.MESSAGE),
    )
    for method, path, body, shape in steps:
        resp = await gateway.request(method, path, json=body, headers=auth)
        assert resp.status_code == 200, (path, resp.text)
        assert hs.mismatches(resp.json()["data"], shape) == [], path
