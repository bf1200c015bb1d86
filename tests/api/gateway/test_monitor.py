"""Monitoring, processes, storage and device administration over a simulated camera: figures move
with what runs (a started app shows up in CPU, memory, processes; disk usage is the partitions');
and the failure paths."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from tests.api.gateway.test_apps import install, while_time_runs
from tests.conftest import gateway_token
from tests.sockets import socket_settings
from twin.camera.wing import cameras_of
from twin.serve import Twin, build, start, stop


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def get(gateway: httpx.AsyncClient, auth: dict[str, str], path: str, **params: object) -> dict:
    resp = await gateway.get(path, headers=auth, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def test_summary_shapes(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    s = await get(gateway, auth, "/api/v1/monitor/summary")
    assert set(s) == {"cpu", "memory", "disk", "host", "network", "npu"}
    assert s["cpu"]["cores"] == 4 and 0 < s["cpu"]["usage_percent"] < 100
    assert s["disk"]["mountpoint"] == "/data" and s["disk"]["total"] == 53_000_000_000
    assert s["host"]["kernel_arch"] == "aarch64" and s["host"]["hostname"] == "cam-01"
    assert isinstance(s["npu"], float)
    cpu = await get(gateway, auth, "/api/v1/monitor/cpu")
    assert cpu["core_count"] == len(cpu["cores"]) == 4
    mem = await get(gateway, auth, "/api/v1/monitor/memory")
    assert mem["virtual"]["used"] + mem["virtual"]["available"] == mem["virtual"]["total"]
    net = await get(gateway, auth, "/api/v1/monitor/network")
    assert net["interfaces"][0]["name"] == "eth0"
    snap = await get(gateway, auth, "/api/v1/monitor/snapshot")
    assert set(snap["temperatures"]) == {"cpu", "npu", "board"} and snap["timestamp"] > 1e12


async def test_disk_reports_the_partitions(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    disk = await get(gateway, auth, "/api/v1/monitor/disk")
    root, data, sdcard = disk["partitions"]
    assert sdcard["mountpoint"] == "" and sdcard["is_removable"] and not sdcard["is_protected"]
    assert root["mountpoint"] == "/" and root["is_system"] and root["is_protected"]
    assert 3.2e9 < root["total"] < 3.4e9 and root["free"] == root["total"] - root["used"]
    assert data["mountpoint"] == "/data" and data["fstype"] == "ext4" and not data["is_removable"]
    cameras_of(twin.world)["cam-01"].storage.charge("data", "recordings", 1_000_000_000)
    after = (await get(gateway, auth, "/api/v1/monitor/disk"))["partitions"][1]
    assert after["used"] == data["used"] + 1_000_000_000


async def test_a_running_app_shows_in_the_figures(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    idle_mem = (await get(gateway, auth, "/api/v1/monitor/memory"))["virtual"]["used"]
    idle = await get(gateway, auth, "/api/v1/processes", sort="pid", limit=500)
    await install(gateway, twin, auth)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    busy = await get(gateway, auth, "/api/v1/processes", sort="pid", limit=500)
    assert busy["total"] == idle["total"] + 1
    app = next(p for p in busy["processes"] if "aipc-people-counter" in p["cmdline"])
    assert app["cpu_percent"] > 0 and app["mem_rss"] > 0
    assert (await get(gateway, auth, "/api/v1/monitor/memory"))["virtual"]["used"] > idle_mem + 50_000_000
    detail = await get(gateway, auth, f"/api/v1/processes/{app['pid']}")
    assert isinstance(detail["status"], list) and detail["ppid"] == 1 and detail["create_time"] > 0
    killed = await gateway.post(f"/api/v1/processes/{app['pid']}/kill", headers=auth, params={"signal": "9"})
    assert killed.json()["data"]["signal"] == "SIGKILL"
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "stopped"


async def test_processes_sort_search_limit(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    by_cpu = (await get(gateway, auth, "/api/v1/processes"))["processes"]
    assert [p["cpu_percent"] for p in by_cpu] == sorted((p["cpu_percent"] for p in by_cpu), reverse=True)
    assert set(by_cpu[0]) == {
        "pid",
        "name",
        "status",
        "cpu_percent",
        "mem_percent",
        "mem_rss",
        "username",
        "cmdline",
    }
    found = await get(gateway, auth, "/api/v1/processes", search="platform-api", limit=1)
    assert found["total"] == 1 and found["processes"][0]["name"] == "platform-api"


async def test_storage_disks_and_protected_partitions(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    disks = await get(gateway, auth, "/api/v1/storage/disks")
    disk, card = disks["blockdevices"]
    assert disk["name"] == "mmcblk0" and disk["type"] == "disk"
    assert [c["mountpoint"] for c in disk["children"]] == ["/boot", "/", "/data"]
    assert card["name"] == "mmcblk1" and card["children"][0]["mountpoint"] is None
    for path, body, status, code in [
        ("/api/v1/storage/unmount", {"target": "/data"}, 403, 8004),
        ("/api/v1/storage/format", {"device": "/dev/mmcblk0p3", "fstype": "ext4"}, 403, 8004),
        ("/api/v1/storage/mount", {"device": "/dev/mmcblk0p3", "target": "/mnt/x"}, 403, 8004),
        ("/api/v1/storage/mount", {"device": "/dev/sda1", "target": "/mnt/usb"}, 404, 4000),
        ("/api/v1/storage/mount", {"device": "/dev/mmcblk1p1", "target": "/etc"}, 400, 1004),
        ("/api/v1/storage/unmount", {"target": "/mnt/nothing"}, 404, 4000),
        ("/api/v1/storage/format", {"device": "/dev/sda1", "fstype": "ntfs"}, 400, 1001),
        ("/api/v1/storage/mount", {"target": "/mnt/x"}, 400, 1001),
        ("/api/v1/storage/format", {"fstype": "ext4"}, 400, 1001),
        ("/api/v1/storage/unmount", {}, 400, 1001),
    ]:
        resp = await gateway.post(path, headers=auth, json=body)
        assert (resp.status_code, resp.json()["code"]) == (status, code), (path, body)


async def test_the_sd_card_mounts_formats_and_unmounts(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    sd = {"device": "/dev/mmcblk1p1", "target": "/mnt/sdcard"}
    mounted = await gateway.post("/api/v1/storage/mount", headers=auth, json=sd)
    assert mounted.json()["data"] == {"message": "Successfully mounted", **sd}
    card = (await get(gateway, auth, "/api/v1/monitor/disk"))["partitions"][2]
    assert card["mountpoint"] == "/mnt/sdcard"
    again = await gateway.post("/api/v1/storage/mount", headers=auth, json=sd)
    assert again.status_code == 409 and again.json()["code"] == 4001
    unmounted = await gateway.post("/api/v1/storage/unmount", headers=auth, json={"target": "/mnt/sdcard"})
    assert unmounted.json()["data"] == {"message": "Successfully unmounted", "target": "/mnt/sdcard"}
    default = await gateway.post("/api/v1/storage/mount", headers=auth, json={"device": "/dev/mmcblk1p1"})
    assert default.json()["data"]["target"] == "/mnt/mmcblk1p1"  # MountDisk's default mount point
    done = await gateway.post("/api/v1/storage/format", headers=auth, json={"device": "/dev/mmcblk1p1"})
    assert done.json()["data"] == {
        "message": "Successfully formatted",
        "device": "/dev/mmcblk1p1",
        "fstype": "ext4",
    }
    card = (await get(gateway, auth, "/api/v1/monitor/disk"))["partitions"][2]
    assert card["fstype"] == "ext4" and card["mountpoint"] == ""


async def test_device_info_settings_network(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    info = await get(gateway, auth, "/api/v1/device-info")
    assert info["model"] == "NE503-AIPC" and info["firmware_version"] == "0.1.0"
    assert (
        await gateway.put("/api/v1/device-info", headers=auth, json={"device_name": "gate-2"})
    ).status_code == 200
    assert (await get(gateway, auth, "/api/v1/device-info"))["device_name"] == "gate-2"
    bad = await gateway.put("/api/v1/device-info", headers=auth, json={"device_name": "gate 2!"})
    assert bad.status_code == 400 and bad.json()["code"] == 1001
    factory = await gateway.post(
        "/api/v1/device-info/factory", headers=auth, content=b'{"field":"serial","value":"X1"}'
    )
    assert factory.status_code == 415 and factory.json()["error"]["type"] == "validation"
    factory = await gateway.post(
        "/api/v1/device-info/factory", headers=auth, json={"field": "serial", "value": "X1"}
    )
    assert (
        factory.status_code == 200
        and (await get(gateway, auth, "/api/v1/device-info/factory"))["serial_number"] == "X1"
    )

    await gateway.post("/api/v1/settings", headers=auth, json={"key": "detection_threshold", "value": "0.75"})
    assert (await get(gateway, auth, "/api/v1/settings"))["settings"] == {"detection_threshold": "0.75"}
    deleted = await gateway.delete("/api/v1/settings/detection_threshold", headers=auth)
    assert deleted.json()["data"] == {"deleted": "detection_threshold"}
    gone = await gateway.delete("/api/v1/settings/detection_threshold", headers=auth)
    assert gone.status_code == 404 and gone.json()["code"] == 4000

    cfg = await get(gateway, auth, "/api/v1/network/config", interface="eth0")
    assert cfg["mode"] == "dhcp" and cfg["mac_address"].startswith("02:1a:")
    static = {"mode": "static", "ip_address": "10.0.0.9", "subnet_mask": "255.255.0.0", "gateway": "10.0.0.1"}
    saved = await gateway.post("/api/v1/network/config", headers=auth, json=static)
    assert saved.json()["data"] == {"message": "Network configuration saved and applying"}
    assert (await get(gateway, auth, "/api/v1/network/config"))["ip_address"] == "10.0.0.9"
    wrong = await gateway.post(
        "/api/v1/network/config", headers=auth, json={**static, "ip_address": "10.0.0.300"}
    )
    assert wrong.status_code == 400 and wrong.json()["code"] == 1004
    ifaces = (await get(gateway, auth, "/api/v1/network/interfaces"))["interfaces"]
    assert [(i["name"], i["status"], i["is_default"]) for i in ifaces] == [
        ("eth0", "up", True),
        ("wlan0", "down", False),
    ]
    assert ifaces[1]["gateway"] == "" and ifaces[1]["dns"] is None
    missing = await gateway.get("/api/v1/network/config", headers=auth, params={"interface": "eth9"})
    assert missing.status_code == 404


async def test_event_logs(gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]) -> None:
    body = {
        "event_type": "door.opened",
        "level": "warning",
        "category": "operation",
        "source": "web",
        "user": "admin",
        "message": "Door opened",
    }
    created = (await gateway.post("/api/v1/event-logs", headers=auth, json=body)).json()["data"]
    assert created == {"message": "Event log created successfully"}
    page = await get(gateway, auth, "/api/v1/event-logs", level="warning")
    entry = page["entries"][0]
    assert page["total"] == 1 and entry["event_type"] == "door.opened" and page["limit"] == 100
    assert entry["user"] == "admin" and entry["message_zh"] == ""  # not a template's code
    logout = {"event_type": "user.logout", "source": "web", "message": "-", "data": {"username": "ops"}}
    await gateway.post("/api/v1/event-logs", headers=auth, json=logout)
    rendered = (await get(gateway, auth, "/api/v1/event-logs", search="logged out"))["entries"][0]
    assert (rendered["message"], rendered["message_zh"]) == ("User ops logged out", "用户 ops 登出")
    assert rendered["level"] == rendered["category"] == "" and "user" not in rendered
    assert (await get(gateway, auth, "/api/v1/event-logs", category="all"))["total"] == 3  # + the boot entry
    assert (await get(gateway, auth, "/api/v1/event-logs", search="door.open"))["total"] == 1  # the type too
    assert (await get(gateway, auth, "/api/v1/event-logs", start_time="yesterday"))["total"] == 3  # ignored
    assert (await get(gateway, auth, "/api/v1/event-logs", limit=0))["limit"] == 100
    stats = await get(gateway, auth, "/api/v1/event-logs/statistics")
    assert stats["today_warnings"] == 1 and stats["total_entries"] == 3 and stats["system_events"] == 1
    templates = (await get(gateway, auth, "/api/v1/event-logs/templates"))["templates"]
    assert len(templates) == 71 and templates["user.logout"] == {
        "en": "User {{.username}} logged out",
        "zh": "用户 {{.username}} 登出",
        "module": "auth",
        "level": "info",
        "params": ["username"],
    }
    for params in ({"limit": 1001}, {"offset": -1}):
        resp = await gateway.get("/api/v1/event-logs", headers=auth, params=params)
        assert resp.status_code == 400, params
    for sent, detail in (
        (
            {"event_type": "x", "message": "m"},
            "Key: 'LogRecord.Source' Error:Field validation for 'Source' failed on the 'required' tag",
        ),
        (
            {**body, "source": 3},
            "json: cannot unmarshal number into Go struct field LogRecord.source of type string",
        ),
        (
            {**body, "data": [1]},
            "json: cannot unmarshal array into Go struct field LogRecord.data of type "
            "map[string]interface {}",
        ),
    ):
        resp = await gateway.post("/api/v1/event-logs", headers=auth, json=sent)
        assert resp.status_code == 400 and resp.json()["error"]["detail"] == detail, sent
    for sent, tag in (({}, "required"), ({"days": -1}, "gte"), ({"days": 366}, "lte")):
        resp = await gateway.request("DELETE", "/api/v1/event-logs", headers=auth, json=sent)
        assert resp.status_code == 400 and resp.json()["code"] == 1001, sent
        assert resp.json()["error"]["detail"].endswith(f"failed on the '{tag}' tag")
    assert (
        await gateway.request("DELETE", "/api/v1/event-logs", headers=auth, json={"days": "1"})
    ).status_code == 400
    kept = await gateway.request("DELETE", "/api/v1/event-logs", headers=auth, json={"days": 1})
    assert kept.json()["data"] == {"message": "Old event logs cleaned up successfully", "days": 1}
    # the two entries made now stay; the boot entry, a week old (the world's past), goes
    assert (await get(gateway, auth, "/api/v1/event-logs"))["total"] == 2
    twin.clock.advance(86400 + 60)
    await gateway.request("DELETE", "/api/v1/event-logs", headers=auth, json={"days": 1})
    assert (await get(gateway, auth, "/api/v1/event-logs"))["total"] == 0


@pytest.mark.parametrize(
    ("method", "path", "params", "status", "code"),
    [
        ("GET", "/api/v1/processes", {"sort": "name"}, 400, 1004),
        ("GET", "/api/v1/processes", {"limit": 501}, 400, 1004),
        ("GET", "/api/v1/processes", {"limit": "x"}, 400, 1001),
        ("GET", "/api/v1/processes/99999", {}, 404, 10000),
        ("GET", "/api/v1/processes/abc", {}, 400, 1001),
        ("POST", "/api/v1/processes/99999/kill", {}, 404, 10000),
        ("POST", "/api/v1/processes/1/kill", {"signal": "SIGSTOP"}, 400, 1004),
        ("GET", "/api/v1/config/jobs/job-1", {}, 404, 4000),
    ],
)
async def test_failures(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    method: str,
    path: str,
    params: dict,
    status: int,
    code: int,
) -> None:
    resp = await gateway.request(method, path, headers=auth, params=params)
    assert (resp.status_code, resp.json()["code"]) == (status, code)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/monitor/summary",
        "/api/v1/monitor/disk",
        "/api/v1/processes",
        "/api/v1/storage/disks",
        "/api/v1/device-info",
        "/api/v1/settings",
        "/api/v1/network/interfaces",
        "/api/v1/event-logs",
        "/api/v1/config/jobs",
    ],
)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, path: str) -> None:
    resp = await gateway.get(path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


# The gyro's SSE stream, over a real socket ---------------------------------------------------------
@pytest.fixture
async def live(tmp_path: Path):
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    async with httpx.AsyncClient(base_url=running.url("cam-01/http")) as http:
        token = await gateway_token(http)
        try:
            yield twin, http, token.removeprefix("Bearer ")
        finally:
            await stop(running)


async def sse_events(response: httpx.Response, count: int) -> list[tuple[str, dict]]:
    events, name = [], ""
    async for line in response.aiter_lines():
        if line.startswith("event:"):
            name = line.removeprefix("event:")
        elif line.startswith("data:"):
            events.append((name, json.loads(line.removeprefix("data:"))))
            if len(events) == count:
                return events
    return events


@pytest.mark.socket
async def test_gyro_attitude_streams_on_the_world_clock(live) -> None:
    twin, http, token = live

    async def run_clock() -> None:
        for _ in range(400):
            twin.clock.advance(0.1)
            await asyncio.sleep(0.005)

    params = {"token": token, "rate": "10"}
    async with http.stream("GET", "/api/v1/monitor/gyro/attitude", params=params) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        clock = asyncio.create_task(run_clock())
        events = await asyncio.wait_for(sse_events(response, 165), 30)
        clock.cancel()
    assert events[0] == ("status", {"sensor": "online"})
    names = [n for n, _ in events]
    assert names.count("heartbeat") == 1 and names.count("orientation") >= 150
    pitch, roll = events[1][1]["pitch"], events[1][1]["roll"]
    assert -90 <= pitch <= 90 and -90 <= roll <= 90
    beat = next(d for n, d in events if n == "heartbeat")
    assert beat["timestamp"] > 1e12


@pytest.mark.socket
async def test_gyro_attitude_needs_a_token(live) -> None:
    _, http, _ = live
    resp = await http.get("/api/v1/monitor/gyro/attitude")
    assert resp.status_code == 401 and resp.json()["code"] == 2000
