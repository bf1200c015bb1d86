"""The passthrough's WebSocket relay, against a real WebSocket server standing in for the device:
the client's forwardable headers reach the real side as headers, and the real side's close code
reaches the client."""

import asyncio

from websockets.asyncio.server import ServerConnection, serve

from api.members.gates import GatewayGate
from api.members.passthrough import Passthrough
from api.members.upstream import Upstream


async def test_the_relay_forwards_the_clients_headers_and_the_real_sides_close_code() -> None:
    async def device(ws: ServerConnection) -> None:
        assert ws.request is not None
        await ws.send(ws.request.headers.get("x-client", "no x-client header"))
        await ws.close(4001, "bye")

    sent: list[dict] = []
    connected = asyncio.Event()

    async def receive() -> dict:
        if not connected.is_set():
            connected.set()
            return {"type": "websocket.connect"}
        await asyncio.Event().wait()  # the client stays until the relay ends
        raise AssertionError

    async def send(message: dict) -> None:
        sent.append(message)

    async with serve(device, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        relay = Passthrough(Upstream("cam-01", f"http://127.0.0.1:{port}"), GatewayGate())
        scope = {
            "type": "websocket",
            "path": "/api/v1/events",
            "raw_path": b"/api/v1/events",
            "query_string": b"",
            "headers": [(b"host", b"twin"), (b"x-client", b"abc")],
            "subprotocols": [],
        }
        await asyncio.wait_for(relay(scope, receive, send), 10)
    assert [m["type"] for m in sent] == ["websocket.accept", "websocket.send", "websocket.close"]
    assert sent[1]["text"] == "abc"
    assert (sent[2]["code"], sent[2]["reason"]) == (4001, "bye")
