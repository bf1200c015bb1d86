"""The listeners' bounds on what a client can hold (:mod:`twin.http_limits`), on real sockets."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI, Request, WebSocket

from tests.sockets import serving_app
from twin.http_limits import CONTROL, GO, HYPER, HttpLimits, protocol

CHUNK = 256 * 1024


def _app() -> FastAPI:
    app = FastAPI()

    @app.get("/")
    async def root(request: Request) -> dict:
        return {"headers": len(request.headers)}

    @app.post("/echo")
    async def echo(request: Request) -> dict:
        return {"size": len(await request.body())}

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text(await websocket.receive_text())
        await websocket.close()

    return app


@contextlib.asynccontextmanager
async def _served(limits: HttpLimits) -> AsyncIterator[tuple[str, int, type]]:
    cls = protocol(limits)
    async with serving_app(_app(), http=cls, timeout_keep_alive=limits.idle_timeout) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port), cls


async def _exchange(host: str, port: int, data: bytes) -> bytes:
    """Send ``data``, read until the server closes (the answer, or nothing)."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(data)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        return await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _get(headers: bytes = b"", target: bytes = b"/") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nhost: t\r\nconnection: close\r\n" + headers + b"\r\n"


@pytest.mark.parametrize("limits", [HYPER, GO, CONTROL], ids=["hyper", "go", "control"])
async def test_a_finished_head_past_the_limit_gets_431(limits: HttpLimits) -> None:
    async with _served(limits) as (host, port, cls):
        big = b"x-big: " + b"a" * (limits.max_head + 100) + b"\r\n"
        answer = await _exchange(host, port, _get(big))
        assert _status(answer) == 431
        assert b"connection: close" in answer
        assert cls.counters.too_large == 1
        fits = b"x-big: " + b"a" * (limits.max_head - 200) + b"\r\n"
        assert _status(await _exchange(host, port, _get(fits))) == 200


async def test_go_answers_its_own_431_text() -> None:
    async with _served(GO) as (host, port, _):
        answer = await _exchange(host, port, _get(b"x-big: " + b"a" * ((1 << 20) + 8192) + b"\r\n"))
        assert answer.endswith(b"\r\n\r\n431 Request Header Fields Too Large")
        fits = b"x-big: " + b"a" * ((1 << 20) - 100) + b"\r\n"  # Go allows 4 KiB past 1 MiB
        assert _status(await _exchange(host, port, _get(fits))) == 200


async def test_too_many_headers_get_431() -> None:
    async with _served(HYPER) as (host, port, _):
        many = b"".join(b"x-h%d: v\r\n" % i for i in range(101))
        assert _status(await _exchange(host, port, _get(many))) == 431
        fine = b"".join(b"x-h%d: v\r\n" % i for i in range(90))
        assert _status(await _exchange(host, port, _get(fine))) == 200


async def test_a_long_target_gets_414() -> None:
    async with _served(HYPER) as (host, port, cls):
        answer = await _exchange(host, port, _get(target=b"/?q=" + b"a" * 70_000))
        assert _status(answer) == 414
        assert cls.counters.too_long == 1
        assert _status(await _exchange(host, port, _get(target=b"/?q=" + b"a" * 60_000))) == 200


async def test_an_unfinished_huge_head_is_cut_off_without_buffering_it() -> None:
    """A header line that never ends: refused once the bytes read for it pass the limit, so the
    server never holds much more than the limit, however much the client sends."""
    async with _served(HYPER) as (host, port, cls):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET / HTTP/1.1\r\nhost: t\r\nx-endless: ")
        sent, answer = 0, b""
        try:
            while sent < 50 * 1024 * 1024:
                writer.write(b"a" * CHUNK)
                sent += CHUNK
                await asyncio.wait_for(writer.drain(), 30)
        except (ConnectionError, TimeoutError):
            pass
        with contextlib.suppress(ConnectionError):
            answer = await asyncio.wait_for(reader.read(), 30)
        writer.close()
        assert answer == b"" or _status(answer) == 431
        assert cls.counters.too_large == 1
        assert HYPER.max_head < cls.counters.largest_refused <= HYPER.max_head + 2 * CHUNK
        assert sent < 50 * 1024 * 1024  # the server stopped reading well before the client was done


async def _closed(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.read(), 30)


async def test_a_slow_head_is_closed_after_the_header_timeout() -> None:
    limits = HYPER.timed(header_timeout=0.3, idle_timeout=60)
    async with _served(limits) as (host, port, cls):
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET / HTTP/1.1\r\nhost: t\r\nx-slow: ")  # and never more
        assert await _closed(reader) == b""  # closed without an answer
        assert cls.counters.slow == 1
        writer.close()
        reader, writer = await asyncio.open_connection(host, port)  # nothing at all
        assert await _closed(reader) == b""
        assert cls.counters.slow == 2
        writer.close()


async def test_a_kept_alive_connection_is_closed_when_idle() -> None:
    limits = HYPER.timed(header_timeout=60, idle_timeout=0.3)
    async with _served(limits) as (host, port, cls):
        reader, writer = await asyncio.open_connection(host, port)
        for _ in range(2):  # keep-alive works, and the head timer does not cut a finished request
            writer.write(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
            assert b"headers" in await reader.readuntil(b"}")
        assert await _closed(reader) == b""
        assert cls.counters.slow == 0
        writer.close()


async def test_bodies_and_websockets_pass_as_before() -> None:
    import websockets

    async with _served(HYPER) as (host, port, cls):
        body = b"b" * (3 * CHUNK)  # a body is not a head, however big
        head = b"POST /echo HTTP/1.1\r\nhost: t\r\ncontent-type: application/octet-stream\r\n"
        head += b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body)
        answer = await _exchange(host, port, head + body)
        assert _status(answer) == 200 and answer.endswith(b'{"size":786432}')
        async with websockets.connect(f"ws://{host}:{port}/ws") as ws:
            await ws.send("hello")
            assert await ws.recv() == "hello"
        assert cls.counters.slow == cls.counters.too_large == 0


def test_the_timeouts_and_the_control_host_are_options() -> None:
    from twin.settings import parse

    _, settings = parse(["run"])
    assert (settings.header_timeout, settings.idle_timeout, settings.ws_auth_timeout) == (30, 60, 60)
    assert settings.control_host == "127.0.0.1"
    argv = ["run", "--header-timeout", "2.5", "--idle-timeout", "7", "--ws-auth-timeout", "9"]
    _, settings = parse([*argv, "--control-host", "0.0.0.0"])
    assert (settings.header_timeout, settings.idle_timeout, settings.ws_auth_timeout) == (2.5, 7, 9)
    assert settings.control_host == "0.0.0.0"


@pytest.mark.parametrize("value", ["0", "-1", "abc", "inf", "nan"])
@pytest.mark.parametrize("flag", ["--header-timeout", "--idle-timeout", "--ws-auth-timeout"])
def test_a_timeout_must_be_a_positive_number(flag: str, value: str, capsys: pytest.CaptureFixture) -> None:
    from twin.settings import parse

    with pytest.raises(SystemExit) as exit_:
        parse(["run", flag, value])
    assert exit_.value.code == 2
    assert flag in capsys.readouterr().err


@pytest.mark.socket
async def test_twin_run_serves_every_listener_with_its_vendors_limits(tmp_path) -> None:
    from tests.sockets import socket_settings
    from twin.serve import build, start, stop

    running = await start(build(socket_settings(header_timeout=0.3)), tmp_path)
    try:
        where = {name: running.listeners[name].address for name in ("automation", "control")}
        gateway = next(name for name in running.listeners if name.endswith("/http"))
        where["gateway"] = running.listeners[gateway].address
        for name, limits in (("automation", HYPER), ("gateway", GO), ("control", CONTROL)):
            host, port = where[name]
            answer = await _exchange(host, port, _get(b"x-big: " + b"a" * (limits.max_head + 1) + b"\r\n"))
            assert _status(answer) == 431, name
            assert answer.endswith(b"431 Request Header Fields Too Large") is (limits is GO)
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(b"GET / HTTP/1.1\r\nhost: t\r\n")  # a head that never ends
            assert await _closed(reader) == b"", name
            writer.close()
    finally:
        await stop(running)


@pytest.mark.socket
async def test_the_recorder_holds_its_clients_to_the_recorded_members_limits(tmp_path) -> None:
    from api.members.record import RecordOptions, record
    from tests.sockets import socket_settings
    from twin.serve import build, start, stop

    up = await start(build(socket_settings()), tmp_path)
    try:
        cls = protocol(GO.timed(header_timeout=0.3, idle_timeout=60))
        address: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        options = RecordOptions("gateway", up.url("cam-01/http"), tmp_path / "cam.ndjson", duration=120)
        stopped = asyncio.Event()
        task = asyncio.create_task(record(options, address.set_result, stopped, http=cls))
        host, port = (await asyncio.wait_for(address, 30)).removeprefix("http://").rsplit(":", 1)
        answer = await _exchange(host, int(port), _get(b"x-big: " + b"a" * (GO.max_head + 1) + b"\r\n"))
        assert _status(answer) == 431
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET / HTTP/1.1\r\n")
        assert await _closed(reader) == b""
        writer.close()
        assert cls.counters.too_large == cls.counters.slow == 1
        stopped.set()
        await asyncio.wait_for(task, 30)
    finally:
        await stop(up)
