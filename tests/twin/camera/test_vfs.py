"""The virtual file system: lexical resolution, links, confinement to the allowed roots, byte accounting."""

from __future__ import annotations

import random

import pytest

from hardware.ports.errors import Conflict, Forbidden, InvalidInput, NotFound, StorageFull
from twin.camera.vfs import Confined, VirtualFS, mode_text, split
from twin.camera.wing import cameras_of
from twin.fleet import CameraSpec, WorldConfig
from twin.wings import KINDS
from twin.world import World


@pytest.fixture
def fs() -> VirtualFS:
    fs = VirtualFS(lambda: 1000.0)
    fs.mkdir("/data/aipc/models")
    fs.mkdir("/tmp")
    fs.mkdir("/etc")
    fs.write("/etc/passwd", b"root:x:0:0\n")
    fs.write("/data/aipc/a.txt", b"hello")
    fs.symlink("/data/out", "/etc")
    fs.symlink("/data/in", "aipc/models")
    fs.symlink("/data/loop", "/data/loop")
    return fs


def test_split_is_lexical_and_never_climbs_above_root() -> None:
    assert split("/a//b/./c/") == ["a", "b", "c"]
    assert split("/../../etc") == ["etc"]
    with pytest.raises(InvalidInput):
        split("relative/path")
    with pytest.raises(InvalidInput):
        split("/data/\x00x")


def test_links_resolve_inside_the_tree(fs: VirtualFS) -> None:
    assert fs.resolve("/data/in")[0] == "/data/aipc/models"
    assert fs.resolve("/data/out/passwd")[0] == "/etc/passwd"
    assert fs.canonical("/data/out/missing") == "/etc/missing"
    with pytest.raises(InvalidInput):
        fs.resolve("/data/loop")
    with pytest.raises(NotFound):
        fs.resolve("/data/nothing")


def test_write_read_rename_remove(fs: VirtualFS) -> None:
    fs.write("/data/aipc/models/m.bin", b"12345")
    fs.rename("/data/aipc/models/m.bin", "/data/aipc/m2.bin")
    assert fs.read("/data/aipc/m2.bin") == b"12345"
    with pytest.raises(Conflict):
        fs.rename("/data/aipc/a.txt", "/data/aipc/m2.bin")
    with pytest.raises(InvalidInput):
        fs.rename("/data/aipc", "/data/aipc/models/inner")
    assert fs.remove("/data/aipc") == 10
    assert not fs.exists("/data/aipc/a.txt")
    fs.remove("/data/out")  # the link, not its target
    assert fs.read("/etc/passwd") == b"root:x:0:0\n"


def test_mode_text_is_gos_file_mode_string(fs: VirtualFS) -> None:
    assert mode_text(fs.stat("/data/aipc")) == "drwxr-xr-x"
    assert mode_text(fs.stat("/data/aipc/a.txt")) == "-rw-r--r--"
    assert mode_text(fs.resolve("/data/out", follow_last=False)[1]) == "Lrwxrwxrwx"


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/",
        "/data/../etc/passwd",
        "/data/aipc/%2e%2e/%2e%2e/etc/passwd",
        "/data/%252e%252e/etc",
        "//etc/passwd",
        "data/aipc",
        "../data",
        "/data/out/passwd",
        "/data/out",
        "/datax",
        "/data\\..\\etc",
        "/tmp/\x00",
    ],
)
def test_confined_view_refuses_escapes(fs: VirtualFS, path: str) -> None:
    with pytest.raises(Forbidden):
        Confined(fs).check(path)


def test_confined_view_allows_paths_inside_the_roots(fs: VirtualFS) -> None:
    view = Confined(fs)
    assert view.check("/data//aipc/./a.txt") == "/data/aipc/a.txt"
    assert view.check("/data/in") == "/data/in"
    assert view.check("/tmp/new-file") == "/tmp/new-file"
    with pytest.raises(Forbidden):
        view.check_mutable("/data")


def test_bytes_are_charged_to_the_partition_of_the_path() -> None:
    world = World(WorldConfig(seed=3, cameras=CameraSpec(1)), kinds=KINDS)
    camera = cameras_of(world)["cam-01"]
    data = camera.storage.partition("data")
    before = data.used
    camera.fs.write("/data/aipc/blob.bin", b"x" * 1000)
    assert data.used == before + 1000
    camera.fs.rename("/data/aipc/blob.bin", "/data/aipc/uploads/blob.bin")
    assert data.used == before + 1000
    camera.fs.remove("/data/aipc/uploads/blob.bin")
    assert data.used == before
    with pytest.raises(StorageFull):
        camera.fs.put_sparse("/data/huge.img", data.free + 1, "huge")
    assert data.used == before


def test_the_seeded_tree_and_its_snapshot_round_trip() -> None:
    world = World(WorldConfig(seed=3, cameras=CameraSpec(1)), kinds=KINDS)
    camera = cameras_of(world)["cam-01"]
    assert camera.fs.read("/etc/hostname") == b"cam-01\n"
    assert camera.fs.stat("/data/aipc/models/yolov8n.hef").size == 9_437_184
    camera.fs.write("/tmp/note", b"kept")
    snap = world.snapshot()
    world.restore(snap)
    assert cameras_of(world)["cam-01"].fs.read("/tmp/note") == b"kept"


def test_append_rotates_at_line_starts_and_charges_what_stays() -> None:
    charged: list[int] = []
    fs = VirtualFS(lambda: 0.0, lambda path, delta: charged.append(delta))
    fs.mkdir("/var/log")
    for i in range(100):
        fs.append("/var/log/x.log", f"line {i:03d}\n".encode(), keep=100)
    content = fs.read("/var/log/x.log")
    assert len(content) <= 200 and content.startswith(b"line ") and content.endswith(b"line 099\n")
    assert sum(charged) == len(content)


def test_random_paths_never_leave_the_roots() -> None:
    """Property check over generated paths: whatever ``check`` accepts lies inside a root, and so
    does where it leads once every link is followed."""
    world = World(WorldConfig(seed=3, cameras=CameraSpec(1)), kinds=KINDS)
    fs = cameras_of(world)["cam-01"].fs
    view = Confined(fs)
    pieces = [
        "", ".", "..", "...", "data", "tmp", "etc", "aipc", "logs", "rootfs", "stock-models", "models",
        "passwd", "%2e%2e", "%2E.", "%252e%252e", "%2f", "..%2f", "\\..", "~", " ", "x..y", "var", "log",
    ]  # fmt: skip
    rng = random.Random(20260101)
    accepted = 0
    for _ in range(5000):
        parts = [rng.choice(pieces) for _ in range(rng.randint(0, 6))]
        path = rng.choice(["/", "//", "", "./"]) + "/".join(parts)
        try:
            lexical = view.check(path)
        except Forbidden:
            continue
        accepted += 1
        assert ".." not in lexical.split("/")
        for where in (lexical, fs.canonical(lexical)):
            assert any(where == r or where.startswith(r + "/") for r in ("/data", "/tmp")), (path, where)
    assert accepted > 100
