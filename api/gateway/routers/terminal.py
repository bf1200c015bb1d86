"""``/api/v1/terminal/ws`` (the web terminal: a simulated login shell over the device's virtual file
system) and ``/api/v1/ssh/*`` (sshd settings, status and its log).

The terminal, as the device runs it: the server prompts in-band for ``login:`` and ``Password:``
(3 attempts, 60 s of device time); input frames are ``{"type":"input","data":…}`` or
``{"type":"resize","cols":…,"rows":…}``, anything that is not JSON is typed as it is; output is text
frames. Typed characters are echoed (not while the password is typed), a line runs on Enter.
"""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import APIRouter, Depends, Request, WebSocket
from fastapi.responses import JSONResponse
from starlette.websockets import WebSocketDisconnect

from api import json_input
from api.gateway import errors, schemas
from api.gateway.deps import Backend, require_session
from api.gateway.routers._body import is_json
from api.gateway.schemas import files as shapes
from api.gateway.ws import plain_get, until_first_ends, ws_backend
from hardware.ports.clock import Clock
from hardware.ports.errors import DomainError, InvalidInput
from hardware.ports.gateway_files import TerminalSession

router = APIRouter(prefix="/api/v1/ssh", tags=["ssh"], dependencies=[Depends(require_session)])
ws_router = APIRouter(prefix="/api/v1", tags=["terminal"])

LOGIN_ATTEMPTS = 3
LOGIN_TIMEOUT_S = 60.0
MAX_LINE = 4096
MAX_PENDING_LINES = 64
"""Typed lines the shell has not run yet; past this the socket is not read until it catches up."""


@router.get("/config")
async def get_config(backend: Backend) -> JSONResponse:
    return schemas.ok({"config": backend.shell.ssh_config()})


@router.post("/config")
async def set_config(request: Request, backend: Backend) -> JSONResponse:
    if not is_json(request):
        return errors.unsupported_media()
    changes, restart = shapes.ssh_changes(await request.body())
    if not changes:
        raise InvalidInput("No supported SSH configuration fields were provided")
    backend.shell.set_ssh_config(changes, restart)
    answer: dict[str, object] = {"status": "updated", "changes": changes}  # SetConfig's answer
    return schemas.ok(answer | {"restarted": True} if restart else answer)


@router.get("/status")
async def status(backend: Backend) -> JSONResponse:
    return schemas.ok({"status": backend.shell.ssh_status()})


@router.get("/logs")
async def logs(backend: Backend) -> JSONResponse:
    return schemas.ok({"logs": backend.shell.ssh_logs()})


# The web terminal --------------------------------------------------------------------------------
class _Keys:
    """Turns input frames into typed text, and typed text into lines."""

    def __init__(self) -> None:
        self.buffer = ""

    @staticmethod
    def text_of(frame: str) -> str:
        try:
            message = json_input.loads(frame.encode(), json_input.GO)
        except ValueError:
            return frame
        if isinstance(message, dict):
            if message.get("type") == "input" and isinstance(message.get("data"), str):
                return message["data"]
            return ""  # resize and anything else: no keystrokes
        return frame

    def feed(self, text: str) -> tuple[str, list[str]]:
        """(what to echo, completed lines)."""
        echo: list[str] = []
        lines: list[str] = []
        for ch in text:
            if ch in "\r\n":
                if ch == "\n" and echo and echo[-1] == "\r\n":
                    continue
                lines.append(self.buffer)
                self.buffer = ""
                echo.append("\r\n")
            elif ch in "\x7f\b":
                if self.buffer:
                    self.buffer = self.buffer[:-1]
                    echo.append("\b \b")
            elif ch == "\x03":
                self.buffer = ""
                echo.append("^C\r\n")
                lines.append("")
            elif ch.isprintable() and len(self.buffer) < MAX_LINE:
                self.buffer += ch
                echo.append(ch)
        return "".join(echo), lines


@ws_router.websocket("/terminal/ws")
async def terminal(websocket: WebSocket) -> None:
    backend = await ws_backend(websocket)
    if backend is None:
        return
    session: TerminalSession = backend.shell.open_terminal()
    await websocket.accept()
    lines: asyncio.Queue[str | None] = asyncio.Queue(MAX_PENDING_LINES)
    keys = _Keys()
    state = {"echo": True}

    async def reader() -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError):
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    break
                frame = message.get("text") or (message.get("bytes") or b"").decode(errors="replace")
                echo, done = keys.feed(keys.text_of(frame))
                if echo and state["echo"]:
                    await websocket.send_text(echo)
                elif echo.endswith("\r\n"):
                    await websocket.send_text("\r\n")
                for line in done:
                    await lines.put(line)
        await lines.put(None)

    async def shell() -> None:
        with contextlib.suppress(WebSocketDisconnect, RuntimeError, DomainError):
            await websocket.send_text(session.banner())
            if not await _login(websocket, session, lines, state, backend.clock):
                return
            await websocket.send_text(session.prompt())
            while not session.closed:
                line = await lines.get()
                if line is None or session.closed:
                    return
                await websocket.send_text(session.run(line))
                if session.closed:
                    return
                await websocket.send_text(session.prompt())

    async def watchdog() -> None:
        """The device going down ends the session, typing or not."""
        with contextlib.suppress(DomainError):
            while not session.closed:
                await backend.clock.sleep(1.0, background=True)

    await until_first_ends(websocket, reader(), shell(), watchdog())


async def _login(
    websocket: WebSocket,
    session: TerminalSession,
    lines: asyncio.Queue[str | None],
    state: dict[str, bool],
    clock: Clock,
) -> bool:
    """The in-band login: up to ``LOGIN_ATTEMPTS`` tries within ``LOGIN_TIMEOUT_S`` of device time."""

    async def attempts() -> bool:
        for _ in range(LOGIN_ATTEMPTS):
            await websocket.send_text("login: ")
            username = await lines.get()
            if username is None:
                return False
            state["echo"] = False
            await websocket.send_text("Password: ")
            password = await lines.get()
            state["echo"] = True
            if password is None:
                return False
            if session.login(username.strip(), password):
                return True
            await websocket.send_text("\r\nLogin incorrect\r\n")
        return False

    login = asyncio.create_task(attempts())
    timeout = asyncio.create_task(clock.sleep(LOGIN_TIMEOUT_S, background=True))
    try:
        await asyncio.wait([login, timeout], return_when=asyncio.FIRST_COMPLETED)
    finally:
        timeout.cancel()
        with contextlib.suppress(asyncio.CancelledError, DomainError):
            await timeout
    if not login.done():
        login.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await login
        await websocket.send_text("\r\nLogin timed out after 60 seconds.\r\n")
        return False
    ok = login.result()
    if ok:
        await websocket.send_text("\r\n")
    return ok


plain_get(ws_router, "/terminal/ws")
