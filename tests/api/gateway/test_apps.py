"""The app manager over a simulated camera: the three-step install, start, NDJSON logs, stop,
uninstall, and the partitions' usage back where it started; plus the failure paths."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable

import httpx
import pytest

from tests.conftest import gateway_token
from twin.camera.wing import cameras_of
from twin.serve import Twin

MANIFEST = """\
apiVersion: v1
kind: Application
metadata:
  id: people-counter
  name: People counter
  version: 1.2.0
spec:
  image: people-counter:1.2.0
  resources:
    cpu: "50%"
    memory: 256Mi
  env:
    - name: STREAM_ID
      value: main
  volumes:
    - host: /data/aipc/apps
      container: /app/data
  healthcheck:
    enabled: true
    type: http
    path: /health
    port: 8080
  permissions:
    video: [main]
    inference:
      models: [yolov8n]
    events:
      publish: ["app/people-counter/*"]
      subscribe: ["app/people-counter/*"]
"""


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def while_time_runs(
    twin: Twin, request: Awaitable[httpx.Response], step: float = 0.5
) -> httpx.Response:
    """Send a request that waits on the world clock, advancing step-mode time until it answers."""
    task = asyncio.ensure_future(request)
    for _ in range(2000):
        await asyncio.sleep(0)
        if task.done():
            break
        twin.clock.advance(step)
    return await task


def usage(twin: Twin) -> dict[str, int]:
    """Bytes used per partition, less what the device's own services logged meanwhile (their logs
    grow with time, whatever apps do)."""
    camera = cameras_of(twin.world)["cam-01"]
    service_logs = sum(camera.fs.size_of(node) for _, node in camera.fs.walk_files("/var/log"))
    used = {p.name: p.used for p in camera.storage.usage()}
    used["root"] -= service_logs
    return used


async def install(
    gateway: httpx.AsyncClient,
    twin: Twin,
    auth: dict[str, str],
    manifest: str = MANIFEST,
    image: bytes = b"\x1f\x8b" + b"layer" * 2000,
    image_name: str = "people-counter.tar.gz",
) -> dict:
    """The three steps, then polling until the task ends; returns the final task."""
    up = await gateway.post("/api/v1/apps/upload-image", headers=auth, files={"file": (image_name, image)})
    assert up.status_code == 200, up.text
    image_path = up.json()["data"]["image_path"]
    mf = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", manifest)}
    )
    assert mf.status_code == 200, mf.text
    manifest_path = mf.json()["data"]["manifest_path"]
    body = {"manifest_path": manifest_path, "image_path": image_path, "force": False}
    resp = await gateway.post("/api/v1/apps/install-package", headers=auth, json=body)
    assert resp.status_code == 200, resp.text
    task_id = resp.json()["data"]["task_id"]
    assert len(task_id) == 8
    phases = []
    for _ in range(100):
        task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
        phases.append(task["phase"])
        if task["phase"] in ("complete", "error"):
            return task | {"seen": phases}
        twin.clock.advance(0.2)
    raise AssertionError(f"install never finished: {phases}")


async def test_install_start_logs_stop_uninstall_leaves_partitions_as_they_were(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    before = usage(twin)
    task = await install(gateway, twin, auth)
    assert task["phase"] == "complete" and task["percent"] == 100 and task["app_id"] == "people-counter"
    assert set(task) >= {"task_id", "phase", "percent", "message", "app_id", "error"}
    assert [p for i, p in enumerate(task["seen"]) if i == 0 or task["seen"][i - 1] != p] == [
        "validating",
        "pulling",
        "registering",
        "complete",
    ]
    assert usage(twin) != before

    apps = (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]
    assert isinstance(apps, list) and apps[0]["id"] == "people-counter" and apps[0]["state"] == "installed"
    assert "restart_count" not in apps[0]

    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["message"]
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "running" and info["container_id"] == "aipc-people-counter" and info["pid"] > 0

    twin.clock.advance(30)
    resp = await gateway.get("/api/v1/apps/people-counter/logs", headers=auth, params={"max_lines": 5})
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("application/x-ndjson")
    with pytest.raises(json.JSONDecodeError):
        json.loads(resp.text)  # not one JSON document: one per line
    lines = [json.loads(line) for line in resp.text.splitlines()]
    assert len(lines) == 5
    assert all(set(line) == {"timestamp", "level", "message"} for line in lines)
    assert any("detections=" in line["message"] for line in lines)
    assert lines == sorted(lines, key=lambda line: line["timestamp"])

    stats = (await gateway.get("/api/v1/apps/people-counter/stats", headers=auth)).json()["data"]
    assert stats["app_id"] == "people-counter" and stats["uptime_seconds"] >= 30
    assert 0 < stats["memory_usage_bytes"] <= stats["memory_limit_bytes"] == 256 * 1024 * 1024

    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/stop", headers=auth))
    assert resp.status_code == 200, resp.text
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "stopped" and "pid" not in info

    resp = await gateway.delete("/api/v1/apps/people-counter", headers=auth)
    assert resp.status_code == 200, resp.text
    assert (await gateway.get("/api/v1/apps", headers=auth)).json()["data"] == []
    assert (await gateway.get("/api/v1/images", headers=auth)).json()["data"]["images"] == []
    assert usage(twin) == before


async def test_permissions_and_containers_of_an_installed_app(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    perms = (await gateway.get("/api/v1/apps/people-counter/permissions", headers=auth)).json()["data"]
    assert perms["events"]["subscribe"] == ["app/people-counter/*"]
    assert perms["inference"]["models"] == ["yolov8n"]
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    again = await gateway.post("/api/v1/apps/people-counter/start", headers=auth)
    assert again.status_code == 409 and again.json()["code"] == 6004
    model_apps = (await gateway.get("/api/v1/ai/models/yolov8n/apps", headers=auth)).json()["data"]
    assert model_apps["apps"] == ["people-counter"]
    images = (await gateway.get("/api/v1/images", headers=auth)).json()["data"]["images"]
    assert images[0]["name"] == "people-counter:1.2.0" and images[0]["in_use"] is True


async def test_restart_counts_and_get_shows_restart_count(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/restart", headers=auth))
    assert resp.status_code == 200, resp.text
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["restart_count"] == 1 and info["state"] == "running"


async def test_synchronous_install_and_wizard(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    up = await gateway.post(
        "/api/v1/apps/upload-image", headers=auth, files={"file": ("x.tar", b"tar" * 100)}
    )
    mf = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", MANIFEST)}
    )
    body = {
        "manifest_path": mf.json()["data"]["manifest_path"],
        "image_path": up.json()["data"]["image_path"],
    }
    resp = await gateway.post("/api/v1/apps", headers=auth, json=body)
    assert resp.json()["data"] == {
        "message": "Application installed",
        "app_id": "people-counter",
        "updated": False,
    }
    resp = await gateway.post(
        "/api/v1/apps/wizard",
        headers=auth,
        json={"app_id": "second", "name": "Second", "image": "people-counter:1.2.0"},
    )
    assert resp.status_code == 200, resp.text
    ids = [a["id"] for a in (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]]
    assert ids == ["people-counter", "second"]


async def test_an_existing_app_needs_force(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    task = await install(gateway, twin, auth)
    assert task["phase"] == "error" and "already installed" in task["error"]
    assert task["message"].startswith("Installation failed: ")


async def test_each_install_has_its_own_task(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    first = await install(gateway, twin, auth)
    second = await install(gateway, twin, auth)
    assert re.fullmatch(r"[0-9a-f]{8}", first["task_id"]) and first["task_id"] != second["task_id"]
    kept = await gateway.get(f"/api/v1/apps/install-progress/{first['task_id']}", headers=auth)
    assert kept.status_code == 200 and kept.json()["data"]["phase"] == "complete"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/apps"),
        ("POST", "/api/v1/apps"),
        ("POST", "/api/v1/apps/upload-image"),
        ("POST", "/api/v1/apps/upload-manifest"),
        ("POST", "/api/v1/apps/install-package"),
        ("GET", "/api/v1/apps/install-progress/abcd1234"),
        ("GET", "/api/v1/apps/x"),
        ("DELETE", "/api/v1/apps/x"),
        ("POST", "/api/v1/apps/x/start"),
        ("POST", "/api/v1/apps/x/stop"),
        ("GET", "/api/v1/apps/x/logs"),
        ("GET", "/api/v1/apps/x/stats"),
        ("GET", "/api/v1/apps/x/permissions"),
        ("POST", "/api/v1/apps/wizard"),
    ],
)
async def test_app_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, path, headers={"Authorization": "Bearer nope"})
    assert resp.status_code == 401
    assert resp.json()["code"] == 2000


async def test_unknown_app_and_task_are_grpc_errors(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for method, path in (("GET", "/api/v1/apps/ghost"), ("GET", "/api/v1/apps/install-progress/ffffffff")):
        resp = await gateway.request(method, path, headers=auth)
        assert resp.status_code == 500
        body = resp.json()
        assert body["code"] == 3002 and body["error"]["detail"].startswith("rpc error: code = NotFound")


@pytest.mark.parametrize(
    ("path", "files", "detail"),
    [
        ("/api/v1/apps/upload-image", {"file": ("image.zip", b"x")}, "invalid file type"),
        ("/api/v1/apps/upload-image", {"other": ("image.tar", b"x")}, "no file"),
        ("/api/v1/apps/upload-manifest", {"file": ("app.yaml", b"apiVersion: v2\n")}, "apiVersion"),
        ("/api/v1/apps/upload-manifest", {"file": ("app.yaml", b"{{{")}, "invalid manifest"),
        ("/api/v1/apps/upload-manifest", {"file": ("app.txt", MANIFEST.encode())}, "invalid file type"),
    ],
)
async def test_bad_uploads(
    gateway: httpx.AsyncClient, auth: dict[str, str], path: str, files: dict, detail: str
) -> None:
    resp = await gateway.post(path, headers=auth, files=files)
    assert resp.status_code == 400
    assert resp.json()["code"] == 1001 and detail in resp.json()["error"]["detail"]


async def test_upload_needs_multipart(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await gateway.post("/api/v1/apps/upload-image", headers=auth, json={"file": "x"})
    assert resp.status_code == 400 and resp.json()["code"] == 1001


@pytest.mark.parametrize(
    "body",
    [{}, {"manifest_path": 5}, {"manifest_path": ""}, [], {"manifest_path": "/x", "force": "yes"}],
)
async def test_install_package_bodies(gateway: httpx.AsyncClient, auth: dict[str, str], body: object) -> None:
    resp = await gateway.post("/api/v1/apps/install-package", headers=auth, json=body)
    assert resp.status_code == 400 and resp.json()["code"] == 1001


async def test_install_of_a_missing_manifest_fails_in_the_task(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    resp = await gateway.post(
        "/api/v1/apps/install-package", headers=auth, json={"manifest_path": "/tmp/none.yaml"}
    )
    task_id = resp.json()["data"]["task_id"]
    twin.clock.advance(5)
    task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
    assert task["phase"] == "error" and "manifest not found" in task["error"] and task["percent"] == 5


async def test_stop_of_an_app_that_is_not_running(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    resp = await gateway.post("/api/v1/apps/people-counter/stop", headers=auth)
    assert resp.status_code == 400 and resp.json()["code"] == 6005
    resp = await gateway.get("/api/v1/apps/people-counter/logs", headers=auth, params={"max_lines": "many"})
    assert resp.status_code == 400 and resp.json()["code"] == 1001


# The app store --------------------------------------------------------------------------------------
async def test_store_catalogue(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    page = (await gateway.get("/api/v1/store/apps", headers=auth)).json()["data"]
    assert page["total"] == len(page["apps"]) >= 3 and page["page"] == 1 and page["page_size"] == 20
    featured = (await gateway.get("/api/v1/store/apps", headers=auth, params={"featured": "true"})).json()[
        "data"
    ]
    assert featured["apps"] and all(a["featured"] for a in featured["apps"])
    retail = (await gateway.get("/api/v1/store/apps", headers=auth, params={"category": "retail"})).json()[
        "data"
    ]
    assert [a["key"] for a in retail["apps"]] == ["people-counter"]
    detail = (await gateway.get("/api/v1/store/apps/people-counter", headers=auth)).json()["data"]
    assert detail["app"]["key"] == "people-counter" and detail["versions"][0]["version"] == "1.2.0"
    assert [t["key"] for t in detail["tags"]] == ["people"]
    cats = (await gateway.get("/api/v1/store/categories", headers=auth)).json()["data"]["categories"]
    assert {"retail", "security"} <= {c["key"] for c in cats}
    assert (await gateway.get("/api/v1/store/tags", headers=auth)).json()["data"]["tags"]


async def test_store_install_runs_the_app_pipeline(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    before = usage(twin)
    resp = await gateway.post(
        "/api/v1/store/apps/people-counter/install", headers=auth, json={"version": "1.1.0"}
    )
    assert resp.status_code == 200, resp.text
    started = resp.json()["data"]
    assert started["app_id"] == "people-counter" and len(started["task_id"]) == 8
    for _ in range(100):
        task = (
            await gateway.get(f"/api/v1/apps/install-progress/{started['task_id']}", headers=auth)
        ).json()["data"]
        if task["phase"] in ("complete", "error"):
            break
        twin.clock.advance(0.5)
    assert task["phase"] == "complete", task
    record = (await gateway.get("/api/v1/store/installs/people-counter", headers=auth)).json()["data"][
        "install"
    ]
    assert record["version"] == "1.1.0" and record["status"] == "installed" and record["store_app_id"] == 1
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    assert resp.status_code == 200, resp.text
    installs = (await gateway.get("/api/v1/store/installs", headers=auth)).json()["data"]["installs"]
    assert installs[0]["status"] == "running" and installs[0]["container_id"] == "aipc-people-counter"
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/stop", headers=auth))
    await gateway.delete("/api/v1/apps/people-counter", headers=auth)
    assert (await gateway.delete("/api/v1/store/installs/people-counter", headers=auth)).status_code == 200
    assert usage(twin) == before


async def test_install_records(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    body = {"app_id": "custom", "name": "Custom", "version": "0.1"}
    made = (await gateway.post("/api/v1/store/installs", headers=auth, json=body)).json()["data"]["install"]
    assert made["app_id"] == "custom" and made["status"] == "installing"
    dup = await gateway.post("/api/v1/store/installs", headers=auth, json=body)
    assert dup.status_code == 409 and dup.json()["code"] == 4001
    upd = await gateway.put(
        "/api/v1/store/installs/custom", headers=auth, json={"status": "failed", "message": "x"}
    )
    assert upd.json()["data"]["install"]["status"] == "failed"
    bad = await gateway.put("/api/v1/store/installs/custom", headers=auth, json={"status": 3})
    assert bad.status_code == 400


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("GET", "/api/v1/store/apps/ghost", {}, 404, 4000),
        ("POST", "/api/v1/store/apps/ghost/install", {}, 404, 4000),
        ("POST", "/api/v1/store/apps/people-counter/install", {"json": {"version": "9.9"}}, 404, 4000),
        ("POST", "/api/v1/store/apps/people-counter/install", {"json": {"config": [1]}}, 400, 1001),
        ("GET", "/api/v1/store/installs/ghost", {}, 404, 4000),
        ("DELETE", "/api/v1/store/installs/ghost", {}, 404, 4000),
        ("POST", "/api/v1/store/installs", {"json": {"app_id": "x"}}, 400, 1001),
    ],
)
async def test_store_failures(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    method: str,
    path: str,
    kwargs: dict,
    status: int,
    code: int,
) -> None:
    resp = await gateway.request(method, path, headers=auth, **kwargs)
    assert (resp.status_code, resp.json()["code"]) == (status, code), resp.text


# A reboot ---------------------------------------------------------------------------------------------
async def test_a_reboot_stops_apps_and_autostart_brings_them_back(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(
        gateway, twin, auth, manifest=MANIFEST.replace("  resources:\n", "  autostart: true\n  resources:\n")
    )
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    camera = cameras_of(twin.world)["cam-01"]
    camera.ai.stop_camera_service()
    assert camera.ai.get("yolov8n").status == "loaded"
    await gateway.post("/api/v1/system/restart", headers=auth)
    twin.clock.advance(5)
    assert not camera.powered
    assert camera.containers.containers["aipc-people-counter"].state == "stopped"
    assert camera.ai.camera_service_running and camera.ai.subscriptions == {}
    assert camera.ai.get("yolov8n").status == "uploaded"  # the accelerator forgot it
    twin.clock.advance(60)
    assert camera.powered
    auth = {"Authorization": await gateway_token(gateway)}  # the reboot dropped the session
    twin.clock.advance(5)
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "running" and info["pid"] > 0


# Health probes and automatic restarts -----------------------------------------------------------------
RESTARTING = MANIFEST.replace(
    "  healthcheck:\n",
    "  auto_restart:\n    enabled: true\n    max_retries: 2\n    retry_delay_seconds: 5\n"
    "    backoff_multiplier: 2\n  healthcheck:\n    interval: 10s\n    retries: 2\n",
)


async def test_an_unhealthy_app_is_stopped_and_restarted_with_backoff(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth, manifest=RESTARTING)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    apps = cameras_of(twin.world)["cam-01"].apps
    apps.break_health("people-counter")
    twin.clock.advance(20)  # two failed probes, 10 s apart
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "failed"
    logs = (await gateway.get("/api/v1/apps/people-counter/logs", headers=auth, params={"max_lines": 5})).text
    assert "GET http://127.0.0.1:8080/health: status 503 (2/2)" in logs and "unhealthy" in logs
    twin.clock.advance(7)  # restart 5 s later (+ start time)
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "running" and info["restart_count"] == 1
    twin.clock.advance(20 + 10 + 2)  # fails again; the second restart waits 10 s
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "running" and info["restart_count"] == 2
    twin.clock.advance(60)  # max_retries reached: it stays down
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "failed" and info["restart_count"] == 2


async def test_a_crash_is_restarted_and_a_healthy_app_stays_up(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth, manifest=RESTARTING)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    camera = cameras_of(twin.world)["cam-01"]
    twin.clock.advance(100)  # healthy probes: nothing happens
    assert camera.apps.get("people-counter").restart_count == 0
    camera.containers.kill("aipc-people-counter", reason="OOMKilled")
    assert camera.apps.get("people-counter").state == "failed"
    twin.clock.advance(10)
    info = camera.apps.get("people-counter")
    assert info.state == "running" and info.restart_count == 1


# Snapshot and restore ---------------------------------------------------------------------------------
async def test_a_world_snapshot_keeps_the_app_platform(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    await gateway.put("/api/v1/device-info", headers=auth, json={"device_name": "gate-7"})
    twin.clock.advance(10)
    before = usage(twin)
    apps_before = (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]
    snap = twin.world.snapshot()
    twin.world.reset()
    twin.clock.rebased()
    auth = {"Authorization": await gateway_token(gateway)}
    assert (await gateway.get("/api/v1/apps", headers=auth)).json()["data"] == []
    twin.world.restore(snap)
    twin.clock.rebased()
    auth = {"Authorization": await gateway_token(gateway)}
    assert (await gateway.get("/api/v1/apps", headers=auth)).json()["data"] == apps_before
    assert usage(twin) == before
    assert (await gateway.get("/api/v1/device-info", headers=auth)).json()["data"]["device_name"] == "gate-7"
    twin.clock.advance(6)
    logs = (await gateway.get("/api/v1/apps/people-counter/logs", headers=auth, params={"max_lines": 1})).text
    assert "detections=" in logs
    images = (await gateway.get("/api/v1/images", headers=auth)).json()["data"]["images"]
    assert [i["name"] for i in images] == ["people-counter:1.2.0"]
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/stop", headers=auth))
    assert resp.status_code == 200, resp.text
