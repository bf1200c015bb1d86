"""The AI runtime over a simulated camera: models on the data partition, accelerator memory
accounting on load/unload, apps using a model, statistics; and the failure paths."""

from __future__ import annotations

import httpx
import pytest

from tests.api.gateway.test_apps import MANIFEST, install, while_time_runs
from tests.conftest import gateway_token
from twin.camera.camera import Camera
from twin.camera.storage import DATA
from twin.camera.wing import cameras_of
from twin.serve import Twin

HEF = b"HEF\x00" + bytes(2_000_000)


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


@pytest.fixture
def camera(twin: Twin) -> Camera:
    return cameras_of(twin.world)["cam-01"]


async def upload(gateway: httpx.AsyncClient, auth: dict[str, str], name: str = "person.hef", **form: str):
    data = {"model_type": "detection", "threshold": "0.4", "max_detections": "50", **form}
    return await gateway.post(
        "/api/v1/ai/models/upload", headers=auth, files={"model": (name, HEF)}, data=data
    )


async def test_capabilities(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    data = (await gateway.get("/api/v1/ai/capabilities", headers=auth)).json()["data"]
    assert data["formats"] == [
        {"extension": ".hef", "mime_type": "application/octet-stream", "label": "Hailo HEF"}
    ]
    ids = [t["id"] for t in data["model_types"]]
    assert ids[0] == "detection" and "genai" in ids
    assert next(t for t in data["model_types"] if t["id"] == "keypoint")["aliases"] == [
        "landmarks",
        "landmark",
    ]


async def test_the_stock_model_is_listed_with_the_device_fields(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    models = (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    stock = models[0]
    assert stock["model_id"] == "yolov8n" and stock["status"] == "uploaded" and stock["version"] == ""
    assert stock["model_path"] == "/data/aipc/models/yolov8n.hef"
    assert "load_timestamp" not in stock  # zero: omitted like the device's proto-JSON


async def test_upload_load_unload_delete_moves_storage_and_accelerator_memory(
    gateway: httpx.AsyncClient, camera: Camera, auth: dict[str, str]
) -> None:
    data_before = camera.storage.used(DATA)
    stats = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
    memory_before = stats["used_memory_bytes"]

    resp = await upload(gateway, auth, model_id="person")
    assert resp.status_code == 200, resp.text
    up = resp.json()["data"]
    assert up["model_id"] == "person" and up["status"] == "uploaded" and up["size"] == len(HEF)
    assert up["model_path"] == "/data/aipc/models/person.hef" and len(up["file_hash"]) == 64
    assert camera.storage.used(DATA) == data_before + len(HEF)
    listed = (await gateway.get("/api/v1/files", headers=auth, params={"path": "/data/aipc/models"})).json()
    assert "person.hef" in [f["name"] for f in listed["data"]["files"]]

    loaded = await gateway.post("/api/v1/ai/models/person/load", headers=auth)
    assert loaded.json()["data"] == {"model_id": "person", "status": "loaded"}
    info = (await gateway.get("/api/v1/ai/models/person", headers=auth)).json()["data"]
    assert info["status"] == "loaded" and info["load_timestamp"] > 0
    stats = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
    assert stats["used_memory_bytes"] == memory_before + info["estimated_memory"]
    again = await gateway.post("/api/v1/ai/models/person/load", headers=auth)
    assert again.status_code == 400 and again.json()["code"] == 1001

    unloaded = await gateway.post("/api/v1/ai/models/person/unload", headers=auth)
    assert unloaded.json()["data"] == {"model_id": "person", "status": "uploaded"}
    stats = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
    assert stats["used_memory_bytes"] == memory_before
    twice = await gateway.post("/api/v1/ai/models/person/unload", headers=auth)
    assert twice.status_code == 400 and twice.json()["error"]["detail"] == "Model is not loaded"

    deleted = await gateway.delete("/api/v1/ai/models/person", headers=auth)
    assert deleted.status_code == 200
    assert camera.storage.used(DATA) == data_before
    gone = await gateway.get("/api/v1/ai/models/person", headers=auth)
    assert gone.status_code == 404 and gone.json()["code"] == 5000


async def test_the_accelerator_runs_out_of_memory(
    gateway: httpx.AsyncClient, camera: Camera, auth: dict[str, str]
) -> None:
    camera.ai.memory.put(camera.ai.memory.capacity - camera.ai.memory.level - 1_000)
    await upload(gateway, auth, model_id="person")
    resp = await gateway.post("/api/v1/ai/models/person/load", headers=auth)
    assert resp.status_code == 500 and resp.json()["code"] == 5001


async def test_a_model_used_by_a_running_app(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    await install(gateway, twin, auth, manifest=MANIFEST)
    await while_time_runs(twin, gateway.post("/api/v1/apps/people-counter/start", headers=auth))
    twin.clock.advance(10)
    info = (await gateway.get("/api/v1/ai/models/yolov8n", headers=auth)).json()["data"]
    apps = (await gateway.get("/api/v1/ai/models/yolov8n/apps", headers=auth)).json()["data"]["apps"]
    assert info["status"] == "loaded" and apps == ["people-counter"]
    refused = await gateway.post("/api/v1/ai/models/yolov8n/unload", headers=auth)
    assert refused.status_code == 500 and refused.json()["code"] == 4003
    stats = (await gateway.get("/api/v1/ai/stats", headers=auth)).json()["data"]
    row = stats["model_stats"][0]
    assert row["model_id"] == "yolov8n" and row["current_qps"] > 0 and row["total_inferences"] > 0
    deleted = (await gateway.delete("/api/v1/ai/models/yolov8n", headers=auth)).json()["data"]
    assert deleted["affected_apps"] == ["people-counter"]
    twin.clock.advance(10)
    logs = (await gateway.get("/api/v1/apps/people-counter/logs", headers=auth, params={"max_lines": 1})).text
    assert "heartbeat" in logs or "detections=0" in logs


async def test_scan_registers_a_model_copied_into_the_model_directory(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    assert (await gateway.get("/api/v1/ai/models", headers=auth)).status_code == 200  # the boot seed
    files = {"file": ("face.hef", HEF)}
    resp = await gateway.post(
        "/api/v1/files/upload", headers=auth, files=files, data={"path": "/data/aipc/models"}
    )
    assert resp.status_code == 200, resp.text
    found = (await gateway.post("/api/v1/ai/models/scan", headers=auth)).json()["data"]
    assert found == {"scanned": 2, "added": 1, "skipped": 1}
    again = (await gateway.post("/api/v1/ai/models/scan", headers=auth)).json()["data"]
    assert again == {"scanned": 2, "added": 0, "skipped": 2}
    listed = (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    assert [m["model_id"] for m in listed] == ["face", "yolov8n"]
    ghost = (await gateway.get("/api/v1/ai/models/ghost/apps", headers=auth)).json()["data"]
    assert ghost == {"model_id": "ghost", "apps": None}  # getAppsUsingModel: no apps, not an error
    reg = await gateway.post(
        "/api/v1/ai/models",
        headers=auth,
        json={"model_id": "face-v2", "model_path": "/data/aipc/models/face.hef"},
    )
    assert reg.status_code == 200 and reg.json()["data"]["source"] == "dynamic"


async def test_parse_keeps_the_file_but_registers_no_model(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await gateway.post("/api/v1/ai/models/parse", headers=auth, files={"model": ("person.hef", HEF)})
    data = resp.json()["data"]
    assert data["network_name"] == "person" and data["file_size"] == len(HEF)
    ids = [
        m["model_id"] for m in (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    ]
    assert ids == ["yolov8n"]


async def test_model_storage_keeps_100_mb_free(
    gateway: httpx.AsyncClient, camera: Camera, auth: dict[str, str]
) -> None:
    camera.storage.fill(DATA, "recordings", leave=50_000_000)
    resp = await upload(gateway, auth)
    assert resp.status_code == 507 and resp.json()["code"] == 8003


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("POST", "/api/v1/ai/models/upload", {"files": {"model": ("person.onnx", b"x")}}, 400, 5003),
        ("POST", "/api/v1/ai/models/upload", {"files": {"file": ("person.hef", b"x")}}, 400, 1001),
        ("POST", "/api/v1/ai/models/upload", {"json": {"model": "x"}}, 400, 1001),
        (
            "POST",
            "/api/v1/ai/models/upload",
            {"files": {"model": ("p.hef", b"x")}, "data": {"threshold": "high"}},
            400,
            1004,
        ),
        ("POST", "/api/v1/ai/models/parse", {"files": {"model": ("p.tflite", b"x")}}, 400, 5003),
        ("POST", "/api/v1/ai/models", {"json": {"model_id": "x"}}, 400, 1001),
        ("POST", "/api/v1/ai/models", {"json": {"model_id": "x", "model_path": "models/x.hef"}}, 400, 1004),
        ("POST", "/api/v1/ai/models", {"json": {"model_id": "x", "model_path": "/data/x.hef"}}, 404, 8000),
        ("POST", "/api/v1/ai/models", {"content": b"not json"}, 400, 1001),
        ("GET", "/api/v1/ai/models/ghost", {}, 404, 5000),
        ("DELETE", "/api/v1/ai/models/ghost", {}, 404, 5000),
        ("POST", "/api/v1/ai/models/ghost/load", {}, 404, 5000),
        ("POST", "/api/v1/ai/models/ghost/unload", {}, 404, 5000),
    ],
)
async def test_failures(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    method: str,
    path: str,
    kwargs: dict,
    status: int,
    code: int,
) -> None:
    resp = await gateway.request(method, path, headers=auth, **kwargs)
    assert resp.status_code == status, resp.text
    assert resp.json()["code"] == code


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/ai/capabilities"),
        ("GET", "/api/v1/ai/models"),
        ("POST", "/api/v1/ai/models"),
        ("POST", "/api/v1/ai/models/upload"),
        ("POST", "/api/v1/ai/models/scan"),
        ("POST", "/api/v1/ai/models/x/load"),
        ("GET", "/api/v1/ai/stats"),
    ],
)
async def test_ai_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


@pytest.mark.parametrize("model_id", ["../../../../tmp/X", "..%2f..%2fetc/x", "a/../../../x", "../models2/x"])
async def test_an_upload_id_never_leads_out_of_the_models_folder(
    gateway: httpx.AsyncClient, auth: dict[str, str], camera: Camera, model_id: str
) -> None:
    """The id names a file in the models folder: one that leads out is refused as the files API
    refuses the same path (403, code 8004), and nothing is written anywhere."""
    before = {p for p, _ in camera.fs.walk_files("/")}
    resp = await upload(gateway, auth, model_id=model_id)
    assert resp.status_code == 403 and resp.json()["code"] == 8004
    assert not camera.fs.exists("/tmp/X") and not camera.fs.exists("/data/aipc/tmp/X.hef")
    models = (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    assert model_id not in {m["model_id"] for m in models}
    assert {p for p, _ in camera.fs.walk_files("/")} == before
