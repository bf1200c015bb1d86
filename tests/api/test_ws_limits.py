"""What a WebSocket or event-stream client can hold: a socket that never authenticates is closed."""

from __future__ import annotations

import asyncio
import json
import socket
import struct

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from api.automation.realtime import EventEncoder
from api.automation.routers.chat import MAX_TURNS_IN_FLIGHT
from api.automation.routers.events import DRAIN
from tests.api.automation.test_events_ws import live_twin, ws_url
from tests.sockets import until

pytestmark = pytest.mark.socket


async def test_an_event_socket_that_never_authenticates_is_closed() -> None:
    """The finding: 1 000 sockets that never sent their Auth frame stayed open for ever. Each is
    told what the server tells a wrong first frame, and closed."""
    async with live_twin(ws_auth_timeout=0.3) as (twin, base, token):
        assert twin.automation_app.state.ws_auth_timeout == 0.3
        sockets = [await connect(ws_url(base)) for _ in range(20)]
        for ws in sockets:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
            assert frame == {"type": "Error", "message": "Authentication required"}
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 30)
        async with connect(ws_url(base)) as ws:  # one that authenticates in time stays
            await ws.send(json.dumps({"type": "Auth", "token": token}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "Authenticated"
            assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "ping"


def _stalled_sse(port: int, token: str) -> socket.socket:
    """An SSE subscriber that never reads (a small receive buffer, so the server's writes stall)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /api/events/stream?token={token} HTTP/1.1\r\nhost: t\r\n\r\n".encode())
    return sock


async def test_stalled_sse_subscribers_neither_slow_the_others_nor_the_close() -> None:
    """The finding: closing 200 stalled SSE subscribers made health probes fail. A stalled
    subscriber holds only its own queue; when it goes, its backlog is dropped, not encoded."""
    async with live_twin() as (twin, base, token):
        state = twin.automation_app.state
        state.event_encoder = encoder = EventEncoder(lambda: 0.0, cache=1)  # every envelope costs
        port = int(base.rsplit(":", 1)[1])
        stalled = [_stalled_sse(port, token) for _ in range(3)]
        bus = twin.world.bus
        await until(lambda: len(bus._subs) >= 3)
        blob = "x" * 8000
        async with httpx.AsyncClient(base_url=base, timeout=60) as http:
            async with http.stream("GET", "/api/events/stream", params={"token": token}) as live:
                await until(lambda: len(bus._subs) >= 4)
                for i in range(3000):
                    twin.automation.publish_event("load", {"i": i, "blob": blob}, "test")
                    if i % 50 == 0:
                        await asyncio.sleep(0)
                twin.automation.publish_event("last", {}, "test")
                async for line in live.aiter_lines():  # the live one gets everything
                    if '"custom_type":"last"' in line:
                        break
            backlog = [s for s in bus._subs if len(s) > 0]
            assert len(backlog) == 3 and min(len(s) for s in backlog) > 1000  # they really stalled
            encoded = encoder.encoded
            for sock in stalled:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.close()  # a reset: the server sees them gone at once
            await until(lambda: len(bus._subs) == 0)
            assert encoder.encoded - encoded <= 3 * DRAIN  # not the 3 x 1000s events left behind
            assert (await http.get("/api/health")).status_code == 200


async def test_chat_tells_a_client_that_sends_faster_than_turns_end() -> None:
    """The finding: 50 sockets x 200 messages got 241 frames back and no error. Turns wait on the
    world clock (step mode, not advanced), so every message past the bound is refused at once."""
    async with live_twin() as (_, base, token):
        url = base.replace("http://", "ws://") + f"/api/chat?token={token}"
        async with connect(url) as ws:
            extra = 5
            for i in range(MAX_TURNS_IN_FLIGHT + extra):
                await ws.send(json.dumps({"message": f"hello {i}"}))
            errors: list[dict] = []
            while len(errors) < extra:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if frame["type"] == "Error":
                    errors.append(frame)
            assert errors[0]["message"].startswith("Too many requests in flight: 16 turns")
            assert errors[0]["sessionId"]
