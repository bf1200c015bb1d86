"""The real endpoint's keep-alive pool (api/members/upstream.py) against small raw HTTP servers on
loopback: what goes on the wire, kept connections and the ones the server closed meanwhile, bodies
both ways, interim and HEAD answers, and a server that breaks off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from api.members import upstream as upstream_mod
from api.members.upstream import Upstream, UpstreamError
from tests.sockets import until

pytestmark = pytest.mark.socket

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class RawServer:
    """Runs ``handler`` for each connection; keeps what every connection received."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)


async def collect(response: upstream_mod.Response) -> bytes:
    return b"".join([chunk async for chunk, _ in response.body()])


async def body_of(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def test_only_the_clients_headers_and_host_are_sent_and_a_connection_is_kept() -> None:
    heads: list[bytes] = []

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            heads.append(await read_request(reader))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Real: yes\r\n\r\nok")

    raw = RawServer(keep_alive)
    async with raw as url:
        up = Upstream("cam-01", url)
        try:
            for _ in range(3):
                response = await up.request("GET", "/api/x?y=%20", [(b"authorization", b"t")])
                assert (response.status, await collect(response)) == (200, b"ok")
                assert (b"X-Real", b"yes") in response.headers
                response.close()
        finally:
            await up.aclose()
    host = url.removeprefix("http://").encode()
    assert heads == [b"GET /api/x?y=%20 HTTP/1.1\r\nhost: " + host + b"\r\nauthorization: t\r\n\r\n"] * 3
    assert raw.connections == 1


async def test_a_kept_connection_the_server_closed_is_replaced_for_a_request_without_a_body() -> None:
    async def one_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        await writer.drain()
        # then the server closes the connection (the handler returns) without saying so first

    raw = RawServer(one_answer)
    async with raw as url:
        up = Upstream("automation", url)
        try:
            for _ in range(2):
                response = await up.request("GET", "/", [])
                assert await collect(response) == b"1"
                response.close()
                await asyncio.sleep(0.05)
            pool = up._pool
            await until(lambda: not (pool and pool.idle) or pool.idle[-1].closed)  # noticed when it closed
        finally:
            await up.aclose()
    assert raw.connections == 2


async def test_a_body_goes_with_its_length_or_chunked_and_a_100_continue_is_skipped() -> None:
    bodies: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await read_request(reader)
            if b"content-length: 5" in head:
                bodies.append(head + await reader.readexactly(5))
            else:
                data = b""
                while not data.endswith(b"0\r\n\r\n"):
                    data += await reader.read(100)
                bodies.append(head + data)
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")

    async with RawServer(echo) as url:
        up = Upstream("automation", url)
        try:
            sized = await up.request("POST", "/a", [(b"content-length", b"5")], body_of([b"he", b"llo"]))
            assert (sized.status, await collect(sized)) == (201, b"")
            sized.close()
            chunked = await up.request("POST", "/b", [], body_of([b"he", b"llo"]))
            assert chunked.status == 201
            chunked.close()
        finally:
            await up.aclose()
    assert bodies[0].endswith(b"content-length: 5\r\n\r\nhello")
    assert bodies[1].endswith(b"transfer-encoding: chunked\r\n\r\n2\r\nhe\r\n3\r\nllo\r\n0\r\n\r\n")


async def test_head_chunked_and_close_delimited_answers() -> None:
    answers = iter(
        [
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",  # HEAD: no body follows
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
        ]
    )

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(next(answers))

    async with RawServer(serve) as url:
        up = Upstream("automation", url)
        try:
            got = []
            for method in ("HEAD", "GET", "GET"):
                response = await up.request(method, "/", [])
                got.append(await collect(response))
                response.close()
            assert got == [b"", b"abcde", b"until the end"]
        finally:
            await up.aclose()


async def test_refused_garbled_and_broken_off_answers_raise() -> None:
    async def garbled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"NOT HTTP AT ALL\r\n\r\n")

    async def broken_off(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        await writer.drain()

    async with RawServer(garbled) as url:
        up = Upstream("automation", url)
        with pytest.raises(UpstreamError, match="unreadable"):
            await up.request("GET", "/", [])
        await up.aclose()
    async with RawServer(broken_off) as url:
        up = Upstream("automation", url)
        response = await up.request("GET", "/", [])
        with pytest.raises(UpstreamError, match="mid-answer"):
            await collect(response)
        response.close()
        await up.aclose()
    dead = RawServer(broken_off)
    async with dead as url:
        pass
    up = Upstream("automation", url)  # nothing listens there any more
    with pytest.raises(UpstreamError, match="cannot connect"):
        await up.request("GET", "/", [])
    await up.aclose()


async def test_a_large_answer_streams_and_reading_pauses_for_a_slow_client(monkeypatch) -> None:
    monkeypatch.setattr(upstream_mod, "READ_HIGH", 64 * 1024)
    size = 4 * 1024 * 1024

    async def big(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        for _ in range(size // 65536):
            writer.write(b"x" * 65536)
            await writer.drain()

    async with RawServer(big) as url:
        up = Upstream("cam-01", url)
        try:
            response = await up.request("GET", "/", [])
            conn = response._conn
            await asyncio.sleep(0.3)  # the client reads nothing meanwhile
            assert conn.buffered < size // 4  # the real side was paused, not read to the end
            assert len(await collect(response)) == size
            response.close()
        finally:
            await up.aclose()


async def test_a_request_without_a_body_is_sent_again_once_when_a_kept_connection_dies_unanswered() -> None:
    served = []

    async def answers_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1")
        served.append(1)
        await read_request(reader)  # the next one on this connection is dropped unanswered

    raw = RawServer(answers_once)
    async with raw as url:
        up = Upstream("automation", url)
        try:
            first = await up.request("GET", "/", [])
            assert await collect(first) == b"1"
            first.close()
            second = await up.request("GET", "/", [])  # kept connection: no answer; a new one answers
            assert await collect(second) == b"1"
            second.close()
            with pytest.raises(UpstreamError):  # with a body it cannot be sent again
                await up.request("POST", "/", [(b"content-length", b"1")], body_of([b"x"]))
        finally:
            await up.aclose()
    assert raw.connections == 2 and len(served) == 2
