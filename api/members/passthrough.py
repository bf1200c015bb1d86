"""A real device or server served on a member's address: an ASGI app that forwards every request
to the real endpoint and returns its answer as it came (status, headers but the hop-by-hop ones,
body bytes as sent, compressed or not), and relays WebSockets frame by frame (text as text, binary
as binary, the close code as the real side sent it).

The twin's own layers wrap it exactly as they wrap a simulated app: ``add_middleware`` composes
the same fault middleware and request journal around it (the last added is outermost, as in
Starlette). Before forwarding, a :class:`~api.members.gates.Gate` may answer instead (an
expired token, a rate-limit storm). Each request is matched against the simulated app's route
table so the journal names the same route template, and scenario verdicts read it alike.

Logins, tokens and keys are forwarded untouched and never logged; logs name the member only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from starlette.routing import BaseRoute
from starlette.types import Receive, Scope, Send
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from api.faults import InjectedReset
from api.members.gates import Gate
from api.members.routes import StandIn
from api.members.upstream import CONNECT_TIMEOUT_S, Upstream, UpstreamError

log = logging.getLogger("twin.passthrough")

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
NOT_FORWARDED = HOP_BY_HOP | {b"host", b"expect"}  # the twin answers a 100-continue itself
BODY_HEADERS = (b"content-length", b"transfer-encoding")
WS_HANDSHAKE = frozenset(
    {
        b"sec-websocket-key",
        b"sec-websocket-version",
        b"sec-websocket-extensions",
        b"sec-websocket-protocol",
        b"sec-websocket-accept",
    }
)
BAD_GATEWAY = b"Bad Gateway"
UNSENDABLE_CLOSE = (1005, 1006, 1015)
"""Close codes a peer never sends in a frame: an upstream that went without a close frame is
relayed as 1011."""


def _forwardable(headers: Sequence[tuple[bytes, bytes]], drop: frozenset[bytes]) -> list[tuple[bytes, bytes]]:
    named: set[bytes] = set()  # and whatever the Connection header names as hop-by-hop
    for name, value in headers:
        if name.lower() == b"connection":
            named.update(part.strip().lower() for part in value.split(b","))
    return [(n, v) for n, v in headers if n.lower() not in drop and n.lower() not in named]


class Passthrough(StandIn):
    def __init__(self, upstream: Upstream, gate: Gate, routes: Sequence[BaseRoute] = ()) -> None:
        super().__init__(routes)
        self.upstream = upstream
        self.gate = gate

    async def probe(self, api_key: str | None = None) -> int | None:
        """The twin's own check that the real member answers (with its API key, that the key is
        accepted): the status, ``None`` if unreachable. The key is sent only on this request."""
        if api_key:
            return await self.upstream.probe(self.gate.keyed_probe_path, {"X-API-Key": api_key})
        return await self.upstream.probe(self.gate.probe_path)

    # HTTP -------------------------------------------------------------------------------------
    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        denied = self.gate.check(scope)
        if denied is not None:
            await denied(scope, receive, send)
            return
        headers = _forwardable(scope["headers"], NOT_FORWARDED)
        has_body = any(name in BODY_HEADERS for name, _ in scope["headers"])
        body = _body(receive) if has_body else None
        try:
            response = await self.upstream.request(scope["method"], _target(scope), headers, body)
        except UpstreamError as err:
            log.warning("twin: real %s did not answer a %s: %s", self.upstream.name, scope["method"], err)
            await _bad_gateway(send)
            return
        try:
            start = {"type": "http.response.start", "status": response.status}
            await send(start | {"headers": _forwardable(response.headers, HOP_BY_HOP)})
            try:
                async for chunk, more in response.body():  # a body already in whole goes in one message
                    await send({"type": "http.response.body", "body": chunk, "more_body": more})
            except UpstreamError as err:  # the real side went away mid-body: so does the client's
                raise InjectedReset(f"real {self.upstream.name} closed mid-response") from err
        finally:
            response.close()

    # WebSocket --------------------------------------------------------------------------------
    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        denied = self.gate.check(scope)
        if denied is not None:
            await deny_upgrade(scope, send, denied.status_code, denied.raw_headers, denied.body)
            return
        try:
            upstream = await connect(
                self.upstream.ws_url(_target(scope)),
                additional_headers=[
                    (name.decode("latin-1"), value.decode("latin-1"))
                    for name, value in _forwardable(scope["headers"], NOT_FORWARDED | WS_HANDSHAKE)
                ],
                subprotocols=scope.get("subprotocols") or None,
                ssl=self.upstream.ws_tls(),
                compression=None,
                proxy=None,
                user_agent_header=None,
                ping_interval=None,
                max_size=None,
                open_timeout=CONNECT_TIMEOUT_S,
            )
        except InvalidStatus as err:  # the real side refused the upgrade: its answer, as it gave it
            answer = err.response
            raw = [(n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in answer.headers.raw_items()]
            headers = _forwardable(raw, HOP_BY_HOP)
            await deny_upgrade(scope, send, answer.status_code, headers, answer.body or b"")
            return
        except (OSError, InvalidHandshake, TimeoutError) as err:
            log.warning("twin: real %s refused a WebSocket (%s)", self.upstream.name, type(err).__name__)
            await deny_upgrade(scope, send, 502, [(b"content-type", b"text/plain")], BAD_GATEWAY)
            return
        async with upstream:
            await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol})
            await _relay(upstream, receive, send)


def _target(scope: Scope) -> str:
    """The request target as the client sent it (its own percent-encoding kept)."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope["path"]
    query = scope.get("query_string", b"")
    return path + ("?" + query.decode("latin-1") if query else "")


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise InjectedReset("client went away mid-request")
        chunk = message.get("body", b"")
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


async def _bad_gateway(send: Send) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(BAD_GATEWAY)).encode())]
    await send({"type": "http.response.start", "status": 502, "headers": headers})
    await send({"type": "http.response.body", "body": BAD_GATEWAY})


async def deny_upgrade(
    scope: Scope, send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes | memoryview
) -> None:
    """Refuse an upgrade with an HTTP answer when the server can send one, else close (403)."""
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


async def _relay(upstream: ClientConnection, receive: Receive, send: Send) -> None:
    """Frames both ways until either side closes; the other side is then closed with its code."""

    async def from_client() -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                code = message.get("code", 1000)
                await upstream.close(1000 if code in UNSENDABLE_CLOSE else code, message.get("reason") or "")
                return
            if message.get("bytes") is not None:
                await upstream.send(message["bytes"])
            elif message.get("text") is not None:
                await upstream.send(message["text"])

    async def from_upstream() -> None:
        try:
            async for frame in upstream:
                key = "text" if isinstance(frame, str) else "bytes"
                await send({"type": "websocket.send", key: frame})
        except ConnectionClosed:
            pass
        close = upstream.protocol.close_rcvd
        code = close.code if close is not None and close.code not in UNSENDABLE_CLOSE else 1011
        if close is not None and close.code == 1005:
            code = 1000
        await send({"type": "websocket.close", "code": code, "reason": close.reason if close else ""})

    tasks = [asyncio.ensure_future(from_client()), asyncio.ensure_future(from_upstream())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):  # a send after the client closed, a closed upstream
                await task
