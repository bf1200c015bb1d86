"""The listeners' transport wrapper: a response's head leaves with what follows it."""

from __future__ import annotations

import asyncio

from twin.http_limits import Coalescing

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n"


class Recorder:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = self.aborted = self.eof = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def writelines(self, lines) -> None:
        self.writes.append(b"".join(lines))  # one call: one system call for the transport

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


def wrapped() -> tuple[Recorder, Coalescing]:
    raw = Recorder()
    return raw, Coalescing(raw, asyncio.get_running_loop())  # type: ignore[arg-type]


async def test_a_head_leaves_with_its_body_at_once() -> None:
    raw, transport = wrapped()
    transport.write(HEAD)
    assert raw.writes == [] and transport.get_write_buffer_size() == 7 + len(HEAD)
    transport.write(b"body")
    assert raw.writes == [HEAD + b"body"]  # no waiting for the end of the turn
    await asyncio.sleep(0)
    assert raw.writes == [HEAD + b"body"]  # the scheduled flush finds nothing held
    assert transport.get_extra_info("peername") == "extra:peername"  # the rest is the transport's


async def test_other_writes_go_straight_through_and_a_lone_head_at_the_end_of_the_turn() -> None:
    raw, transport = wrapped()
    transport.write(b"data: chunk\n\n")
    assert raw.writes == [b"data: chunk\n\n"]
    transport.write(HEAD)
    await asyncio.sleep(0)
    assert raw.writes[1:] == [HEAD]
    transport.writelines([b"a", b"b"])
    assert raw.writes[2:] == [b"a", b"b"]


async def test_close_eof_and_unwrapping_send_a_held_head_first_and_abort_drops_it() -> None:
    raw, transport = wrapped()
    transport.write(HEAD)
    transport.close()
    assert raw.writes == [HEAD] and raw.closed

    raw, transport = wrapped()
    transport.write(HEAD)
    transport.write_eof()
    assert raw.writes == [HEAD] and raw.eof

    raw, transport = wrapped()
    transport.write(HEAD)
    assert transport.transport is raw and raw.writes == [HEAD]

    raw, transport = wrapped()
    transport.write(HEAD)
    transport.abort()
    await asyncio.sleep(0)
    assert raw.writes == [] and raw.aborted


async def test_nothing_is_written_to_a_closing_transport() -> None:
    raw, transport = wrapped()
    transport.write(HEAD)
    raw.closed = True  # the peer went away in between
    await asyncio.sleep(0)
    assert raw.writes == []
