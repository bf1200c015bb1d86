"""The twin's HTTP listeners: uvicorn servers bound here, started on one event loop, closed while
their member is down and opened again on the same address, and finished within a grace period."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass
from typing import Any

import uvicorn

from api import ws_denial
from api.members.passthrough import Passthrough
from twin.http_limits import HYPER, HttpLimits, protocol

log = logging.getLogger("twin")

SHUTDOWN_GRACE_S = 2  # uvicorn's graceful shutdown: open connections get this long, then are closed
START_TIMEOUT_S = 10

Tls = tuple[str, str]
"""A certificate file and its key file."""


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signal handling to :func:`twin.serve.serve` (several share one loop)."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


@dataclass
class Listener:
    name: str
    server: _Server
    scheme: str = "http"
    task: asyncio.Task | None = None
    bound: tuple[str, int] | None = None
    """Where it listens, kept so a listener closed while its camera is down re-binds the same port."""

    @property
    def address(self) -> tuple[str, int]:
        if self.bound is not None:
            return self.bound
        sock = self.server.servers[0].sockets[0]
        host, port = sock.getsockname()[:2]
        return host, port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"{self.scheme}://{host}:{port}"

    @property
    def serving(self) -> bool:
        return self.task is not None and not self.task.done()


def server(app: Any, host: str, port: int, tls: Tls | None = None, limits: HttpLimits = HYPER) -> _Server:
    """A uvicorn server for ``app`` (a member's app, or one already tracking its WebSocket denials)
    on ``host:port``; with ``tls`` (certificate and key files), over HTTPS; its clients held to
    ``limits`` (:mod:`twin.http_limits`)."""
    own = not isinstance(app, Passthrough)  # a real member's Date and Server headers are its own
    config = uvicorn.Config(
        ws_denial.tracking_denials(app),
        http=protocol(limits),
        timeout_keep_alive=limits.idle_timeout,  # type: ignore[arg-type]  # a float works as well
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="websockets-sansio",
        ws_per_message_deflate=False,  # as the automation server (tungstenite has none); saves zlib per frame
        server_header=own,
        date_header=own,
        ssl_certfile=tls[0] if tls else None,
        ssl_keyfile=tls[1] if tls else None,
    )
    return _Server(config)


def bind(listener: Listener) -> socket.socket:
    """Bind here rather than in uvicorn, which would ``sys.exit`` from inside the event loop."""
    host, port = listener.server.config.host, listener.server.config.port
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # accepted sockets inherit it
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise OSError(err.errno, f"{listener.name}: cannot listen on {host}:{port} ({err.strerror})") from err
    sock.set_inheritable(True)
    return sock


async def open_all(listeners: list[Listener]) -> None:
    """Bind every listener first (none starts if one cannot bind: ``OSError``), then start them all
    and wait until each serves."""
    sockets: list[socket.socket] = []
    try:
        for listener in listeners:
            sockets.append(bind(listener))
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    for listener, sock in zip(listeners, sockets, strict=True):
        launch(listener, sock)
    for listener in listeners:
        if not await serving(listener):
            raise OSError(f"{listener.name}: server failed to start")
        listener.bound = listener.address


def launch(listener: Listener, sock: socket.socket) -> None:
    listener.task = asyncio.create_task(listener.server.serve(sockets=[sock]), name=listener.name)


async def serving(listener: Listener) -> bool:
    """Wait for a launched listener to serve: ``False`` if it ended or did not start in time."""
    for _ in range(int(START_TIMEOUT_S / 0.005)):
        if listener.server.started or listener.task is None or listener.task.done():
            break
        await asyncio.sleep(0.005)
    return listener.server.started


async def power(listener: Listener, up: bool) -> None:
    """Open a listener that is closed while its member is up, close one that serves while it is down."""
    task = listener.task if listener.serving else None
    if up and task is None:
        try:
            await reopen(listener)
        except OSError as err:  # the port was taken meanwhile: stay down, retry on the next event
            log.warning("twin: %s", err)
    elif not up and task is not None:
        listener.server.should_exit = True
        await finish(task)
        log.info("twin: %s closed while its camera is down", listener.name)


async def reopen(listener: Listener) -> None:
    old = listener.server.config
    host, port = listener.address
    tls = (str(old.ssl_certfile), str(old.ssl_keyfile)) if old.ssl_certfile else None
    limits = getattr(old.http, "limits", HYPER)
    listener.server = server(old.app, host, port, tls, limits)
    launch(listener, bind(listener))
    await serving(listener)
    log.info("twin: %s listening again", listener.name)


async def finish(task: asyncio.Task) -> None:
    """Wait for a server task that was told to exit; cancel it if it outlives its grace period."""
    try:
        await asyncio.wait_for(asyncio.shield(task), SHUTDOWN_GRACE_S + 3)
    except TimeoutError:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    except BaseException:  # the task's own failure: it is finished either way
        current = asyncio.current_task()
        if current is not None and current.cancelling():  # unless we were cancelled while waiting
            raise


async def close_all(listeners: list[Listener]) -> None:
    for listener in listeners:
        listener.server.should_exit = True
    for listener in listeners:
        if listener.task is not None:
            await finish(listener.task)
