"""The express lane: a plain ``GET`` of a lean route answered without the framework layers under the
fault layer.

A vendor app's request passes, under the journal and the fault layer, through the storm limiter,
the request counters, CORS, the body limit, FastAPI's exception and exit-stack layers, its router,
the area index and Starlette's request wrapper before the route's own handler runs: about as much
work as a device lookup itself. For a request none of those layers would change, the express lane
does what they would have done and calls the handler directly:

- only ``GET`` of a :class:`~api.routing.LeanRoute` (simple dependencies, ``str`` path parameters),
  found by the app's own routes in the vendor's matching order (cached per path);
- only when every layer it skips is one it knows and each is transparent for this request: the body
  limit (no ``Content-Length`` or ``Transfer-Encoding``), CORS (no ``Origin``: the response only
  gains ``Vary: Origin``, as Starlette adds it), the request counters (counted here by the route's
  template and the status), the storm limiter (no storm on). Anything else takes the full stack;
- an exception is answered by the app's own exception handlers, as its exception layer would; one
  they do not handle is counted as a 500 and raised, as it would be.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.automation.metrics import HttpCounters, RequestMetrics, route_template
from api.body_limit import BodyLimit
from api.gateway.storm import StormMiddleware
from api.routing import AreaIndex, LeanRoute, area_of

MAX_PATHS = 10_000
"""Paths whose route is remembered; past this many the memory starts afresh."""
_BODY_HEADERS = frozenset((b"content-length", b"transfer-encoding", b"origin"))

Found = tuple[LeanRoute, Scope]
"""A route of the lane and the scope its match adds."""
Handler = Callable[[Request, Exception], Awaitable[Response] | Response]


class ExpressLane:
    """ASGI middleware over the layers of ``owner`` (the FastAPI app it is added to)."""

    def __init__(self, app: ASGIApp, owner: FastAPI) -> None:
        self.app = app
        self.owner = owner
        self._ready = False
        self._open = False
        self._cors = False
        self._counters: HttpCounters | None = None
        self._storms: list[Any] = []
        self._handlers: dict[Any, Handler] = {}
        self._paths: dict[str, tuple[LeanRoute, Scope] | None] = {}

    def _prepare(self) -> None:
        """Read the layers under this one once the app is complete (at its first request)."""
        self._ready = True
        inner = self.owner.user_middleware[self.owner.user_middleware.index(self._entry()) + 1 :]
        known = True
        for layer in inner:
            if layer.cls is CORSMiddleware:
                self._cors = True
            elif layer.cls is RequestMetrics:
                counters = layer.kwargs["counters"]
                assert isinstance(counters, HttpCounters)
                self._counters = counters
            elif layer.cls is StormMiddleware:
                self._storms.append(layer.kwargs["limiter"])
            elif layer.cls is not BodyLimit:
                known = False
        index = self.owner.router.routes[0] if len(self.owner.router.routes) == 1 else None
        self._open = known and isinstance(index, AreaIndex)
        self._handlers = {k: v for k, v in self.owner.exception_handlers.items() if k not in (500, Exception)}

    def _entry(self) -> Any:
        """The lane's own middleware entry, or that of the layer holding it (:class:`api.front.Front`)."""
        return next(m for m in self.owner.user_middleware if m.kwargs.get("owner") is self.owner)

    def _route(self, scope: Scope) -> tuple[LeanRoute, Scope] | None:
        path = scope["path"]
        if path in self._paths:
            return self._paths[path]
        found = None
        index = self.owner.router.routes[0]
        assert isinstance(index, AreaIndex)
        area = index.areas.get(area_of(path, index.depth))
        if area is not None:
            for route in area.router_for(path).routes:
                match, child = route.matches(scope)
                if match is Match.FULL and isinstance(route, LeanRoute) and route.lean:
                    found = (route, child)
                if match is not Match.NONE:
                    break
        if len(self._paths) >= MAX_PATHS:
            self._paths.clear()
        self._paths[path] = found
        return found

    def _plain(self, scope: Scope) -> bool:
        if scope.get("root_path"):
            return False
        for name, _ in scope["headers"]:
            if name in _BODY_HEADERS:
                return False
        return all(storm.storm_until() is None for storm in self._storms)

    @property
    def cors(self) -> bool:
        """Whether a CORS layer is skipped (an express answer then gains ``Vary: Origin``)."""
        return self._cors

    def find(self, scope: Scope) -> tuple[LeanRoute, Scope] | None:
        """The route the lane answers a ``GET`` with, or ``None`` (the full stack answers)."""
        if not self._ready:
            self._prepare()
        found = self._route(scope) if self._open else None
        if found is None or not self._plain(scope):
            return None
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.find(scope) if scope["type"] == "http" and scope["method"] == "GET" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        cors = self._cors

        async def sending(message: Message) -> None:
            if cors and message["type"] == "http.response.start":
                with_vary(message)
            await send(message)

        await self.answer(found, scope, receive, sending)

    async def answer(self, found: Found, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request by ``found`` (from :meth:`find`); ``send`` gets the messages as the
        layers above the skipped ones would (the caller adds ``Vary``)."""
        route, child = found
        scope.update(child)
        scope["path_params"] = dict(child["path_params"])
        scope.setdefault("router", self.owner.router)
        status = 500  # an exception escaping the handlers is a 500 further out

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        request = Request(scope, receive, send)
        try:
            try:
                response = await route.lean_handler(request)
            except Exception as exc:
                handler = self._handler_for(exc)
                if handler is None:
                    raise
                answer = handler(request, exc)
                response = await answer if inspect.isawaitable(answer) else answer
            if response.background is None and type(response).__call__ is Response.__call__:
                # what Response.__call__ sends for an HTTP scope, without its wrappers
                status = response.status_code
                await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
                await send({"type": "http.response.body", "body": response.body})
            else:
                await response(scope, receive, sending)
        finally:
            if self._counters is not None:
                self._counters.inc(scope["method"], route_template(scope), status)

    def _handler_for(self, exc: Exception) -> Handler | None:
        """The handler Starlette's exception layer would pick: by status for an HTTP exception,
        else by the nearest class."""
        if isinstance(exc, HTTPException) and exc.status_code in self._handlers:
            return self._handlers[exc.status_code]
        for cls in type(exc).__mro__:
            if cls in self._handlers:
                return self._handlers[cls]
        return None


def with_vary(message: Message) -> None:
    """Add ``Origin`` to a response start's ``Vary``, as Starlette's CORS layer does."""
    raw = message["headers"]
    if isinstance(raw, list) and all(name != b"vary" for name, _ in raw):
        raw.append((b"vary", b"Origin"))
        return
    headers = MutableHeaders(scope=message)
    headers["Vary"] = ", ".join([*headers.getlist("Vary"), "Origin"])
