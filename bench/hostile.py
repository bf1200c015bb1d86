"""``python -m bench.hostile``: a hostile client on this machine against ``twin run`` (black box).

1. **Cross-site control**: ``POST /reset`` as a web page would send it (``Origin:
   http://evil.example``, ``Content-Type: text/plain``), and with a rebound ``Host``, after the
   clock was advanced: each must be refused and the clock must still read the advanced time.
2. **Endless headers**: ``--streams`` connections to the automation API (and half as many to a
   camera's gateway) each send a header line of ``--mib`` MiB that never ends, all at once. Each
   must get ``431`` or a close; the twin's RSS (``VmRSS``) may grow by at most ``--rss-limit`` MB.
3. **Idle sockets** (the twin runs with ``--header-timeout`` and ``--ws-auth-timeout`` of
   ``--timeout`` seconds): ``--slowloris`` connections that never finish their head and ``--ws``
   event WebSockets that never authenticate must all be closed within 10 x the timeout.
4. **Stalled subscribers**: ``--stalled`` SSE subscribers that never read while 1 000 events of
   20 KB are published, stalled for ``--stall-seconds``; then they all leave at once, with
   ``--probes`` health probes (2 s each) sent meanwhile: every probe must answer.

Exit status 0 when everything held, 1 otherwise; ``--json PATH`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import httpx

from bench import servers
from bench.soak import gateway_of

CHUNK = 256 * 1024
EVIL = "http://evil.example"


def _post(url: str, headers: dict[str, str], body: bytes = b"{}") -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=servers.SETUP_TIMEOUT) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def cross_site(twin: servers.Server) -> dict[str, Any]:
    """The refusals of a page's ``POST /reset``, and whether the world was left alone."""
    control = f"http://{servers.HOST}:{twin.control_port}"
    advanced = servers.advance_clock(twin, 60)
    tries = {
        "evil origin, text/plain": {"Origin": EVIL, "Content-Type": "text/plain"},
        "evil origin, json": {"Origin": EVIL, "Content-Type": "application/json"},
        "form": {"Content-Type": "application/x-www-form-urlencoded"},
        "rebound host": {"Host": "evil.example", "Content-Type": "application/json"},
    }
    statuses = {name: _post(control + "/reset", headers) for name, headers in tries.items()}
    _, clock = servers.http_json("GET", control + "/clock")
    after = clock.get("sim_time") if isinstance(clock, dict) else None
    held = all(status in (403, 415) for status in statuses.values()) and after == advanced
    return {"statuses": statuses, "sim_time_before": advanced, "sim_time_after": after, "held": held}


async def _endless(host: str, port: int, mib: int) -> str:
    """One connection sending a ``mib`` MiB header line that never ends: ``431``, ``closed`` (the
    server hung up first), ``open`` (it took everything and said nothing) or ``answered``."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"GET /api/health HTTP/1.1\r\nHost: twin\r\nX-Endless: ")
    try:
        for _ in range(mib * 1024 * 1024 // CHUNK):
            writer.write(b"a" * CHUNK)
            await asyncio.wait_for(writer.drain(), 60)
    except (ConnectionError, TimeoutError):
        pass
    try:
        answer = await asyncio.wait_for(reader.read(256), 30)
    except ConnectionError:
        answer = b""
    except TimeoutError:
        return "open: no answer and no close in 30 s"
    finally:
        writer.close()
    if answer.startswith(b"HTTP/1.1 431"):
        return "431"
    return "closed" if not answer else "answered: " + answer[:40].decode("latin-1")


async def endless_headers(twin: servers.Server, streams: int, mib: int) -> dict[str, Any]:
    gateway = gateway_of(twin).removeprefix("http://")
    gateway_host, gateway_port = gateway.rsplit(":", 1)
    before = servers.rss_mb(twin.proc.pid) or 0.0
    peak = before
    jobs = [_endless(servers.HOST, twin.port, mib) for _ in range(streams)]
    jobs += [_endless(gateway_host, int(gateway_port), mib) for _ in range(max(1, streams // 2))]
    tasks = [asyncio.ensure_future(job) for job in jobs]
    while not all(task.done() for task in tasks):
        peak = max(peak, servers.rss_mb(twin.proc.pid) or 0.0)
        await asyncio.wait(tasks, timeout=0.05)
    outcomes = [task.result() for task in tasks]
    after = servers.rss_mb(twin.proc.pid) or 0.0
    return {
        "automation": outcomes[:streams],
        "gateway": outcomes[streams:],
        "rss_before_mb": round(before, 1),
        "rss_peak_mb": round(peak, 1),
        "rss_after_mb": round(after, 1),
        "growth_mb": round(peak - before, 1),
    }


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        while await asyncio.wait_for(reader.read(65536), seconds):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        pass
    return True


async def idle_sockets(twin: servers.Server, slowloris: int, ws: int, timeout: float) -> dict[str, Any]:
    """Slow heads and event WebSockets that never authenticate: how many the twin closed in time."""
    heads = []
    for _ in range(slowloris):
        reader, writer = await asyncio.open_connection(servers.HOST, twin.port)
        writer.write(b"GET /api/health HTTP/1.1\r\nHost: twin\r\nX-Slow: ")
        heads.append((reader, writer))
    sockets = []
    handshake = b"GET /api/events/ws HTTP/1.1\r\nHost: twin\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    handshake += b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    for _ in range(ws):
        reader, writer = await asyncio.open_connection(servers.HOST, twin.port)
        writer.write(handshake)
        sockets.append((reader, writer))
    limit = 10 * timeout
    closed = await asyncio.gather(*(_closed_within(r, limit) for r, _ in heads + sockets))
    for _, writer in heads + sockets:
        writer.close()
    return {
        "slowloris_closed": sum(closed[:slowloris]),
        "slowloris": slowloris,
        "ws_closed": sum(closed[slowloris:]),
        "ws": ws,
        "within_s": limit,
    }


async def stalled_subscribers(
    twin: servers.Server, stalled: int, probes: int, stall: float, events: int = 1000
) -> dict[str, Any]:
    """SSE subscribers that never read fill up on events, then leave at once during health probes."""
    token = servers.initialize_admin(twin, "hostile", "hostile123")
    subscribers = []
    request = f"GET /api/events/stream?token={token} HTTP/1.1\r\nHost: twin\r\n\r\n".encode()
    for _ in range(stalled):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect((servers.HOST, twin.port))
        sock.sendall(request)
        subscribers.append(sock)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=twin.url, headers=auth, timeout=60) as http:
        blob = "x" * 20_000  # events the stalled ones never read: far more than their sockets hold
        for start in range(0, events, 10):
            batch = [
                {"event_type": "hostile", "data": {"i": i, "blob": blob}} for i in range(start, start + 10)
            ]
            await asyncio.gather(*(http.post("/api/events", json=body) for body in batch))
    await asyncio.sleep(stall)  # past the encoder's cache: what they left would be encoded anew
    async with httpx.AsyncClient(base_url=twin.url, timeout=2.0) as http:

        async def probe(delay: float) -> bool:
            await asyncio.sleep(delay)
            try:
                return (await http.get("/api/health")).status_code == 200
            except httpx.HTTPError:
                return False

        pending = [asyncio.ensure_future(probe(i * 0.05)) for i in range(probes)]
        for sock in subscribers:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        answered = await asyncio.gather(*pending)
    return {"stalled": stalled, "probes": probes, "probes_answered": sum(answered)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hostile", description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, default=4, help="endless-header connections (default 4)")
    parser.add_argument("--mib", type=int, default=50, help="MiB each one sends (default 50)")
    parser.add_argument("--rss-limit", type=float, default=20.0, help="allowed RSS growth, MB (default 20)")
    parser.add_argument("--timeout", type=float, default=2.0, help="the twin's header and WS auth timeouts")
    parser.add_argument("--slowloris", type=int, default=800, help="slow-head connections (default 800)")
    parser.add_argument("--ws", type=int, default=1000, help="never-authenticating WebSockets (default 1000)")
    parser.add_argument("--stalled", type=int, default=200, help="stalled SSE subscribers (default 200)")
    parser.add_argument("--stall-seconds", type=float, default=35.0, help="how long they stall (default 35)")
    parser.add_argument("--probes", type=int, default=20, help="health probes while they leave (default 20)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    port, control_port = servers.free_port(), servers.free_port()
    timeouts = ("--header-timeout", str(args.timeout), "--ws-auth-timeout", str(args.timeout))
    flags = ("--step", "--rate-limit", str(servers.RATE_LIMIT), *timeouts)
    twin = servers.launch(
        "twin", servers.twin_run(servers.SCENARIO, port, control_port, *flags), port, control_port
    )
    try:
        servers.wait_healthy(twin)
        started = time.monotonic()
        result: dict[str, Any] = {"cross_site": cross_site(twin)}
        result["headers"] = asyncio.run(endless_headers(twin, args.streams, args.mib))
        result["idle"] = asyncio.run(idle_sockets(twin, args.slowloris, args.ws, args.timeout))
        stalled_args = (args.stalled, args.probes, args.stall_seconds)
        result["stalled"] = asyncio.run(stalled_subscribers(twin, *stalled_args))
        result["seconds"] = round(time.monotonic() - started, 1)
    finally:
        servers.stop(twin)
    headers, idle, stalled = result["headers"], result["idle"], result["stalled"]
    bounded = all(o in ("431", "closed") for o in headers["automation"] + headers["gateway"])
    ok = result["cross_site"]["held"] and bounded and headers["growth_mb"] <= args.rss_limit
    ok = ok and idle["slowloris_closed"] == idle["slowloris"] and idle["ws_closed"] == idle["ws"]
    result["held"] = ok = ok and stalled["probes_answered"] == stalled["probes"]
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
