"""One test per row of the spec's "Known failure cases" table: each failure happens in the world
for its natural reason (or is provoked through the method the control plane uses), and the client
meets the documented symptom through the gateway API; where the remedy is in reach, it works."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.api.gateway.test_apps import MANIFEST, install, while_time_runs
from tests.conftest import gateway_token
from twin.camera.camera import Camera
from twin.camera.storage import DATA, ROOT
from twin.camera.wing import cameras_of
from twin.serve import Twin

START = "/api/v1/apps/people-counter/start"
LOGS = "/api/v1/apps/people-counter/logs"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


@pytest.fixture
def camera(twin: Twin) -> Camera:
    return cameras_of(twin.world)["cam-01"]


async def app_logs(gateway: httpx.AsyncClient, auth: dict[str, str]) -> list[dict]:
    resp = await gateway.get(LOGS, headers=auth, params={"max_lines": 200})
    assert resp.status_code == 200
    return [json.loads(line) for line in resp.text.splitlines()]


def with_env(manifest: str, **env: str) -> str:
    extra = "".join(f"    - name: {k}\n      value: {v}\n" for k, v in env.items())
    return manifest.replace("      value: main\n", "      value: main\n" + extra)


# app start | deadline-exceeded error | first load of an image exceeds the 10-s gRPC timeout --------
async def test_first_start_of_a_large_image_exceeds_the_deadline_and_the_second_works(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    big = b"\x1f\x8b" + bytes(46_000_000)  # unpacks to ~120 MB: ~10 s on the device's eMMC
    task = await install(gateway, twin, auth, image=big)
    assert task["phase"] == "complete", task
    first = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert first.status_code == 500
    assert first.json()["code"] == 3002
    assert "DeadlineExceeded" in first.json()["error"]["detail"]
    second = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert second.status_code == 200, second.text
    info = (await gateway.get("/api/v1/apps/people-counter", headers=auth)).json()["data"]
    assert info["state"] == "running"


async def test_a_slow_emmc_provokes_the_deadline_for_a_small_image(
    gateway: httpx.AsyncClient, twin: Twin, camera: Camera, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    camera.containers.slow_storage(1_000)
    first = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert first.status_code == 500 and "DeadlineExceeded" in first.json()["error"]["detail"]
    twin.clock.advance(60)
    second = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert second.status_code == 200, second.text


# app start | parent snapshot or no-space error | container storage on the small root partition -----
async def test_container_storage_on_root_runs_out_of_space_and_data_is_the_remedy(
    gateway: httpx.AsyncClient, twin: Twin, camera: Camera, auth: dict[str, str]
) -> None:
    runtime = camera.containers
    assert runtime.storage_partition == ROOT  # /var/lib/containerd, as the device ships
    runtime.fill_storage(leave=60_000_000)  # earlier images take most of root
    task = await install(gateway, twin, auth, image=b"\x1f\x8b" + bytes(20_000_000))
    assert task["phase"] == "complete", task
    first = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert first.status_code == 500 and first.json()["code"] == 3002
    assert "no space left on device" in first.json()["error"]["detail"]
    second = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert second.status_code == 500
    assert "parent snapshot" in second.json()["error"]["detail"]
    runtime.move_storage(DATA)
    third = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert third.status_code == 200, third.text
    assert camera.storage.held("snapshot:people-counter:1.2.0", DATA) > 0


# app start | mount failure, no such file | a declared volume's host directory is missing ------------
async def test_a_missing_volume_directory_fails_the_mount_until_it_is_created(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    manifest = MANIFEST.replace("host: /data/aipc/apps\n", "host: /data/aipc/people-counter/db\n")
    await install(gateway, twin, auth, manifest=manifest)
    first = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert first.status_code == 500
    detail = first.json()["error"]["detail"]
    assert "stat /data/aipc/people-counter/db: no such file or directory" in detail and "mount" in detail
    made = await gateway.post(
        "/api/v1/files/mkdir", headers=auth, json={"path": "/data/aipc/people-counter/db"}
    )
    assert made.status_code == 200, made.text
    second = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert second.status_code == 200, second.text


# upload-image | no space left | root partition filled by stale logs or core dumps ------------------
@pytest.mark.parametrize("cause", ["stale logs", "core dumps"])
async def test_a_root_full_of_stale_logs_or_core_dumps_refuses_the_upload(
    gateway: httpx.AsyncClient, camera: Camera, auth: dict[str, str], cause: str
) -> None:
    if cause == "stale logs":
        camera.storage.fill(ROOT, "logs:stale")
    else:
        camera.containers.write_core_dump(4 * 10**9, "core.camera-daemon.523")
    files = {"file": ("people-counter.tar", b"layer" * 1000)}
    resp = await gateway.post("/api/v1/apps/upload-image", headers=auth, files=files)
    assert resp.status_code == 507
    assert resp.json()["code"] == 8003 and "no space left on device" in resp.json()["error"]["detail"]
    disk = (await gateway.get("/api/v1/monitor/disk", headers=auth)).json()["data"]["partitions"]
    assert next(p for p in disk if p["mountpoint"] == "/")["free"] == 0
    camera.storage.free_prefix("logs:" if cause == "stale logs" else "coredump:")
    resp = await gateway.post("/api/v1/apps/upload-image", headers=auth, files=files)
    assert resp.status_code == 200, resp.text


# inference subscription | NOT_FOUND, model not found | names that do not match the device ----------
@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (MANIFEST.replace("models: [yolov8n]", "models: [yolov5s]"), "Model not found: yolov5s"),
        (MANIFEST.replace("      value: main\n", "      value: stream0\n"), "stream not found: stream0"),
    ],
    ids=["model", "stream"],
)
async def test_a_model_or_stream_name_that_does_not_match_is_not_found(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str], manifest: str, expected: str
) -> None:
    await install(gateway, twin, auth, manifest=manifest)
    resp = await while_time_runs(twin, gateway.post(START, headers=auth))
    assert resp.status_code == 200, resp.text
    twin.clock.advance(6)
    errors = [line["message"] for line in await app_logs(gateway, auth) if line["level"] == "error"]
    assert any("code = NotFound" in m and expected in m for m in errors), errors
    names = [
        m["name"] for m in (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    ]
    assert names == ["yolov8n"]  # the real names a client should have asked for


# app log parse | JSON parse failure | the logs are newline-delimited JSON ---------------------------
async def test_app_logs_are_ndjson_not_one_json_document(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth)
    await while_time_runs(twin, gateway.post(START, headers=auth))
    twin.clock.advance(20)
    resp = await gateway.get(LOGS, headers=auth, params={"max_lines": 3})
    with pytest.raises(json.JSONDecodeError):
        resp.json()
    assert len([json.loads(line) for line in resp.text.splitlines()]) == 3


# old single-file upload | JSON parse error | the endpoint's usage is deprecated ---------------------
async def test_the_old_single_file_upload_gets_a_json_parse_error(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    files = {"file": ("people-counter.tar.gz", b"\x1f\x8b" + b"x" * 100)}
    resp = await gateway.post("/api/v1/apps", headers=auth, files=files)
    assert resp.status_code == 400
    body = resp.json()
    assert body["code"] == 1002 and body["message"] == "Invalid JSON format"
    assert body["error"]["detail"] == "invalid character '-' looking for beginning of value"


# app run | simulation mode, detections always 0 | no video: the camera service is not running ------
@pytest.mark.parametrize("how", ["process killed", "provoked"])
async def test_without_the_camera_service_apps_run_in_simulation_mode(
    gateway: httpx.AsyncClient, twin: Twin, camera: Camera, auth: dict[str, str], how: str
) -> None:
    if how == "provoked":
        camera.ai.stop_camera_service()
    else:
        procs = (
            await gateway.get("/api/v1/processes", headers=auth, params={"search": "camera-daemon"})
        ).json()
        pid = procs["data"]["processes"][0]["pid"]
        killed = await gateway.post(
            f"/api/v1/processes/{pid}/kill", headers=auth, params={"signal": "SIGKILL"}
        )
        assert killed.json()["data"] == {"pid": pid, "signal": "SIGKILL", "status": "sent"}
    await install(gateway, twin, auth)
    await while_time_runs(twin, gateway.post(START, headers=auth))
    twin.clock.advance(30)
    messages = [line["message"] for line in await app_logs(gateway, auth)]
    assert any("simulation mode" in m for m in messages)
    frames = [m for m in messages if m.startswith("frame ")]
    assert len(frames) >= 5 and all("detections=0" in m for m in frames)
    search = (await gateway.get("/api/v1/processes", headers=auth, params={"search": "camera-daemon"})).json()
    assert search["data"]["total"] == 0


# event publish | failure | event bus not running, or topic not app/<app_id>/<event> ----------------
async def test_publish_fails_while_the_bus_is_down_and_works_once_it_is_back(
    gateway: httpx.AsyncClient, camera: Camera, auth: dict[str, str]
) -> None:
    event = {"topic": "app/people-counter/alarm", "payload": {"zone": 1}}
    ok = await gateway.post("/api/v1/events/publish", headers=auth, json=event)
    assert ok.status_code == 200 and ok.json()["data"]["status"] == {"success": True}
    pid = next(p["pid"] for p in camera.monitor.processes("pid", 500, "event-bus")["processes"])  # type: ignore[index]
    await gateway.post(f"/api/v1/processes/{pid}/kill", headers=auth)
    down = await gateway.post("/api/v1/events/publish", headers=auth, json=event)
    assert down.status_code == 503 and down.json()["code"] == 3000
    camera.events.start()
    assert (await gateway.post("/api/v1/events/publish", headers=auth, json=event)).status_code == 200


@pytest.mark.parametrize(
    "topic", ["people-counter/alarm", "app/people-counter", "app//alarm", "inference/x/main"]
)
async def test_publish_refuses_a_topic_outside_the_app_format(
    gateway: httpx.AsyncClient, auth: dict[str, str], topic: str
) -> None:
    resp = await gateway.post("/api/v1/events/publish", headers=auth, json={"topic": topic, "payload": {}})
    assert resp.status_code == 400 and resp.json()["code"] == 1001
    assert "app/<app_id>/<event>" in resp.json()["error"]["detail"]


# event subscribe | failure | the topic permission is not declared (or no reconnect after a drop) ---
PLUGIN = """\
  plugin:
    capabilities:
      - id: counter-feed
        version: 1.0.0
        transport: event
        topics:
          subscribe: ["app/door-sensor/opened"]
"""


async def test_a_manifest_subscribing_an_undeclared_topic_is_refused(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    manifest = MANIFEST.replace("  resources:\n", PLUGIN + "  resources:\n")
    resp = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", manifest)}
    )
    assert resp.status_code == 400 and resp.json()["code"] == 1001
    detail = resp.json()["error"]["detail"]
    assert 'subscribes topic "app/door-sensor/opened" not covered by permissions.events.subscribe' in detail
    declared = manifest.replace(
        'subscribe: ["app/people-counter/*"]', 'subscribe: ["app/people-counter/*", "app/*/opened"]'
    )
    resp = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", declared)}
    )
    assert resp.status_code == 200, resp.text


async def test_a_running_app_cannot_subscribe_beyond_its_manifest(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    manifest = with_env(MANIFEST, SUBSCRIBE_TOPICS='"app/people-counter/reset,app/door-sensor/opened"')
    await install(gateway, twin, auth, manifest=manifest)
    await while_time_runs(twin, gateway.post(START, headers=auth))
    messages = [line["message"] for line in await app_logs(gateway, auth)]
    assert any("event subscribe app/door-sensor/opened failed: permission denied" in m for m in messages)
    topics = (await gateway.get("/api/v1/events/topics", headers=auth)).json()["data"]["topics"]
    assert {"topic": "app/people-counter/reset", "subscriber_count": 1} in topics
    assert all(t["topic"] != "app/door-sensor/opened" for t in topics)
