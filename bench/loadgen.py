"""A small asyncio HTTP/1.1 keep-alive load generator (no pipelining), in pure Python.

Each of ``connections`` workers opens one connection and sends ``GET <path>`` (with any extra request
headers, e.g. ``Authorization``) again as soon as the previous response has been read in full; one
connection thus gives sequential requests, for latency. Responses that complete inside the measured
window (after the warm-up) are counted, with their latency. Everything is bounded by time: workers
stop sending at the deadline, and whatever is still in flight a grace period later is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

GRACE = 2.0  # seconds after the deadline before stragglers are cancelled
CONNECT_TIMEOUT = 5.0


class ProtocolError(Exception):
    """The server sent something this client does not understand."""


# What can go wrong on a request; the connection is then closed and opened again.
REQUEST_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ProtocolError, ValueError)


@dataclass
class Window:
    """The measured interval, in ``time.perf_counter`` seconds."""

    start: float
    end: float

    def __contains__(self, t: float) -> bool:
        return self.start <= t <= self.end


@dataclass
class Tally:
    """What the workers saw inside the window."""

    completed: int = 0
    non_200: int = 0
    errors: int = 0  # connection errors, timeouts, protocol errors (anywhere in the run)
    latencies: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Result:
    """One trial's numbers."""

    requests: int  # completed responses in the window, whatever their status (like wrk)
    non_200: int
    errors: int
    duration: float
    p50_ms: float
    p99_ms: float
    server_cpu_s: float | None = None
    """CPU seconds the server process used over the measured window (None: not measured)."""

    @property
    def rps(self) -> float:
        return self.requests / self.duration if self.duration > 0 else 0.0

    @property
    def per_core_second(self) -> float:
        """Requests per second of server CPU time: what one fully busy server core would answer."""
        if not self.server_cpu_s:
            return math.nan
        return self.requests / self.server_cpu_s

    @property
    def server_cores(self) -> float:
        """The server's CPU time over the window's wall time (1.0: one core busy throughout)."""
        if self.server_cpu_s is None or self.duration <= 0:
            return math.nan
        return self.server_cpu_s / self.duration


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (``q`` in 0..100); NaN when empty."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def request_bytes(path: str, headers: Mapping[str, str] | None = None) -> bytes:
    """The one request every worker sends: ``GET path`` with ``Host`` and then ``headers``, in order."""
    lines = [f"GET {path} HTTP/1.1", "Host: x"]
    for name, value in (headers or {}).items():
        if any(c in name + value for c in "\r\n") or not name or ":" in name:
            raise ValueError(f"bad request header {name!r}")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """Status code and lower-cased headers of a response head (status line + headers + blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"bad status line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def read_chunked(reader: asyncio.StreamReader) -> None:
    """Consume a ``transfer-encoding: chunked`` body, trailers included."""
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            break
        await reader.readexactly(size + 2)  # data + CRLF
    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, then the final blank line
        pass


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    """Read one full response; returns the status and whether the server keeps the connection open."""
    status, headers = parse_head(await reader.readuntil(b"\r\n\r\n"))
    if "chunked" in headers.get("transfer-encoding", "").lower():
        await read_chunked(reader)
    elif "content-length" in headers:
        await reader.readexactly(int(headers["content-length"]))
    else:
        raise ProtocolError("response without content-length or chunked encoding")
    return status, headers.get("connection", "").lower() != "close"


async def close(writer: asyncio.StreamWriter | None) -> None:
    """Close a connection, ignoring errors."""
    if writer is None:
        return
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def worker(host: str, port: int, request: bytes, window: Window, tally: Tally) -> None:
    """Send requests back to back on one keep-alive connection until the window ends."""
    writer: asyncio.StreamWriter | None = None
    try:
        while time.perf_counter() < window.end:
            if writer is None:
                connect = asyncio.open_connection(host, port)
                reader, writer = await asyncio.wait_for(connect, CONNECT_TIMEOUT)
            sent = time.perf_counter()
            try:
                writer.write(request)
                status, keep_alive = await read_response(reader)
            except REQUEST_ERRORS:
                tally.errors += 1
                await close(writer)
                writer = None
                continue
            done = time.perf_counter()
            if done in window:
                tally.completed += 1
                tally.non_200 += status != 200
                tally.latencies.append(done - sent)
            if not keep_alive:
                await close(writer)
                writer = None
    except (OSError, TimeoutError):
        tally.errors += 1
    finally:
        await close(writer)


async def run(
    host: str,
    port: int,
    path: str,
    connections: int,
    duration: float,
    warmup: float,
    headers: Mapping[str, str] | None = None,
    cpu: Callable[[], float] | None = None,
) -> Result:
    """Load ``http://host:port/path`` with ``connections`` workers; measure ``duration`` after ``warmup``.

    ``headers`` are sent with every request (none by default, as for ``GET /api/health``). ``cpu``
    reads the server's CPU seconds so far; it is read as the window opens and as it closes.
    """
    now = time.perf_counter()
    window = Window(now + warmup, now + warmup + duration)
    tally = Tally()
    request = request_bytes(path, headers)
    tasks = [asyncio.create_task(worker(host, port, request, window, tally)) for _ in range(connections)]
    used: list[float] = []
    if cpu is not None:
        loop = asyncio.get_running_loop()
        offset = loop.time() - time.perf_counter()
        for at in (window.start, window.end):
            loop.call_at(at + offset, lambda: used.append(cpu()))
    _, pending = await asyncio.wait(tasks, timeout=warmup + duration + GRACE)
    for task in pending:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    tally.errors += len(pending)
    latencies = sorted(tally.latencies)
    return Result(
        requests=tally.completed,
        non_200=tally.non_200,
        errors=tally.errors,
        duration=duration,
        p50_ms=percentile(latencies, 50) * 1000,
        p99_ms=percentile(latencies, 99) * 1000,
        server_cpu_s=used[1] - used[0] if len(used) == 2 else None,
    )
