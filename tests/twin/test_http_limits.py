"""The listeners' transport wrapper: writes within one turn of the loop leave as one."""

from __future__ import annotations

import asyncio

from twin.http_limits import Coalescing


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = self.eof = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def get_write_buffer_size(self) -> int:
        return 7

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def write_eof(self) -> None:
        self.eof = True

    def get_extra_info(self, name: str) -> str:
        return f"extra:{name}"


async def test_writes_of_one_turn_leave_as_one() -> None:
    raw = Recorder()
    transport = Coalescing(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"body")
    assert raw.writes == [] and transport.get_write_buffer_size() == 7 + 23
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody"]
    transport.writelines([b"a", b"b"])
    await asyncio.sleep(0)
    assert raw.writes[1:] == [b"ab"]
    assert transport.get_extra_info("peername") == "extra:peername"  # everything else is the transport's


async def test_close_and_eof_send_what_is_pending_first_and_abort_drops_it() -> None:
    loop = asyncio.get_running_loop()
    raw = Recorder()
    transport = Coalescing(raw, loop)  # type: ignore[arg-type]
    transport.write(b"last")
    transport.close()
    assert raw.writes == [b"last"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing left
    assert raw.writes == [b"last"]

    raw = Recorder()
    transport = Coalescing(raw, loop)  # type: ignore[arg-type]
    transport.write(b"tail")
    transport.write_eof()
    assert raw.writes == [b"tail"] and raw.eof

    raw = Recorder()
    transport = Coalescing(raw, loop)  # type: ignore[arg-type]
    transport.write(b"gone")
    transport.abort()
    await asyncio.sleep(0)
    assert raw.writes == [] and raw.aborted


async def test_nothing_is_written_to_a_closing_transport() -> None:
    raw = Recorder()
    transport = Coalescing(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    transport.write(b"late")
    raw.closed = True  # the peer went away in between
    await asyncio.sleep(0)
    assert raw.writes == []
