"""A camera's file system as it ships, and the files clients wrote, kept in the world's store.

:func:`seeded` builds the tree a camera boots with. Files written through the files API are durable
state like everything else a client creates: :class:`DurableFiles` mirrors each one into the store
(collection ``camera_files``, one document per file or directory) and replays them into a new tree,
so they survive a restart of the twin with a state directory, and snapshots carry them.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from hardware.ports.errors import DomainError
from twin.camera.vfs import Dir, File, Link, VirtualFS

if TYPE_CHECKING:
    from twin.camera.storage import Storage
    from twin.store import Store

FILES_KIND = "camera_files"


# The tree as it ships ----------------------------------------------------------------------------
SSHD_CONFIG = """# sshd_config of the AI camera
Port 22
PermitRootLogin yes
PasswordAuthentication yes
PubkeyAuthentication yes
MaxAuthTries 6
UsePAM yes
Subsystem sftp /usr/lib/openssh/sftp-server
"""

OS_RELEASE = """PRETTY_NAME="AIPC Linux 1.4 (scarthgap)"
NAME="AIPC Linux"
VERSION_ID="1.4"
ID=aipc
"""

PASSWD = """root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
sshd:x:74:74:Privilege-separated SSH:/var/empty/sshd:/usr/sbin/nologin
aipc:x:1000:1000:AIPC services:/home/aipc:/bin/sh
"""


def seeded(
    now: Callable[[], float],
    hostname: str,
    seed: str,
    storage: Storage | None = None,
    store: Store | None = None,
) -> VirtualFS:
    """The tree a camera boots with: system files, log directories, the data partition's layout, a
    stock model, and a few links (one leaving the allowed roots, for clients that follow them).
    What ships is part of the partitions' baseline; bytes written later are charged to
    ``storage`` (owner ``"vfs"`` on the partition the path lives on). With ``store``, the files
    clients wrote are replayed on top."""
    fs = VirtualFS(now)
    for d in (
        "/etc/ssh",
        "/etc/aipc",
        "/var/log/aipc",
        "/root",
        "/home/aipc",
        "/usr/bin",
        "/data/aipc/apps",
        "/data/aipc/models",
        "/data/aipc/images",
        "/data/aipc/uploads",
        "/data/aipc/config",
        "/data/aipc-data",
        "/data/os-upgrade",
        "/tmp",
    ):
        fs.mkdir(d)
    fs.write("/etc/hostname", f"{hostname}\n".encode())
    fs.write("/etc/os-release", OS_RELEASE.encode())
    fs.write("/etc/passwd", PASSWD.encode())
    fs.write("/etc/shadow", b"root:*:19000:0:99999:7:::\n", perm=0o600)
    fs.write("/etc/ssh/sshd_config", SSHD_CONFIG.encode())
    fs.write("/etc/aipc/VERSION", b"0.1.0\n")
    fs.write("/data/aipc/config/camera-daemon.yaml", b"streams:\n  - id: main\n  - id: sub\n  - id: third\n")
    fs.write("/data/aipc/README.txt", b"AIPC data directory: apps, models, images, uploads.\n")
    fs.put_sparse("/data/aipc/models/yolov8n.hef", 9_437_184, f"{seed}/yolov8n.hef")
    fs.symlink("/data/aipc/logs", "/var/log/aipc")
    fs.symlink("/data/aipc/stock-models", "models")
    fs.symlink("/tmp/rootfs", "/")
    if storage is not None:
        fs.charge = partial(_charge, storage)
    if store is not None:
        DurableFiles(store, hostname, fs).replay()
    return fs


def _charge(storage: Storage, path: str, delta: int) -> None:
    partition = storage.partition_for(path)
    if delta > 0:
        storage.charge(partition, "vfs", delta)
    elif delta < 0:
        storage.release(partition, "vfs", -delta)


class DurableFiles:
    """The client-written part of one camera's tree, in the store."""

    def __init__(self, store: Store, camera_id: str, fs: VirtualFS) -> None:
        self._docs = store.collection(FILES_KIND)
        self._prefix = camera_id + ":"
        self._fs = fs

    def save(self, path: str) -> None:
        """Record ``path`` (a file, or a directory and everything under it) as it is now."""
        try:
            canonical, node = self._fs.resolve(path, follow_last=False)
        except DomainError:
            return
        self._save(canonical, node)

    def _save(self, path: str, node: object) -> None:
        if isinstance(node, File):
            data = base64.b64encode(node.read()).decode()
            self._docs.put(self._prefix + path, {"file": data, "mtime": node.mtime, "perm": node.perm})
        elif isinstance(node, Dir):
            self._docs.put(self._prefix + path, {"dir": True, "mtime": node.mtime, "perm": node.perm})
            for name, child in node.children.items():
                self._save(path.rstrip("/") + "/" + name, child)
        elif isinstance(node, Link):
            self._docs.put(self._prefix + path, {"link": node.target})

    def drop(self, path: str) -> None:
        """Forget ``path`` and everything under it, and remember that it is gone (a file the tree
        ships with would otherwise be back after a restart)."""
        key = self._prefix + path
        under = key.rstrip("/") + "/"
        for rest, _ in self._docs.items_under(key):
            if not rest or (key + rest).startswith(under):
                self._docs.delete(key + rest)
        self._docs.put(key, {"deleted": True})

    def replay(self) -> None:
        """Write every recorded entry into the tree, parents first."""
        entries = self._docs.items_under(self._prefix)
        for path, doc in sorted(entries, key=lambda e: e[0].count("/")):
            try:
                if doc.get("deleted"):
                    self._fs.remove(path)
                elif doc.get("dir"):
                    self._fs.mkdir(path, perm=doc["perm"])
                elif "link" in doc:
                    self._fs.symlink(path, doc["link"])
                else:
                    self._fs.write(path, base64.b64decode(doc["file"]), perm=doc["perm"])
                    self._fs.stat(path).mtime = doc["mtime"]
            except DomainError:
                continue  # no room any more, or a parent that is now a file: skip, like fsck would
