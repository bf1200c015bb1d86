"""A camera's shell side: its SSH daemon settings and the web terminal's simulated login shell.

The shell interprets a small set of commands itself over the camera's virtual file system
(``ls``, ``cd``, ``cat``, ``echo … > file``, ``mkdir``, ``rm``, ``mv``, ``df``, ``uname`` …). It never
starts a process or reads a file of the machine the twin runs on.
"""

from __future__ import annotations

import hmac
import shlex
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hardware.ports.errors import DomainError, InvalidInput, NotFound
from twin.camera.vfs import Dir, File, Link, join, mode_text, split

if TYPE_CHECKING:
    from twin.camera.camera import Camera

SSHD_CONFIG = "/etc/ssh/sshd_config"
SSH_KEYS = {
    "port": "Port",
    "permit_root_login": "PermitRootLogin",
    "password_authentication": "PasswordAuthentication",
    "pubkey_authentication": "PubkeyAuthentication",
    "max_auth_tries": "MaxAuthTries",
}
YES_NO = ("yes", "no")
SSH_VALUES = {
    "PermitRootLogin": ("yes", "no", "prohibit-password"),
    "PasswordAuthentication": YES_NO,
    "PubkeyAuthentication": YES_NO,
}


# SSH ------------------------------------------------------------------------------------------------
def ssh_config(camera: Camera) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in camera.fs.read(SSHD_CONFIG).decode().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            out[key] = value.strip()
    return out


def set_ssh_config(camera: Camera, changes: dict[str, str], restart: bool) -> None:
    for key, value in changes.items():
        allowed = SSH_VALUES.get(key)
        if allowed is not None and value not in allowed:
            raise InvalidInput(f"invalid value for {key}: {value}", resource="parameter")
        if key == "Port" and not (value.isdigit() and 1 <= int(value) <= 65535):
            raise InvalidInput("port must be between 1 and 65535", resource="parameter")
        if key == "MaxAuthTries" and not (value.isdigit() and 1 <= int(value) <= 100):
            raise InvalidInput("max_auth_tries must be between 1 and 100", resource="parameter")
    lines = camera.fs.read(SSHD_CONFIG).decode().splitlines()
    pending = dict(changes)
    for i, line in enumerate(lines):
        key = line.strip().partition(" ")[0]
        if key in pending:
            lines[i] = f"{key} {pending.pop(key)}"
    lines += [f"{k} {v}" for k, v in pending.items()]
    camera.fs.write(SSHD_CONFIG, ("\n".join(lines) + "\n").encode())
    camera.logs.write("sshd", "configuration updated")
    if restart:
        camera.logs.write("sshd", "Received SIGHUP; restarting.")
        camera.logs.write("sshd", f"Server listening on 0.0.0.0 port {ssh_config(camera).get('Port', '22')}.")


def ssh_logs(camera: Camera) -> list[str]:
    return list(camera.logs.journals["sshd"])[-100:]


# The web terminal -------------------------------------------------------------------------------
class Terminal:
    """One login shell. ``closed`` once the user exits or the device goes down."""

    def __init__(self, camera: Camera) -> None:
        self.camera = camera
        self._boot = camera.boot_count
        self.user = ""
        self.cwd = "/root"
        self._exited = False

    @property
    def closed(self) -> bool:
        return self._exited or not self.camera.powered or self.camera.boot_count != self._boot

    def banner(self) -> str:
        return f"AIPC Linux 1.4 {self.camera.id}\r\n\r\n"

    def login(self, username: str, password: str) -> bool:
        ok = hmac.compare_digest(username.encode(), self.camera.username.encode()) and hmac.compare_digest(
            password.encode(), self.camera.password.encode()
        )
        self.camera.logs.write(
            "sshd", f"{'Accepted' if ok else 'Failed'} password for {username or '?'} on web terminal"
        )
        if ok:
            self.user = username
        return ok

    def prompt(self) -> str:
        return f"{self.user}@{self.camera.id}:{self.cwd}# "

    def _path(self, arg: str) -> str:
        return join(split(arg if arg.startswith("/") else f"{self.cwd}/{arg}"))

    def run(self, line: str) -> str:
        try:
            words = shlex.split(line)
        except ValueError as err:
            return f"sh: syntax error: {err}\r\n"
        if not words:
            return ""
        redirect = None
        if len(words) >= 3 and words[-2] in (">", ">>"):
            redirect, words = (words[-2], words[-1]), words[:-2]
        name, args = words[0], words[1:]
        handler = getattr(self, f"_cmd_{name.replace('-', '_')}", None)
        if handler is None:
            return f"sh: {name}: command not found\r\n"
        try:
            out = handler(args)
        except DomainError as err:
            return f"{name}: {err.message}\r\n"
        if redirect is not None:
            path = self._path(redirect[1])
            data = out.encode()
            try:
                if redirect[0] == ">>":
                    self.camera.fs.append(path, data)
                else:
                    self.camera.fs.write(path, data)
            except DomainError as err:
                return f"sh: {redirect[1]}: {err.message}\r\n"
            return ""
        return out.replace("\n", "\r\n")

    # Commands ------------------------------------------------------------------------------
    def _cmd_help(self, args: list[str]) -> str:
        names = sorted(n.removeprefix("_cmd_") for n in dir(self) if n.startswith("_cmd_"))
        return "Built-in commands: " + " ".join(names) + "\n"

    def _cmd_exit(self, args: list[str]) -> str:
        self._exited = True
        return "logout\n"

    def _cmd_pwd(self, args: list[str]) -> str:
        return self.cwd + "\n"

    def _cmd_cd(self, args: list[str]) -> str:
        target = self._path(args[0]) if args else "/root"
        _, node = self.camera.fs.resolve(target)
        if not isinstance(node, Dir):
            raise InvalidInput(f"{args[0]}: Not a directory")
        self.cwd = target
        return ""

    def _cmd_ls(self, args: list[str]) -> str:
        flags = "".join(a[1:] for a in args if a.startswith("-"))
        paths = [a for a in args if not a.startswith("-")] or [self.cwd]
        out = []
        for arg in paths:
            _, node = self.camera.fs.resolve(self._path(arg))
            items = self.camera.fs.listdir(self._path(arg)) if isinstance(node, Dir) else [(arg, node)]
            if "a" not in flags:
                items = [(n, c) for n, c in items if not n.startswith(".")]
            if "l" in flags:
                for n, c in items:
                    stamp = datetime.fromtimestamp(c.mtime, UTC).strftime("%b %d %H:%M")
                    size = c.size if isinstance(c, File) else 4096
                    suffix = f" -> {c.target}" if isinstance(c, Link) else ""
                    out.append(
                        f"{mode_text(c).replace('L', 'l', 1)} 1 root root {size:>9} {stamp} {n}{suffix}"
                    )
            else:
                out.append("  ".join(n for n, _ in items))
        return "\n".join(x for x in out if x) + "\n" if any(out) else ""

    def _cmd_cat(self, args: list[str]) -> str:
        return "".join(self.camera.fs.read(self._path(a)).decode(errors="replace") for a in args)

    def _cmd_echo(self, args: list[str]) -> str:
        return " ".join(args) + "\n"

    def _cmd_touch(self, args: list[str]) -> str:
        for a in args:
            path = self._path(a)
            if not self.camera.fs.exists(path):
                self.camera.fs.write(path, b"")
        return ""

    def _cmd_mkdir(self, args: list[str]) -> str:
        parents = "-p" in args
        for a in (a for a in args if not a.startswith("-")):
            self.camera.fs.mkdir(self._path(a), parents=parents)
        return ""

    def _cmd_rm(self, args: list[str]) -> str:
        recursive = any(a.startswith("-") and ("r" in a or "R" in a) for a in args)
        for a in (a for a in args if not a.startswith("-")):
            path = self._path(a)
            if path == "/":
                raise InvalidInput("refusing to remove '/'")
            if isinstance(self.camera.fs.stat(path), Dir) and not recursive:
                raise InvalidInput(f"cannot remove '{a}': Is a directory")
            self.camera.fs.remove(path)
        return ""

    def _cmd_mv(self, args: list[str]) -> str:
        if len(args) != 2:
            raise InvalidInput("usage: mv SOURCE DEST")
        self.camera.fs.rename(self._path(args[0]), self._path(args[1]))
        return ""

    def _cmd_whoami(self, args: list[str]) -> str:
        return self.user + "\n"

    def _cmd_hostname(self, args: list[str]) -> str:
        return self.camera.fs.read("/etc/hostname").decode()

    def _cmd_uname(self, args: list[str]) -> str:
        if "-a" in args:
            return f"Linux {self.camera.id} 6.1.57-aipc #1 SMP PREEMPT aarch64 GNU/Linux\n"
        return "Linux\n"

    def _cmd_date(self, args: list[str]) -> str:
        return self.camera.clock.local().strftime("%a %b %d %H:%M:%S %Z %Y") + "\n"

    def _cmd_uptime(self, args: list[str]) -> str:
        return f"up {int(self.camera.power.uptime())} seconds\n"

    def _cmd_df(self, args: list[str]) -> str:
        rows = ["Filesystem     1B-blocks       Used  Available Use% Mounted on"]
        for p in self.camera.storage.partitions.values():
            s = p.spec
            pct = p.used * 100 // s.total
            rows.append(f"{s.device:<14} {s.total:>9} {p.used:>10} {p.free:>10} {pct:>3}% {s.mountpoint}")
        return "\n".join(rows) + "\n"

    def _lines_of(self, args: list[str]) -> tuple[int, list[str]]:
        count, files = 10, []
        i = 0
        while i < len(args):
            if args[i] == "-n" and i + 1 < len(args) and args[i + 1].isdigit():
                count, i = int(args[i + 1]), i + 2
                continue
            files.append(args[i])
            i += 1
        text = "".join(self.camera.fs.read(self._path(f)).decode(errors="replace") for f in files)
        return count, text.splitlines()

    def _cmd_head(self, args: list[str]) -> str:
        count, lines = self._lines_of(args)
        return "".join(line + "\n" for line in lines[:count])

    def _cmd_tail(self, args: list[str]) -> str:
        count, lines = self._lines_of(args)
        return "".join(line + "\n" for line in lines[-count:] if count)

    def _cmd_grep(self, args: list[str]) -> str:
        if not args:
            raise InvalidInput("usage: grep PATTERN FILE...")
        _, lines = self._lines_of(args[1:])
        return "".join(line + "\n" for line in lines if args[0] in line)

    def _cmd_journalctl(self, args: list[str]) -> str:
        """``journalctl -u SERVICE [-n N]``: the service's journal from the device logs."""
        service = args[args.index("-u") + 1] if "-u" in args and args.index("-u") + 1 < len(args) else ""
        count = 50
        if "-n" in args and args.index("-n") + 1 < len(args) and args[args.index("-n") + 1].isdigit():
            count = int(args[args.index("-n") + 1])
        if not service:
            raise InvalidInput("usage: journalctl -u SERVICE [-n N]")
        _, text = self.camera.logs.content("service", service, count)
        return text + "\n"

    def _cmd_stat(self, args: list[str]) -> str:
        if not args:
            raise NotFound("missing operand", resource="file")
        node = self.camera.fs.stat(self._path(args[0]))
        return f"  File: {args[0]}\n  Size: {self.camera.fs.size_of(node)}\nAccess: ({mode_text(node)})\n"
