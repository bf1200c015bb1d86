"""What a WebSocket or event-stream client can hold: a socket that never authenticates is closed."""

from __future__ import annotations

import asyncio
import json

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.api.automation.test_events_ws import live_twin, ws_url

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
