"""Requests exactly as the camera's web console sends them (``web/src/services/api/*.ts``), with
the answers it reads: each test is a console write that failed against the twin."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.api.gateway.test_apps import while_time_runs
from tests.conftest import gateway_token
from twin.camera.wing import cameras_of
from twin.serve import Twin

ASSETS = Path(__file__).resolve().parents[3] / "assets"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


def docker_save(tag: str) -> bytes:
    """A plain tar as ``docker save`` writes it: a top-level manifest.json naming the image."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as archive:
        for name, body in (
            ("manifest.json", json.dumps([{"Config": "c.json", "RepoTags": [tag], "Layers": []}]).encode()),
            ("c.json", b"{}"),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return out.getvalue()


# ImageUpload.tsx: needs data.path, names the image data.image || data.filename --------------
async def test_upload_image_answers_the_path_and_the_archives_image_name(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    body = docker_save("door-watch:2.0.1")
    resp = await gateway.post(
        "/api/v1/apps/upload-image", headers=auth, files={"file": ("door-watch.tar", body)}
    )
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["path"].endswith("door-watch.tar")
    assert data["image"] == "door-watch:2.0.1"
    assert (data["filename"], data["size"]) == ("door-watch.tar", len(body))


async def test_a_gzipped_or_foreign_archive_has_no_image_name(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    """The device reads the upload as a plain tar: a .tar.gz (the sample package) gives ``""``."""
    sample = ASSETS / "apps" / "object-detector" / "object-detector-1.0.0.tar.gz"
    for name, body in ((sample.name, sample.read_bytes()), ("junk.tar", b"not a tar" * 50)):
        resp = await gateway.post("/api/v1/apps/upload-image", headers=auth, files={"file": (name, body)})
        assert resp.status_code == 200, resp.text
        assert resp.json()["data"]["image"] == ""
        assert resp.json()["data"]["path"]


async def test_the_console_installs_the_sample_package_with_the_answered_path(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    """ImportAppDialog's package mode: upload-manifest, upload-image, install-package with
    ``image_path`` = the upload's ``path``."""
    app_dir = ASSETS / "apps" / "object-detector"
    await gateway.delete("/api/v1/apps/object-detector", headers=auth)
    manifest = await gateway.post(
        "/api/v1/apps/upload-manifest",
        headers=auth,
        files={"file": ("app.yaml", (app_dir / "app.yaml").read_bytes())},
    )
    image = await gateway.post(
        "/api/v1/apps/upload-image",
        headers=auth,
        files={
            "file": ("object-detector-1.0.0.tar.gz", (app_dir / "object-detector-1.0.0.tar.gz").read_bytes())
        },
    )
    body = {
        "manifest_path": manifest.json()["data"]["manifest_path"],
        "image_path": image.json()["data"]["path"],
    }
    resp = await gateway.post("/api/v1/apps/install-package", headers=auth, json=body)
    assert resp.status_code == 200, resp.text
    task_id = resp.json()["data"]["task_id"]
    for _ in range(200):
        task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
        if task["phase"] in ("complete", "error"):
            break
        twin.clock.advance(0.2)
    assert task["phase"] == "complete", task
    listed = await while_time_runs(twin, gateway.get("/api/v1/apps", headers=auth))
    assert "object-detector" in {a["id"] for a in listed.json()["data"]}


async def test_upload_image_without_a_session_is_refused(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.post("/api/v1/apps/upload-image", files={"file": ("a.tar", docker_save("a:1"))})
    assert resp.status_code == 401
    assert resp.json()["code"] == 2000


# importModelDialog.tsx: parse, then register by file_hash, then load --------------------------
HEF = b"HEF\x00" + bytes(8_192)


async def test_parse_answers_parse_models_fields_and_register_takes_its_hash(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    resp = await gateway.post(
        "/api/v1/ai/models/parse", headers=auth, files={"model": ("person-detector.hef", HEF)}
    )
    assert resp.status_code == 200, resp.text
    parsed = resp.json()["data"]
    assert set(parsed) == {
        "file_hash", "file_path", "file_size", "filename", "network_name", "input_width",
        "input_height", "vstream_info", "suggested_type", "format",
    }  # fmt: skip
    assert parsed["file_size"] == len(HEF) and parsed["format"] == ".hef"
    assert parsed["file_path"] == f"/data/aipc/models/blobs/{parsed['file_hash']}.hef"
    assert parsed["suggested_type"] == "detection"  # GuessModelType: "det"
    assert json.loads(parsed["vstream_info"])["network_name"] == "person-detector"  # a JSON string
    assert (parsed["input_width"], parsed["input_height"]) == (640, 640)

    body = {  # handleRegister's body
        "file_hash": parsed["file_hash"],
        "model_id": "person-detector",
        "model_type": parsed["suggested_type"],
        "model_variant": "",
        "config": {"threshold": 0.4, "max_detections": 50},
        "file_size": parsed["file_size"],
        "network_name": parsed["network_name"],
        "vstream_info": parsed["vstream_info"],
        "input_width": parsed["input_width"],
        "input_height": parsed["input_height"],
    }
    reg = await gateway.post("/api/v1/ai/models", headers=auth, json=body)
    assert reg.status_code == 200, reg.text
    assert reg.json()["data"] == {
        "model_id": "person-detector",
        "model_path": parsed["file_path"],
        "status": "uploaded",
    }
    models = (await gateway.get("/api/v1/ai/models", headers=auth)).json()["data"]["models"]
    mine = next(m for m in models if m["model_id"] == "person-detector")
    assert (mine["status"], mine["threshold"], mine["max_detections"]) == ("uploaded", 0.4, 50)
    load = await while_time_runs(twin, gateway.post("/api/v1/ai/models/person-detector/load", headers=auth))
    assert load.status_code == 200, load.text
    again = await gateway.post("/api/v1/ai/models", headers=auth, json=body)
    assert again.json()["data"]["model_id"] == "person-detector"  # an id already registered


async def test_parse_stores_one_blob_per_content(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    paths = set()
    for name in ("a.hef", "b.hef"):
        resp = await gateway.post("/api/v1/ai/models/parse", headers=auth, files={"model": (name, HEF)})
        paths.add(resp.json()["data"]["file_path"])
    (path,) = paths
    assert cameras_of(twin.world)["cam-01"].fs.exists(path)


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        ({"file_hash": "0" * 64, "model_id": "x"}, "Model file not found. Please re-parse the model first."),
        ({"file_hash": "KNOWN"}, "model_id is required"),
        ({"file_hash": "KNOWN", "model_id": "x", "model_type": "weather"}, "Unsupported model_type: weather"),
        ({"model_id": "x"}, None),
    ],
)
async def test_register_failures(
    gateway: httpx.AsyncClient, auth: dict[str, str], body: dict, detail: str | None
) -> None:
    parsed = await gateway.post("/api/v1/ai/models/parse", headers=auth, files={"model": ("p.hef", HEF)})
    if body.get("file_hash") == "KNOWN":
        body = body | {"file_hash": parsed.json()["data"]["file_hash"]}
    resp = await gateway.post("/api/v1/ai/models", headers=auth, json=body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["code"] == 1001
    if detail is not None:
        assert detail in json.dumps(resp.json())


async def test_parse_refuses_other_formats_and_a_missing_file(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    wrong = await gateway.post("/api/v1/ai/models/parse", headers=auth, files={"model": ("p.onnx", b"x")})
    assert wrong.status_code == 400 and wrong.json()["code"] == 5003
    missing = await gateway.post("/api/v1/ai/models/parse", headers=auth, files={"file": ("p.hef", HEF)})
    assert missing.status_code == 400 and missing.json()["code"] == 1001


# ImportAppDialog.tsx: the package source is ready once upload-manifest answered data.path -----
async def test_upload_manifest_answers_the_path_and_the_metadata(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    text = (ASSETS / "apps" / "object-detector" / "app.yaml").read_bytes()
    resp = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", text)}
    )
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["path"].endswith("app.yaml")
    assert data["metadata"] == {
        "id": "object-detector",
        "name": "Object detector",
        "version": "1.0.0",
        "description": "Detects people and vehicles on the main stream and publishes them as events",
    }


async def test_upload_manifest_failures(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    missing = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"other": ("app.yaml", b"")}
    )
    assert missing.status_code == 400 and missing.json()["code"] == 1001
    no_id = await gateway.post(
        "/api/v1/apps/upload-manifest", headers=auth, files={"file": ("app.yaml", b"metadata: {name: x}\n")}
    )
    assert no_id.status_code == 400
    refused = await gateway.post("/api/v1/apps/upload-manifest", files={"file": ("app.yaml", b"")})
    assert refused.status_code == 401


# The apps page polls a card's stats (silently) right after an uninstall -----------------------
async def test_stats_of_an_app_that_is_gone_is_app_not_found(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await gateway.get("/api/v1/apps/ghost/stats", headers=auth)
    assert resp.status_code == 404, resp.text
    body = resp.json()
    assert body["code"] == 6000
    assert "app not found: ghost" in json.dumps(body)
    info = await gateway.get("/api/v1/apps/ghost", headers=auth)  # GetApp: every error is 3002
    assert (info.status_code, info.json()["code"]) == (500, 3002)
