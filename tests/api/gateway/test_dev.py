"""The development workbench (``/api/v1/dev/*``): a project's files on the camera's file system
(single uploads, a source archive, read and save), a build on the world clock producing an image
that installs and runs through the app pipeline; the swagger's shapes; failure paths."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.api.gateway.test_apps import usage, while_time_runs
from tests.conftest import SCENARIOS, gateway_token
from twin.serve import Twin, build
from twin.settings import Settings

DEV = "/api/v1/dev"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def new_project(gateway: httpx.AsyncClient, auth: dict[str, str], key: str = "demo", **extra) -> int:
    made = await gateway.post(
        f"{DEV}/projects", headers=auth, json={"name": key.title(), "key": key, **extra}
    )
    assert made.status_code == 200, made.text
    return made.json()["data"]["id"]


def tar_gz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def zip_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


async def test_project_to_installed_running_app(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    before = usage(twin)
    images = (await gateway.get(f"{DEV}/base-images", headers=auth)).json()["data"]["images"]
    assert images[0]["image"] == "aipc/python:3.11-slim" and images[0]["id"] == 1
    assert {"name", "tag", "language", "sdk_version", "build_cmd", "entry_point"} <= set(images[0])
    pid = await new_project(gateway, auth, "line-counter", description="counts")

    archive = tar_gz({"./main.py": b"print('hello')\n", "lib/util.py": b"X = 1\n"})
    src = await gateway.post(
        f"{DEV}/projects/{pid}/source", headers=auth, files={"file": ("src.tar.gz", archive)}
    )
    assert src.status_code == 200 and src.json()["data"]["files"] == 2, src.text
    up = await gateway.post(
        f"{DEV}/projects/{pid}/upload",
        headers=auth,
        files={"file": ("cfg.json", b"{}")},
        data={"path": "conf"},
    )
    assert up.json()["data"] == {"name": "cfg.json", "path": "conf/cfg.json", "size": 2}
    listing = (await gateway.get(f"{DEV}/projects/{pid}/files", headers=auth)).json()["data"]["files"]
    assert [(f["name"], f["is_dir"]) for f in listing] == [("conf", True), ("lib", True), ("main.py", False)]
    sub = (await gateway.get(f"{DEV}/projects/{pid}/files", headers=auth, params={"path": "lib"})).json()
    assert sub["data"]["files"] == [{"name": "util.py", "path": "lib/util.py", "is_dir": False, "size": 6}]
    on_device = (
        await gateway.get("/api/v1/files", headers=auth, params={"path": "/data/aipc/dev/line-counter"})
    ).json()
    assert {f["name"] for f in on_device["data"]["files"]} == {"conf", "lib", "main.py"}
    saved = await gateway.post(
        f"{DEV}/projects/{pid}/file", headers=auth, json={"path": "main.py", "content": "print('hi')\n"}
    )
    assert saved.status_code == 200
    content = (
        await gateway.get(f"{DEV}/projects/{pid}/file", headers=auth, params={"path": "main.py"})
    ).json()
    assert content["data"]["content"] == "print('hi')\n" and content["data"]["path"] == "main.py"

    detail = (await gateway.get(f"{DEV}/projects/{pid}", headers=auth)).json()["data"]
    assert detail["project"]["key"] == "line-counter" and detail["base_image"]["id"] == 1
    assert detail["project"]["source_path"] == "/data/aipc/dev/line-counter"

    started = await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth, json={"version": "1.0.0"})
    build = started.json()["data"]["build"]
    assert build["status"] == "building" and build["project_id"] == pid and isinstance(build["id"], int)
    again = await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth)
    assert again.status_code == 409, again.text
    twin.clock.advance(60)
    done = (await gateway.get(f"{DEV}/projects/{pid}/builds", headers=auth)).json()["data"]["builds"][0]
    assert done["status"] == "success" and done["image"] == "line-counter:1.0.0", done
    assert done["image_size"] > 0 and "FROM aipc/python:3.11-slim" in done["log"]
    project = (await gateway.get(f"{DEV}/projects/{pid}", headers=auth)).json()["data"]["project"]
    assert project["status"] == "built" and project["build_image"] == "line-counter:1.0.0"

    body = {"manifest_path": done["manifest_path"], "image_path": done["image_path"]}
    task_id = (await gateway.post("/api/v1/apps/install-package", headers=auth, json=body)).json()["data"][
        "task_id"
    ]
    twin.clock.advance(30)
    task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
    assert task["phase"] == "complete", task
    apps = (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]
    assert "line-counter" in str(apps)
    assert usage(twin)["data"] > before["data"]
    resp = await while_time_runs(twin, gateway.post("/api/v1/apps/line-counter/start", headers=auth))
    assert resp.status_code == 200, resp.text

    assert (await gateway.delete(f"{DEV}/projects/{pid}", headers=auth)).status_code == 200
    gone = await gateway.get(f"{DEV}/projects/{pid}", headers=auth)
    assert (gone.status_code, gone.json()["code"]) == (404, 4000)
    assert (await gateway.get(f"{DEV}/projects", headers=auth)).json()["data"]["projects"] == []


async def test_update_project_and_its_app_config_drives_the_build(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    pid = await new_project(gateway, auth, "demo")
    manifest = "apiVersion: v1\nkind: Application\nmetadata: {id: demo, name: Demo, version: '2'}\n"
    manifest += "spec: {image: 'demo:2.0.0'}\n"
    changed = await gateway.put(
        f"{DEV}/projects/{pid}",
        headers=auth,
        json={"name": "Demo app", "base_image_id": 3, "entry_file": "index.js", "app_config": manifest},
    )
    project = changed.json()["data"]
    assert (project["name"], project["base_image_id"], project["entry_file"]) == ("Demo app", 3, "index.js")
    await gateway.post(f"{DEV}/projects/{pid}/file", headers=auth, json={"path": "index.js", "content": "1"})
    await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth, json={"version": "2.0.0"})
    twin.clock.advance(60)
    build = (await gateway.get(f"{DEV}/projects/{pid}/builds", headers=auth)).json()["data"]["builds"][0]
    assert build["status"] == "success", build
    assert "FROM aipc/node:20-alpine" in build["log"]


async def test_a_build_with_a_mismatching_app_yaml_fails(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    pid = await new_project(gateway, auth, "demo")
    manifest = "apiVersion: v1\nkind: Application\nmetadata: {id: demo, name: Demo, version: '1'}\n"
    manifest += "spec: {image: other:1}\n"
    await gateway.post(
        f"{DEV}/projects/{pid}/file", headers=auth, json={"path": "app.yaml", "content": manifest}
    )
    await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth)
    twin.clock.advance(60)
    build = (await gateway.get(f"{DEV}/projects/{pid}/builds", headers=auth)).json()["data"]["builds"][0]
    assert build["status"] == "failed" and "other:1" in build["log"]
    project = (await gateway.get(f"{DEV}/projects/{pid}", headers=auth)).json()["data"]["project"]
    assert project["status"] == "failed" and "other:1" in project["message"]


async def test_a_zip_source_archive(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    pid = await new_project(gateway, auth)
    archive = zip_of({"app/": b"", "app/main.py": b"print(1)\n"})
    resp = await gateway.post(
        f"{DEV}/projects/{pid}/source", headers=auth, files={"file": ("s.zip", archive)}
    )
    assert resp.json()["data"]["files"] == 1
    got = await gateway.get(f"{DEV}/projects/{pid}/file", headers=auth, params={"path": "app/main.py"})
    assert got.json()["data"]["content"] == "print(1)\n"


def _symlink_tar() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo("link")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(info)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "archive"),
    [
        ("escape.tar.gz", tar_gz({"ok.py": b"1", "../../etc/cron.d/x": b"boom"})),
        ("abs.tar.gz", tar_gz({"/etc/passwd": b"root"})),
        ("escape.zip", zip_of({"../x.py": b"1"})),
        ("link.tar", _symlink_tar()),
        ("junk.tar.gz", b"not an archive at all"),
        ("empty.zip", zip_of({})),
    ],
)
async def test_bad_source_archives_are_refused_and_nothing_is_written(
    gateway: httpx.AsyncClient, auth: dict[str, str], name: str, archive: bytes
) -> None:
    pid = await new_project(gateway, auth)
    resp = await gateway.post(f"{DEV}/projects/{pid}/source", headers=auth, files={"file": (name, archive)})
    assert resp.status_code == 400 and resp.json()["code"] in (1001, 1004), resp.text
    assert (await gateway.get(f"{DEV}/projects/{pid}/files", headers=auth)).json()["data"]["files"] == []


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("POST", "/projects", {"json": {}}, 400, 1001),
        ("POST", "/projects", {"json": {"name": "x"}}, 400, 1001),
        ("POST", "/projects", {"json": {"name": 3, "key": "x"}}, 400, 1001),
        ("POST", "/projects", {"content": b"not json"}, 400, 1001),
        ("POST", "/projects", {"json": {"name": "x", "key": "Bad Key"}}, 400, 1004),
        ("POST", "/projects", {"json": {"name": "x", "key": "x", "base_image_id": 99}}, 400, 1004),
        ("POST", "/projects", {"json": {"name": "x", "key": "x", "base_image_id": "1"}}, 400, 1001),
        ("GET", "/projects/99", {}, 404, 4000),
        ("GET", "/projects/ghost", {}, 400, 1001),
        ("PUT", "/projects/99", {"json": {}}, 404, 4000),
        ("DELETE", "/projects/99", {}, 404, 4000),
        ("POST", "/projects/99/build", {}, 404, 4000),
        ("GET", "/projects/99/builds", {}, 404, 4000),
        ("GET", "/projects/99/files", {}, 404, 4000),
        ("GET", "/projects/99/file", {"params": {"path": "a"}}, 404, 4000),
        ("POST", "/projects/99/file", {"json": {"path": "a", "content": ""}}, 404, 4000),
        ("POST", "/projects/99/upload", {"files": {"file": ("a", b"1")}}, 404, 4000),
        ("POST", "/projects/99/source", {"files": {"file": ("a.zip", zip_of({"a": b"1"}))}}, 404, 4000),
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
    resp = await gateway.request(method, DEV + path, headers=auth, **kwargs)
    assert (resp.status_code, resp.json()["code"]) == (status, code), resp.text


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("PUT", "", {"json": {"base_image_id": 42}}, 400),
        ("PUT", "", {"json": {"description": 5}}, 400),
        ("PUT", "", {"json": {"name": ""}}, 400),
        ("PUT", "", {"content": b"[1]"}, 400),
        ("POST", "/file", {"json": {"path": "a.py"}}, 400),
        ("POST", "/file", {"json": {"content": "x"}}, 400),
        ("POST", "/file", {"json": {"path": "a.py", "content": 1}}, 400),
        ("GET", "/file", {"params": {"path": "missing.py"}}, 404),
        ("GET", "/files", {"params": {"path": "nodir"}}, 404),
        ("POST", "/upload", {"json": {"file": "x"}}, 400),
        ("POST", "/upload", {"files": {"other": ("a", b"1")}}, 400),
        ("POST", "/source", {"data": {"x": "1"}}, 400),
        ("POST", "/build", {"json": {"version": 1}}, 400),
        ("POST", "/build", {"json": {"version": "../../x"}}, 400),
        ("POST", "/build", {"json": {"version": "1.0 beta"}}, 400),
    ],
)
async def test_bad_requests_on_a_project(
    gateway: httpx.AsyncClient, auth: dict[str, str], method: str, path: str, kwargs: dict, status: int
) -> None:
    pid = await new_project(gateway, auth)
    resp = await gateway.request(method, f"{DEV}/projects/{pid}{path}", headers=auth, **kwargs)
    assert resp.status_code == status and resp.json()["code"] in (1001, 1004, 4000, 8000), resp.text


async def test_a_duplicate_key_conflicts(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    await new_project(gateway, auth, "demo")
    dup = await gateway.post(f"{DEV}/projects", headers=auth, json={"name": "again", "key": "demo"})
    assert dup.status_code == 409, dup.text


@pytest.mark.parametrize(
    "path", ["../etc/passwd", "/etc/passwd", "a/../../b", "", "..", "a\\..\\..\\b", "x\x00y"]
)
async def test_project_paths_stay_inside_the_project(
    gateway: httpx.AsyncClient, auth: dict[str, str], path: str
) -> None:
    pid = await new_project(gateway, auth)
    resp = await gateway.post(f"{DEV}/projects/{pid}/file", headers=auth, json={"path": path, "content": "x"})
    assert resp.status_code == 400, resp.text
    resp = await gateway.get(f"{DEV}/projects/{pid}/file", headers=auth, params={"path": path})
    assert resp.status_code == 400
    up = await gateway.post(
        f"{DEV}/projects/{pid}/upload",
        headers=auth,
        files={"file": ("f.py", b"1")},
        data={"path": path or "/"},
    )
    assert up.status_code == 400 or up.json()["data"]["path"] == "f.py", up.text


ROUTES = [
    ("GET", "/base-images"),
    ("GET", "/projects"),
    ("POST", "/projects"),
    ("GET", "/projects/1"),
    ("PUT", "/projects/1"),
    ("DELETE", "/projects/1"),
    ("POST", "/projects/1/upload"),
    ("POST", "/projects/1/source"),
    ("GET", "/projects/1/files"),
    ("GET", "/projects/1/file"),
    ("POST", "/projects/1/file"),
    ("GET", "/projects/1/builds"),
    ("POST", "/projects/1/build"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, DEV + path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


async def test_deleting_a_project_frees_its_files(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    before = usage(twin)
    pid = await new_project(gateway, auth)
    big = b"x" * 3_000_000
    up = await gateway.post(f"{DEV}/projects/{pid}/upload", headers=auth, files={"file": ("blob.bin", big)})
    assert up.status_code == 200, up.text
    assert usage(twin)["data"] - before["data"] >= len(big)
    assert (await gateway.delete(f"{DEV}/projects/{pid}", headers=auth)).status_code == 200
    assert usage(twin) == before


async def test_projects_and_store_installs_survive_a_restart_with_a_state_dir(tmp_path: Path) -> None:
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state")

    def client(twin: Twin) -> httpx.AsyncClient:
        app = twin.gateway_apps["cam-01"]
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cam-01")

    first = build(settings)
    async with client(first) as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        pid = await new_project(gateway, auth, "keeper")
        await gateway.post(
            f"{DEV}/projects/{pid}/file", headers=auth, json={"path": "main.py", "content": "1"}
        )
        await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth, json={"version": "1.0.0"})
        first.clock.advance(60)
        await gateway.post(f"{DEV}/projects/{pid}/build", headers=auth, json={"version": "1.0.1"})
        record = {"app_id": "custom", "name": "Custom", "version": "3"}
        assert (await gateway.post("/api/v1/store/installs", headers=auth, json=record)).status_code == 200
    first.world.store.close()

    second = build(settings)
    async with client(second) as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        project = (await gateway.get(f"{DEV}/projects/{pid}", headers=auth)).json()["data"]["project"]
        assert project["key"] == "keeper"
        files = (await gateway.get(f"{DEV}/projects/{pid}/files", headers=auth)).json()["data"]["files"]
        assert [f["name"] for f in files] == ["main.py"]
        builds = (await gateway.get(f"{DEV}/projects/{pid}/builds", headers=auth)).json()["data"]["builds"]
        assert [(b["version"], b["status"]) for b in builds] == [("1.0.1", "failed"), ("1.0.0", "success")]
        assert "interrupted" in builds[0]["log"]
        other = await new_project(gateway, auth, "other")
        assert other == pid + 1
        got = await gateway.get("/api/v1/store/installs/custom", headers=auth)
        assert got.json()["data"]["install"]["version"] == "3"
    second.world.store.close()
