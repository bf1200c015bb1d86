"""The gateway's files API over the camera's virtual file system.

The escape suite sends every kind of path that could leave the allowed roots to every endpoint, and
an audit hook proves that no request opens, lists, creates, renames or deletes anything on the host
(nor starts a process) while it runs.
"""

from __future__ import annotations

import io
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import SCENARIOS, gateway_token
from twin.camera.wing import cameras_of
from twin.serve import Twin, build
from twin.settings import Settings

_WATCHED = {
    "open",
    "os.listdir",
    "os.scandir",
    "os.remove",
    "os.rename",
    "os.mkdir",
    "os.rmdir",
    "os.symlink",
    "os.link",
    "os.chmod",
    "os.truncate",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
}
_recorded: list[tuple[str, object]] | None = None


def _audit(event: str, args: tuple) -> None:
    if _recorded is not None and event in _WATCHED:
        _recorded.append((event, args[0] if args else None))


sys.addaudithook(_audit)  # inert unless a test is recording


class HostWatch:
    """Records host file-system and process events raised while active."""

    def __enter__(self) -> list[tuple[str, object]]:
        global _recorded
        _recorded = []
        return _recorded

    def __exit__(self, *exc: object) -> None:
        global _recorded
        _recorded = None


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


def escapes(host_dir: Path) -> list[str]:
    host = str(host_dir)
    return [
        "/etc/passwd",
        "/",
        "/var/log",
        "/data/../etc/passwd",
        "/data/aipc/../../etc/shadow",
        "/tmp/..",
        "/data/aipc/%2e%2e/%2e%2e/etc/passwd",
        "/data/%2E%2E/etc",
        "/data/%252e%252e/%252e%252e/etc",
        "//etc/passwd",
        "///etc//passwd",
        "/data//..//..//etc",
        "data/aipc/README.txt",
        "./data/aipc",
        "../data/aipc",
        "~/x",
        "/data/aipc/logs/sshd.log",
        "/data/aipc/logs",
        "/tmp/rootfs/etc/passwd",
        "/tmp/rootfs",
        "/database",
        "/tmpfile",
        f"/data/..{host}/canary.txt",
        f"/tmp/../{host}/canary.txt",
        "/data\\..\\etc\\passwd",
    ]


async def _attempts(gateway: httpx.AsyncClient, auth: dict[str, str], path: str) -> list[httpx.Response]:
    zipped = {"paths": [path]}
    return [
        await gateway.get("/api/v1/files", params={"path": path}, headers=auth),
        await gateway.get("/api/v1/files/content", params={"path": path}, headers=auth),
        await gateway.post("/api/v1/files/content", json={"path": path, "content": "pwned"}, headers=auth),
        await gateway.get("/api/v1/files/download", params={"path": path}, headers=auth),
        await gateway.delete("/api/v1/files", params={"path": path}, headers=auth),
        await gateway.post("/api/v1/files/mkdir", json={"path": path}, headers=auth),
        await gateway.post(
            "/api/v1/files/rename", json={"old_path": "/data/aipc/README.txt", "new_path": path}, headers=auth
        ),
        await gateway.post(
            "/api/v1/files/rename", json={"old_path": path, "new_path": "/tmp/x"}, headers=auth
        ),
        await gateway.post("/api/v1/files/batch-download", json=zipped, headers=auth),
        await gateway.post(
            "/api/v1/files/upload", files={"file": ("x.txt", b"pwned")}, data={"path": path}, headers=auth
        ),
    ]


async def test_escape_attempts_are_refused_and_the_host_is_untouched(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "canary.txt").write_bytes(b"host file")
    host_before = _tree(tmp_path)
    fs_before = cameras_of(twin.world)["cam-01"].fs.state()
    await _attempts(gateway, auth, "/data/aipc/README.txt")  # warm up: lazy imports happen now
    fs_before = cameras_of(twin.world)["cam-01"].fs.state()
    with HostWatch() as host_events:
        for path in escapes(tmp_path):
            for resp in await _attempts(gateway, auth, path):
                assert resp.status_code in (400, 403), (path, resp.request.url, resp.text)
                body = resp.json()
                assert body["code"] in (1001, 8004), (path, body)
                assert body["message"] in ("Access denied", "Invalid request")
            deleted = await gateway.post("/api/v1/files/batch-delete", json={"paths": [path]}, headers=auth)
            assert deleted.status_code == 500 and deleted.json()["code"] == 4003
    assert host_events == []
    assert _tree(tmp_path) == host_before
    assert cameras_of(twin.world)["cam-01"].fs.state() == fs_before


async def test_a_host_path_names_only_a_virtual_file(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str], tmp_path: Path
) -> None:
    """The host's /tmp and the device's /tmp are different places: reading a host file's path finds
    nothing, writing it changes only the virtual file system."""
    host_file = tmp_path / "canary.txt"
    host_file.write_bytes(b"host file")
    path = str(host_file)
    with HostWatch() as host_events:
        read = await gateway.get("/api/v1/files/content", params={"path": path}, headers=auth)
        download = await gateway.get("/api/v1/files/download", params={"path": path}, headers=auth)
        listed = await gateway.get("/api/v1/files", params={"path": str(tmp_path)}, headers=auth)
        await gateway.post("/api/v1/files/mkdir", json={"path": str(tmp_path)}, headers=auth)
        wrote = await gateway.post(
            "/api/v1/files/content", json={"path": path, "content": "virtual"}, headers=auth
        )
        deleted = await gateway.delete("/api/v1/files", params={"path": path}, headers=auth)
    assert read.status_code == download.status_code == listed.status_code == 404
    assert wrote.status_code == 200 and deleted.status_code == 200
    assert host_events == []
    assert host_file.read_bytes() == b"host file"
    assert not cameras_of(twin.world)["cam-01"].fs.exists(path)


async def test_the_denial_body_is_the_devices(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await gateway.get("/api/v1/files", params={"path": "/etc"}, headers=auth)
    assert resp.status_code == 403
    assert resp.json() == {
        "code": 8004,
        "message": "Access denied",
        "error": {"detail": "access denied: path /etc is outside allowed directories"},
    }


async def test_writes_stay_in_the_virtual_fs(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    probe = "/tmp/twin-files-probe-7f3a.txt"
    with HostWatch() as host_events:
        wrote = await gateway.post(
            "/api/v1/files/content", json={"path": probe, "content": "hi"}, headers=auth
        )
        up = await gateway.post(
            "/api/v1/files/upload",
            files={"file": ("../../../etc/cron.d/evil", b"* * * * * root true\n")},
            data={"path": "/tmp"},
            headers=auth,
        )
    assert wrote.json()["data"] == {"path": probe, "size": 2}
    assert up.json()["data"] == {"path": "/tmp/evil", "size": 20}  # the name is reduced to its base
    assert host_events == []
    assert not Path(probe).exists() and not Path("/tmp/evil").exists()
    assert cameras_of(twin.world)["cam-01"].fs.read(probe) == b"hi"


async def test_list_read_write_rename_delete(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    listing = (await gateway.get("/api/v1/files", headers=auth)).json()["data"]
    assert listing["path"] == "/data/aipc"
    names = [f["name"] for f in listing["files"]]
    assert names[:5] == ["apps", "config", "images", "models", "uploads"]  # directories first
    readme = next(f for f in listing["files"] if f["name"] == "README.txt")
    assert readme == {
        "name": "README.txt",
        "path": "/data/aipc/README.txt",
        "is_dir": False,
        "size": 52,
        "mod_time": "2026-01-01 00:00:00",
        "mode": "-rw-r--r--",
    }
    link = next(f for f in listing["files"] if f["name"] == "logs")
    assert link["mode"].startswith("L") and link["is_dir"] is False

    made = await gateway.post("/api/v1/files/mkdir", json={"path": "/data/aipc/work/sub"}, headers=auth)
    assert made.json() == {"code": 0, "message": "Success", "data": {"path": "/data/aipc/work/sub"}}
    body = {"path": "/data/aipc/work/sub/notes.txt", "content": "line 1\nline 2\n"}
    assert (await gateway.post("/api/v1/files/content", json=body, headers=auth)).json()["data"]["size"] == 14
    read = await gateway.get("/api/v1/files/content", params={"path": body["path"]}, headers=auth)
    assert read.json()["data"] == {"path": body["path"], "size": 14, "content": "line 1\nline 2\n"}
    moved = await gateway.post(
        "/api/v1/files/rename",
        json={"old_path": "/data/aipc/work/sub/notes.txt", "new_path": "/tmp/notes.txt"},
        headers=auth,
    )
    assert moved.status_code == 200
    download = await gateway.get("/api/v1/files/download", params={"path": "/tmp/notes.txt"}, headers=auth)
    assert download.content == b"line 1\nline 2\n"
    assert download.headers["content-disposition"] == 'attachment; filename="notes.txt"'
    gone = await gateway.delete("/api/v1/files", params={"path": "/data/aipc/work"}, headers=auth)
    assert gone.json()["data"] == {"deleted": "/data/aipc/work"}
    missing = await gateway.get("/api/v1/files", params={"path": "/data/aipc/work"}, headers=auth)
    assert missing.status_code == 404 and missing.json()["code"] == 8000


async def test_upload_moves_partition_usage_and_full_disk_is_507(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    data = cameras_of(twin.world)["cam-01"].storage.partition("data")
    before = data.used
    up = await gateway.post(
        "/api/v1/files/upload",
        files={"file": ("blob.bin", b"\x01" * 4096)},
        data={"path": "/data/aipc/uploads"},
        headers=auth,
    )
    assert up.json()["data"] == {"path": "/data/aipc/uploads/blob.bin", "size": 4096}
    assert data.used == before + 4096
    await gateway.delete("/api/v1/files", params={"path": "/data/aipc/uploads/blob.bin"}, headers=auth)
    assert data.used == before
    data.charge("test-filler", data.free - 100)
    full = await gateway.post(
        "/api/v1/files/upload", files={"file": ("big.bin", b"x" * 1000)}, data={"path": "/data"}, headers=auth
    )
    assert full.status_code == 507 and full.json()["code"] == 8003


async def test_batch_download_is_a_zip_and_batch_delete_reports_failures(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    await gateway.post("/api/v1/files/mkdir", json={"path": "/data/aipc/batch"}, headers=auth)
    for name in ("a.txt", "b.txt"):
        await gateway.post(
            "/api/v1/files/content", json={"path": f"/data/aipc/batch/{name}", "content": name}, headers=auth
        )
    zipped = await gateway.post(
        "/api/v1/files/batch-download",
        json={"paths": ["/data/aipc/batch", "/data/aipc/README.txt"]},
        headers=auth,
    )
    assert zipped.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(zipped.content))
    assert sorted(archive.namelist()) == ["README.txt", "batch/a.txt", "batch/b.txt"]
    assert archive.read("batch/a.txt") == b"a.txt"
    assert archive.getinfo("README.txt").date_time == (2026, 1, 1, 0, 0, 0)  # device time, not the host's
    deleted = await gateway.post(
        "/api/v1/files/batch-delete",
        json={"paths": ["/data/aipc/batch/a.txt", "/data/aipc/batch/none", "/etc/passwd"]},
        headers=auth,
    )
    data = deleted.json()["data"]
    assert data["deleted"] == ["/data/aipc/batch/a.txt"] and data["count"] == 1
    assert data["failed_count"] == 2 and [f["path"] for f in data["failed"]] == [
        "/data/aipc/batch/none",
        "/etc/passwd",
    ]


async def test_content_over_one_megabyte_is_refused(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await gateway.get(
        "/api/v1/files/content", params={"path": "/data/aipc/models/yolov8n.hef"}, headers=auth
    )
    assert resp.status_code == 400 and resp.json()["code"] == 1001
    whole = await gateway.get(
        "/api/v1/files/download", params={"path": "/data/aipc/models/yolov8n.hef"}, headers=auth
    )
    assert len(whole.content) == 9_437_184


async def test_roots_cannot_be_deleted_or_renamed(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for resp in (
        await gateway.delete("/api/v1/files", params={"path": "/data"}, headers=auth),
        await gateway.delete("/api/v1/files", params={"path": "/tmp/"}, headers=auth),
        await gateway.post(
            "/api/v1/files/rename", json={"old_path": "/tmp", "new_path": "/data/t"}, headers=auth
        ),
    ):
        assert resp.status_code == 403 and resp.json()["code"] == 8004


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("POST", "/content", {"json": {"content": "x"}}),
        ("POST", "/content", {"json": {"path": 5}}),
        ("POST", "/content", {"content": b"not json"}),
        ("POST", "/content", {"json": ["/tmp/x"]}),
        ("POST", "/mkdir", {"json": {}}),
        ("POST", "/rename", {"json": {"old_path": "/tmp/a"}}),
        ("POST", "/batch-delete", {"json": {"paths": "/tmp/a"}}),
        ("POST", "/batch-delete", {"json": {"paths": [1, 2]}}),
        ("POST", "/batch-download", {"json": {}}),
        ("POST", "/upload", {"data": {"path": "/tmp"}}),
        ("POST", "/upload", {"json": {"path": "/tmp"}}),
        ("GET", "/content", {}),
        ("GET", "/download", {}),
        ("DELETE", "", {}),
    ],
)
async def test_bad_requests_are_1001(
    gateway: httpx.AsyncClient, auth: dict[str, str], method: str, path: str, kwargs: dict
) -> None:
    resp = await gateway.request(method, "/api/v1/files" + path, headers=auth, **kwargs)
    assert resp.status_code == 400, resp.text
    assert resp.json()["code"] == 1001


async def test_unknown_paths_are_8000(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for resp in (
        await gateway.get("/api/v1/files/content", params={"path": "/data/nope.txt"}, headers=auth),
        await gateway.delete("/api/v1/files", params={"path": "/tmp/nope"}, headers=auth),
        await gateway.post(
            "/api/v1/files/content", json={"path": "/tmp/no/dir/f", "content": ""}, headers=auth
        ),
    ):
        assert resp.status_code == 404 and resp.json()["code"] == 8000


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", ""),
        ("DELETE", ""),
        ("GET", "/content"),
        ("POST", "/content"),
        ("POST", "/upload"),
        ("GET", "/download"),
        ("POST", "/batch-download"),
        ("POST", "/batch-delete"),
        ("POST", "/mkdir"),
        ("POST", "/rename"),
    ],
)
async def test_every_route_needs_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        resp = await gateway.request(method, "/api/v1/files" + path, params={"path": "/tmp"}, headers=headers)
        assert resp.status_code == 401
        assert resp.json()["code"] == 2000


async def test_files_written_by_clients_survive_a_restart_with_a_state_dir(tmp_path: Path) -> None:
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state")

    async def client(twin: Twin) -> httpx.AsyncClient:
        app = twin.gateway_apps["cam-01"]
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://cam-01")

    first = build(settings)
    async with await client(first) as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        await gateway.post("/api/v1/files/mkdir", json={"path": "/data/aipc/keep/sub"}, headers=auth)
        await gateway.post(
            "/api/v1/files/content", json={"path": "/data/aipc/keep/a.txt", "content": "A"}, headers=auth
        )
        await gateway.post(
            "/api/v1/files/upload",
            files={"file": ("b.bin", b"\x00\x01")},
            data={"path": "/tmp"},
            headers=auth,
        )
        await gateway.post(
            "/api/v1/files/rename",
            json={"old_path": "/tmp/b.bin", "new_path": "/data/aipc/keep/b.bin"},
            headers=auth,
        )
        await gateway.post(
            "/api/v1/files/content", json={"path": "/tmp/gone.txt", "content": "x"}, headers=auth
        )
        await gateway.delete("/api/v1/files", params={"path": "/tmp/gone.txt"}, headers=auth)
    used = cameras_of(first.world)["cam-01"].storage.partition("data").used
    first.world.store.close()

    second = build(settings)
    camera = cameras_of(second.world)["cam-01"]
    assert camera.fs.read("/data/aipc/keep/a.txt") == b"A"
    assert camera.fs.read("/data/aipc/keep/b.bin") == b"\x00\x01"
    assert camera.fs.exists("/data/aipc/keep/sub")
    assert not camera.fs.exists("/tmp/b.bin") and not camera.fs.exists("/tmp/gone.txt")
    assert camera.storage.partition("data").used == used
    second.world.store.close()


async def test_times_are_in_the_devices_timezone(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    zone = await gateway.put("/api/v1/system/time/timezone", json={"timezone": "Asia/Shanghai"}, headers=auth)
    assert zone.status_code == 200
    listing = (await gateway.get("/api/v1/files", headers=auth)).json()["data"]["files"]
    assert {f["mod_time"] for f in listing} == {"2026-01-01 08:00:00"}


async def test_a_non_ascii_name_downloads_with_an_rfc5987_header(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    path = "/tmp/報告 1.txt"
    await gateway.post("/api/v1/files/content", json={"path": path, "content": "x"}, headers=auth)
    resp = await gateway.get("/api/v1/files/download", params={"path": path}, headers=auth)
    assert resp.status_code == 200
    assert resp.headers["content-disposition"] == "attachment; filename*=UTF-8''%E5%A0%B1%E5%91%8A%201.txt"
