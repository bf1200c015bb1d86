"""A simulated ``/bin/sh`` inside a container, for the exec WebSocket: a handful of commands over
the container's own state. Nothing is ever run on the host."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from twin.camera.container_records import Container

PROMPT = "/ # "
FILES = {
    "/": ["app", "bin", "dev", "etc", "proc", "tmp", "usr", "var"],
    "/app": ["app.py", "config.yaml", "requirements.txt"],
}
PS = "PID   USER     TIME  COMMAND\n    1 app       0:01 /app/entrypoint\n   27 app       0:00 /bin/sh\n"
OS_RELEASE = 'NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.20.3\nPRETTY_NAME="Alpine Linux v3.20"\n'


class ContainerLogs(Protocol):
    def logs(self, container_id: str, tail: int) -> tuple[str, ...]: ...


class ContainerShell:
    def __init__(self, runtime: ContainerLogs, container: Container) -> None:
        self.runtime = runtime
        self.container = container
        self.cwd = "/"
        self.closed = False

    def banner(self) -> str:
        return PROMPT

    def feed(self, line: str) -> str:
        """Run one command line; returns its output followed by the next prompt."""
        if self.container.state != "running":
            self.closed = True
            return "\r\ncontainer stopped\r\n"
        try:
            argv = shlex.split(line)
        except ValueError:
            return f"sh: syntax error\r\n{PROMPT}"
        if not argv:
            return PROMPT
        if argv[0] == "exit":
            self.closed = True
            return "exit\r\n"
        out = self._run(argv)
        return (out.replace("\n", "\r\n") if out else "") + PROMPT

    def _run(self, argv: list[str]) -> str:
        cmd, args = argv[0], argv[1:]
        c = self.container
        if cmd == "echo":
            return " ".join(args) + "\n"
        if cmd == "pwd":
            return self.cwd + "\n"
        if cmd == "cd":
            target = args[0] if args else "/"
            target = target if target.startswith("/") else f"{self.cwd.rstrip('/')}/{target}"
            if (target.rstrip("/") or "/") not in FILES:
                return f"sh: cd: can't cd to {args[0] if args else '/'}: No such file or directory\n"
            self.cwd = target.rstrip("/") or "/"
            return ""
        if cmd == "ls":
            path = args[-1] if args and not args[-1].startswith("-") else self.cwd
            entries = FILES.get(path.rstrip("/") or "/")
            if entries is None:
                return f"ls: {path}: No such file or directory\n"
            return "  ".join(entries) + "\n"
        if cmd == "hostname":
            return c.id + "\n"
        if cmd == "whoami":
            return "app\n"
        if cmd == "env":
            env = {"HOSTNAME": c.id, "APP_ID": c.app_id, "PATH": "/usr/local/bin:/usr/bin:/bin", **c.env}
            return "".join(f"{k}={v}\n" for k, v in env.items())
        if cmd == "cat" and args == ["/etc/os-release"]:
            return OS_RELEASE
        if cmd == "cat":
            return "".join(f"cat: can't open '{a}': No such file or directory\n" for a in args)
        if cmd == "ps":
            return PS
        if cmd == "uname":
            return (
                "Linux " + c.id + " 6.1.84-aipc #1 SMP PREEMPT aarch64 Linux\n" if "-a" in args else "Linux\n"
            )
        if cmd == "tail" and args and args[-1] in ("/proc/1/fd/1", "log"):
            return "".join(ln + "\n" for ln in self.runtime.logs(c.id, 10))
        return f"sh: {cmd}: not found\n"
