"""A camera's file system: an in-memory tree of directories, files and symbolic links.

Nothing here touches the host: paths are resolved purely lexically over the tree (no ``os.path``, no
``open()``). :class:`VirtualFS` is the whole device tree (the terminal sees all of it);
:class:`Confined` is the files API's view of it, limited to the allowed roots. A confined path must be
absolute, must not contain a ``..`` segment (also not percent-encoded), and must stay inside a root
after every link on the way is followed; anything else is ``Forbidden(resource="path")``.

Byte accounting: every change of a file's size is passed to ``charge(path, delta)`` first, which
may refuse it (``StorageFull``); the partition model plugs in there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from hardware.ports.errors import Conflict, Forbidden, InvalidInput, NotFound

MAX_LINK_HOPS = 16
ALLOWED_ROOTS = ("/data", "/tmp")
DEFAULT_DIR = "/data/aipc"


@dataclass
class Node:
    mtime: float
    perm: int

    kind = "?"


@dataclass
class Dir(Node):
    children: dict[str, Node] = field(default_factory=dict)
    kind = "d"


@dataclass
class File(Node):
    data: bytes | bytearray | None = b""
    """``None``: a large seeded file whose bytes are made on demand from ``seed`` and ``length``."""
    length: int = 0
    seed: str = ""
    kind = "-"

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else self.length

    def read(self) -> bytes:
        if self.data is not None:
            return bytes(self.data)
        block = hashlib.blake2b(self.seed.encode(), digest_size=64).digest()
        return (block * (self.length // len(block) + 1))[: self.length]


@dataclass
class Link(Node):
    target: str = "/"
    kind = "L"


def mode_text(node: Node) -> str:
    """Go's ``FileMode.String()``: ``drwxr-xr-x``, ``-rw-r--r--``, ``Lrwxrwxrwx``."""
    bits = "".join(c if node.perm & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    return node.kind + bits


def split(path: str) -> list[str]:
    """The segments of an absolute path, ``.`` and empty segments dropped, ``..`` applied lexically
    (never above ``/``)."""
    if not path.startswith("/"):
        raise InvalidInput(f"path {path} is not absolute")
    if "\x00" in path:
        raise InvalidInput("path contains a NUL byte")
    out: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue
        out.append(part)
    return out


def join(parts: list[str]) -> str:
    return "/" + "/".join(parts)


class VirtualFS:
    def __init__(
        self,
        now: Callable[[], float],
        charge: Callable[[str, int], None] | None = None,
    ) -> None:
        self.now = now
        self.charge = charge or (lambda path, delta: None)
        self.root = Dir(now(), 0o755)

    # Resolution ----------------------------------------------------------------------------
    def resolve(self, path: str, *, follow_last: bool = True) -> tuple[str, Node]:
        """The canonical path and node ``path`` names, following links (absolute or relative to the
        link's directory) up to ``MAX_LINK_HOPS``. ``NotFound(resource="file")`` if it names nothing."""
        canonical, node = self._walk(split(path), follow_last, [0])
        if node is None:
            raise NotFound(f"no such file or directory: {path}", resource="file")
        return canonical, node

    def _walk(self, parts: list[str], follow_last: bool, hops: list[int]) -> tuple[str, Node | None]:
        done: list[str] = []
        node: Node = self.root
        for i, name in enumerate(parts):
            if not isinstance(node, Dir):
                return join([*done, name]), None
            child = node.children.get(name)
            if child is None:
                return join([*done, *parts[i:]]), None
            last = i == len(parts) - 1
            if isinstance(child, Link) and (follow_last or not last):
                hops[0] += 1
                if hops[0] > MAX_LINK_HOPS:
                    raise InvalidInput("too many levels of symbolic links")
                base = child.target if child.target.startswith("/") else join(done) + "/" + child.target
                target, child_node = self._walk(split(base), True, hops)
                if child_node is None:
                    return join([*split(target), *parts[i + 1 :]]), None
                done, node = split(target), child_node
                continue
            done.append(name)
            node = child
        return join(done), node

    def canonical(self, path: str) -> str:
        """Where ``path`` leads once every link is followed (the path need not exist)."""
        return self._walk(split(path), True, [0])[0]

    def exists(self, path: str) -> bool:
        return self._walk(split(path), True, [0])[1] is not None

    def _dir(self, path: str) -> Dir:
        _, node = self.resolve(path)
        if not isinstance(node, Dir):
            raise InvalidInput(f"not a directory: {path}")
        return node

    def _parent(self, path: str) -> tuple[Dir, str, str]:
        """The directory that holds ``path`` (links followed), the entry name, and the canonical path."""
        parts = split(path)
        if not parts:
            raise Forbidden("cannot replace the root directory", resource="path")
        parent_path, _ = self.resolve(join(parts[:-1]))
        return self._dir(parent_path), parts[-1], join([*split(parent_path), parts[-1]])

    # Reading -------------------------------------------------------------------------------
    def stat(self, path: str) -> Node:
        return self.resolve(path)[1]

    def listdir(self, path: str) -> list[tuple[str, Node]]:
        return sorted(self._dir(path).children.items())

    def read(self, path: str) -> bytes:
        _, node = self.resolve(path)
        if isinstance(node, Dir):
            raise InvalidInput(f"is a directory: {path}")
        assert isinstance(node, File)
        return node.read()

    def walk_files(self, path: str) -> Iterator[tuple[str, File]]:
        """Every regular file at or under ``path`` (links are not followed below ``path``)."""
        canonical, node = self.resolve(path)
        if isinstance(node, File):
            yield canonical, node
        elif isinstance(node, Dir):
            for name, child in sorted(node.children.items()):
                if not isinstance(child, Link):
                    yield from self.walk_files(canonical.rstrip("/") + "/" + name)

    def size_of(self, node: Node) -> int:
        if isinstance(node, File):
            return node.size
        if isinstance(node, Dir):
            return sum(self.size_of(c) for c in node.children.values())
        return 0

    # Writing -------------------------------------------------------------------------------
    def write(self, path: str, data: bytes, *, perm: int = 0o644) -> int:
        parent, name, canonical = self._parent(path)
        existing = parent.children.get(name)
        if isinstance(existing, Dir):
            raise InvalidInput(f"is a directory: {path}")
        if isinstance(existing, Link):
            canonical, existing = self._walk(split(canonical), True, [0])
            if isinstance(existing, Dir):
                raise InvalidInput(f"is a directory: {path}")
            if existing is None:
                return self.write(canonical, data, perm=perm)
        old = existing.size if isinstance(existing, File) else 0
        self.charge(canonical, len(data) - old)
        if isinstance(existing, File):
            existing.data, existing.length, existing.mtime = bytes(data), 0, self.now()
        else:
            parent.children[name] = File(self.now(), perm, bytes(data))
        parent.mtime = self.now()
        return len(data)

    def append(self, path: str, data: bytes, *, keep: int = 0) -> None:
        """Append to a file (created if missing). With ``keep`` the file is a rotated log: once it
        passes twice ``keep`` bytes, it is cut back to its last ``keep`` (at a line start), so an
        append costs its own length, not the file's."""
        try:
            canonical, node = self.resolve(path)
        except NotFound:
            self.write(path, data)
            return
        if not isinstance(node, File) or node.data is None:
            self.write(canonical, self.read(canonical) + data)
            return
        self.charge(canonical, len(data))
        if not isinstance(node.data, bytearray):
            node.data = bytearray(node.data)
        node.data += data
        node.mtime = self.now()
        if keep and len(node.data) > 2 * keep:
            cut = node.data.find(b"\n", len(node.data) - keep)
            cut = cut + 1 if cut >= 0 else len(node.data) - keep
            self.charge(canonical, -cut)
            del node.data[:cut]

    def put_sparse(self, path: str, length: int, seed: str, *, perm: int = 0o644) -> None:
        """A large seeded file: ``length`` bytes made on demand (an image, a model, a core dump)."""
        parent, name, canonical = self._parent(path)
        old = parent.children.get(name)
        self.charge(canonical, length - (old.size if isinstance(old, File) else 0))
        parent.children[name] = File(self.now(), perm, None, length, seed)

    def mkdir(self, path: str, *, parents: bool = True, perm: int = 0o755) -> None:
        parts = split(path)
        for i in range(1, len(parts) + 1):
            sub = join(parts[:i])
            canonical, node = self._walk(split(sub), True, [0])
            if node is None:
                if not parents and i < len(parts):
                    raise NotFound(f"no such directory: {join(parts[: i - 1])}", resource="file")
                parent, name, _ = self._parent(canonical)
                parent.children[name] = Dir(self.now(), perm)
                parent.mtime = self.now()
            elif not isinstance(node, Dir):
                raise Conflict(f"not a directory: {sub}")

    def symlink(self, path: str, target: str) -> None:
        parent, name, _ = self._parent(path)
        parent.children[name] = Link(self.now(), 0o777, target)

    def remove(self, path: str) -> int:
        """Remove a file, link or whole directory (the link itself, never its target); returns the
        bytes freed."""
        parent, name, canonical = self._parent(path)
        node = parent.children.get(name)
        if node is None:
            raise NotFound(f"no such file or directory: {path}", resource="file")
        freed = self._free(canonical, node)
        del parent.children[name]
        parent.mtime = self.now()
        return freed

    def _free(self, path: str, node: Node) -> int:
        if isinstance(node, File):
            self.charge(path, -node.size)
            return node.size
        if isinstance(node, Dir):
            return sum(self._free(f"{path}/{n}", c) for n, c in node.children.items())
        return 0

    def rename(self, old: str, new: str) -> None:
        src_parent, src_name, src = self._parent(old)
        node = src_parent.children.get(src_name)
        if node is None:
            raise NotFound(f"no such file or directory: {old}", resource="file")
        dst_parent, dst_name, dst = self._parent(new)
        if dst == src:
            return
        if isinstance(node, Dir) and (dst + "/").startswith(src + "/"):
            raise InvalidInput("cannot move a directory into itself")
        if dst_name in dst_parent.children:
            raise Conflict(f"already exists: {new}")
        size = self.size_of(node)
        self.charge(src, -size)
        try:
            self.charge(dst, size)
        except Exception:
            self.charge(src, size)
            raise
        del src_parent.children[src_name]
        dst_parent.children[dst_name] = node
        src_parent.mtime = dst_parent.mtime = node.mtime = self.now()

    # Snapshot ------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return _dump(self.root)

    def set_state(self, state: dict[str, Any]) -> None:
        node = _load(state)
        assert isinstance(node, Dir)
        self.root = node


def _dump(node: Node) -> dict[str, Any]:
    out: dict[str, Any] = {"k": node.kind, "m": node.mtime, "p": node.perm}
    if isinstance(node, Dir):
        out["c"] = {n: _dump(c) for n, c in node.children.items()}
    elif isinstance(node, File):
        out.update(d=None if node.data is None else bytes(node.data), n=node.length, s=node.seed)
    elif isinstance(node, Link):
        out["t"] = node.target
    return out


def _load(state: dict[str, Any]) -> Node:
    kind, mtime, perm = state["k"], state["m"], state["p"]
    if kind == "d":
        return Dir(mtime, perm, {n: _load(c) for n, c in state["c"].items()})
    if kind == "L":
        return Link(mtime, perm, state["t"])
    return File(mtime, perm, state["d"], state["n"], state["s"])


class Confined:
    """The files API's view: only paths inside ``roots``, after links are followed."""

    def __init__(self, fs: VirtualFS, roots: tuple[str, ...] = ALLOWED_ROOTS) -> None:
        self.fs = fs
        self.roots = roots

    def _inside(self, canonical: str) -> bool:
        return any(canonical == r or canonical.startswith(r + "/") for r in self.roots)

    def check(self, path: str) -> str:
        """The canonical path behind ``path``, or ``Forbidden`` if it is not absolute, contains a
        ``..`` segment (literal or percent-encoded, once or more), or lands outside the roots."""
        denied = Forbidden(f"access denied: path {path} is outside allowed directories", resource="path")
        if not path.startswith("/") or "\x00" in path or "\\" in path:
            raise denied
        decoded, previous = path, None
        while decoded != previous:  # %2e%2e, %252e%252e, ...
            previous, decoded = decoded, unquote(decoded)
            if ".." in decoded.split("/"):
                raise denied
        lexical = join(split(path))
        if not self._inside(lexical):
            raise denied
        parts = split(path)
        # The entry itself may be a link: check where its parent leads and where it leads.
        parent = self.fs.canonical(join(parts[:-1])) if parts else "/"
        if not self._inside(join([*split(parent), *parts[-1:]])) or not self._inside(self.fs.canonical(path)):
            raise denied
        return lexical

    def check_mutable(self, path: str) -> str:
        """Like :meth:`check`, and the path must not be a root itself."""
        lexical = self.check(path)
        if lexical in self.roots:
            raise Forbidden(f"access denied: cannot modify root directory {path}", resource="path")
        return lexical
