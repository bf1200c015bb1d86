"""The development workbench: a project's files on the camera's file system, a build on the world
clock producing an image that installs and runs through the app pipeline; failure paths."""

from __future__ import annotations

import httpx
import pytest

from tests.api.test_gateway_apps import while_time_runs
from tests.conftest import gateway_token
from twin.serve import Twin


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def test_project_to_running_app(gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]) -> None:
    images = (await gateway.get("/api/v1/dev/base-images", headers=auth)).json()["data"]["images"]
    assert images[0]["name"] == "aipc/python:3.11-slim"
    made = await gateway.post("/api/v1/dev/projects", headers=auth, json={"name": "line-counter"})
    assert made.status_code == 200, made.text
    pid = made.json()["data"]["id"]
    src = {"files": {"main.py": "print('hello')\n", "lib/util.py": "X = 1\n"}}
    assert (await gateway.post(f"/api/v1/dev/projects/{pid}/source", headers=auth, json=src)).json()["data"][
        "count"
    ] == 2
    up = await gateway.post(
        f"/api/v1/dev/projects/{pid}/upload",
        headers=auth,
        files={"file": ("cfg.json", b"{}")},
        data={"path": "conf"},
    )
    assert up.json()["data"] == {"path": "conf/cfg.json", "size": 2}
    listing = (await gateway.get(f"/api/v1/dev/projects/{pid}/files", headers=auth)).json()["data"]["files"]
    assert [f["path"] for f in listing] == ["conf/cfg.json", "lib/util.py", "main.py"]
    on_device = (
        await gateway.get("/api/v1/files", headers=auth, params={"path": f"/data/aipc/dev/{pid}"})
    ).json()
    assert {f["name"] for f in on_device["data"]["files"]} == {"conf", "lib", "main.py"}
    content = (
        await gateway.get(f"/api/v1/dev/projects/{pid}/file", headers=auth, params={"path": "main.py"})
    ).json()
    assert content["data"]["content"] == "print('hello')\n"

    build = (
        await gateway.post(f"/api/v1/dev/projects/{pid}/build", headers=auth, json={"version": "1.0.0"})
    ).json()
    assert build["data"]["status"] == "building"
    twin.clock.advance(60)
    done = (await gateway.get(f"/api/v1/dev/projects/{pid}/builds", headers=auth)).json()["data"]["builds"][0]
    assert done["status"] == "success" and done["image"] == "line-counter:1.0.0", done
    body = {"manifest_path": done["manifest_path"], "image_path": done["image_path"]}
    task_id = (await gateway.post("/api/v1/apps/install-package", headers=auth, json=body)).json()["data"][
        "task_id"
    ]
    twin.clock.advance(30)
    task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
    assert task["phase"] == "complete", task
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/line-counter/start", headers=auth))
    assert resp.status_code == 200, resp.text

    assert (await gateway.delete(f"/api/v1/dev/projects/{pid}", headers=auth)).status_code == 200
    gone = await gateway.get(f"/api/v1/dev/projects/{pid}", headers=auth)
    assert gone.status_code == 404


async def test_a_build_with_a_mismatching_app_yaml_fails(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    pid = (await gateway.post("/api/v1/dev/projects", headers=auth, json={"name": "demo"})).json()["data"][
        "id"
    ]
    manifest = "apiVersion: v1\nkind: Application\nmetadata: {id: demo, name: Demo, version: '1'}\n"
    manifest += "spec: {image: other:1}\n"
    await gateway.post(
        f"/api/v1/dev/projects/{pid}/file", headers=auth, json={"path": "app.yaml", "content": manifest}
    )
    await gateway.post(f"/api/v1/dev/projects/{pid}/build", headers=auth)
    twin.clock.advance(60)
    build = (await gateway.get(f"/api/v1/dev/projects/{pid}/builds", headers=auth)).json()["data"]["builds"][
        0
    ]
    assert build["status"] == "failed" and "other:1" in build["error"]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("POST", "/api/v1/dev/projects", {"json": {}}, 400, 1001),
        ("POST", "/api/v1/dev/projects", {"json": {"name": "Bad Name"}}, 400, 1004),
        ("POST", "/api/v1/dev/projects", {"json": {"name": "x", "base_image": "ubuntu"}}, 400, 1004),
        ("GET", "/api/v1/dev/projects/ghost", {}, 404, 4000),
        ("DELETE", "/api/v1/dev/projects/ghost", {}, 404, 4000),
        ("POST", "/api/v1/dev/projects/ghost/build", {}, 404, 4000),
        ("GET", "/api/v1/dev/projects/ghost/files", {}, 404, 4000),
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
    assert (resp.status_code, resp.json()["code"]) == (status, code), resp.text


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "a/../../b", ""])
async def test_project_paths_stay_inside_the_project(
    gateway: httpx.AsyncClient, auth: dict[str, str], path: str
) -> None:
    pid = (await gateway.post("/api/v1/dev/projects", headers=auth, json={"name": "demo"})).json()["data"][
        "id"
    ]
    resp = await gateway.post(
        f"/api/v1/dev/projects/{pid}/file", headers=auth, json={"path": path, "content": "x"}
    )
    assert resp.status_code == 400
    resp = await gateway.get(f"/api/v1/dev/projects/{pid}/file", headers=auth, params={"path": path})
    assert resp.status_code == 400


@pytest.mark.parametrize(
    "path", ["/api/v1/dev/base-images", "/api/v1/dev/projects", "/api/v1/dev/projects/x/builds"]
)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, path: str) -> None:
    resp = await gateway.get(path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000
