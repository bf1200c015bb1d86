"""Requests exactly as the camera's web console sends them (``web/src/services/api/*.ts``), with
the answers it reads: each test is a console write that failed against the twin."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.api.test_gateway_apps import while_time_runs
from tests.conftest import gateway_token
from twin.serve import Twin

ASSETS = Path(__file__).resolve().parents[2] / "assets"


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
