"""Malformed input on every write route of both APIs (read off the served apps): a lone surrogate,
nesting 200 and 5000 deep, an integer of 2**64, NaN, and a body one byte over the route's limit.

Nothing answers 5xx; the automation API refuses what serde_json refuses (400) on every route with
a JSON body; a body over the limit answers 413 in the vendor's shape wherever the vendor refuses it
(before the handler for a declared length on the automation API's authenticated routes and on the
whole gateway, else once the handler reads past the limit); and afterwards every list endpoint of
both APIs still answers 200, also on a twin restarted on the same state directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI, params
from fastapi.routing import APIRoute

from api.automation import limits
from api.body_limit import Limit
from api.gateway import errors as gateway_errors
from tests.api.gateway.test_property import DOCUMENTED_5XX
from tests.api.lists import (
    CORE_LISTS,
    Api,
    answering_lists,
    apis,
    build_twin,
    failing_after_restart,
    failing_lists,
    write_routes,
)

MiB = 1024 * 1024
DEEP = b"[" * 200 + b"]" * 200
SURROGATE = b'"\\ud800"'
HUGE = str(2**64).encode()
FIELDS = (b"name", b"id", b"device_id", b"description", b"title", b"message", b"content", b"path", b"value")
FREE_FORM = (b"data", b"layout", b"config", b"metadata", b"parameters", b"payload")


def body(value: bytes) -> bytes:
    """An object whose usual fields and free-form fields all hold ``value``."""
    items = [b'"%s":%s' % (name, value) for name in FIELDS]
    items += [b'"%s":{"n":%s,"list":[%s]}' % (name, value, value) for name in FREE_FORM]
    return b"{" + b",".join(items) + b"}"


PAYLOADS = {
    "lone surrogate": body(SURROGATE),
    "nesting 200 deep": body(DEEP),
    "integer 2**64": body(HUGE),
    "NaN": body(b"NaN"),
    "deep top level": DEEP,
    "nesting 5000 deep": body(b"[" * 5000 + b"]" * 5000),
}
REFUSED_BY_SERDE = ("lone surrogate", "nesting 200 deep", "NaN", "deep top level", "nesting 5000 deep")
JSON = {"Content-Type": "application/json"}


def concrete(path: str) -> str:
    return path.replace("{path:path}", "x/y").replace("{", "").replace("}", "")


def json_body_route(app: FastAPI, method: str, path: str) -> bool:
    route = next(
        r for r in app.state.routes if isinstance(r, APIRoute) and r.path == path and method in r.methods
    )
    return route.body_field is not None and not isinstance(route.body_field.field_info, params.Form)


async def answer_to_path(api: Api, method: str, url: str, resp: httpx.Response) -> bool:
    """Whether a 5xx is the vendor's answer to the path, given to a well-formed request as well: a
    gateway's documented code (an app id it does not have is gRPC's NotFound, 500/3002), or an
    automation handler's own bare ``{"error"}`` (deleting the system memory file answers 500)."""
    if api.name == "automation":
        if set(resp.json()) != {"error"}:
            return False
        control = await api.request(method, url)
        return control.status_code == resp.status_code and control.json() == resp.json()
    if resp.json().get("code") not in DOCUMENTED_5XX:
        return False
    control = await api.request(method, url, json={})
    return control.status_code == resp.status_code and control.json().get("code") == resp.json()["code"]


# One byte over the limit, through the ASGI interface: the test sees whether the app read the body.
def limit_for(api: Api, method: str, path: str) -> Limit:
    return limits.limit_of(method, path) if api.name == "automation" else gateway_errors.NGINX_LIMIT


def over(size: int) -> Iterator[bytes]:
    """A JSON string body of ``size`` bytes in 1 MiB chunks (made as they are read)."""
    head, tail = b'{"name":"', b'"}'
    left = size - len(head) - len(tail)
    yield head
    while left > 0:
        n = min(MiB, left)
        yield b"x" * n
        left -= n
    yield tail


async def send_over(api: Api, method: str, path: str, size: int) -> tuple[int, bytes, str, int]:
    """(status, body, content type, bytes the app read) for a body of ``size`` bytes."""
    headers = [(k.lower().encode(), v.encode()) for k, v in {**api.headers(path), **JSON}.items()]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [*headers, (b"content-length", str(size).encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("twin", 80),
    }
    chunks, read, started, sent = over(size), 0, {}, bytearray()

    async def receive() -> dict:
        nonlocal read
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.disconnect"}
        read += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": read < size}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            sent.extend(message.get("body", b""))

    await api.app(scope, receive, send)
    kind = dict(started.get("headers", [])).get(b"content-type", b"").decode()
    return started["status"], bytes(sent), kind, read


EXPECTED_413 = {  # (content type, bodies)
    "automation": ("text/plain; charset=utf-8", {"length limit exceeded", limits.EXTRACTOR_413}),
    "gateway": ("text/html", {gateway_errors.NGINX_413}),
}


@pytest.mark.timeout(900)
async def test_malformed_input_on_every_write_route(tmp_path: Path) -> None:
    twin = build_twin(tmp_path)
    failures: list[str] = []
    counts: dict[str, int] = {}
    async with apis(twin) as both:
        lists = {api.name: await answering_lists(api) for api in both}
        for api in both:
            assert CORE_LISTS[api.name] <= lists[api.name], lists[api.name]
            routes = write_routes(api.app)
            counts[api.name] = len(routes)
            for method, path in routes:
                url = concrete(path)
                for name, content in PAYLOADS.items():
                    resp = await api.request(method, url, content=content, headers=JSON)
                    twin.clock.advance(1)
                    label = f"{api.name} {method} {path} [{name}]: {resp.status_code} {resp.text[:160]}"
                    if resp.status_code >= 500 and not await answer_to_path(api, method, url, resp):
                        failures.append(label)
                    elif (
                        api.name == "automation"
                        and name in REFUSED_BY_SERDE
                        and json_body_route(api.app, method, path)
                        and resp.status_code != 400
                    ):
                        failures.append(label + " (serde_json refuses it: 400)")
                limit = limit_for(api, method, url)
                status, text, kind, read = await send_over(api, method, url, limit.size + 1)
                label = f"{api.name} {method} {path} [{limit.size + 1} bytes]: {status} {text[:120]!r}"
                if status == 413:
                    media, texts = EXPECTED_413[api.name]
                    if kind != media or text.decode() not in texts:
                        failures.append(label + " (not the vendor's 413)")
                    if limit.on_declared is not None and read:
                        failures.append(label + " (the declared length was refused only after reading)")
                elif limit.on_declared is not None or read > limit.size:
                    failures.append(label + " (413 expected)")
                elif status >= 500:
                    failures.append(label)
        for api in both:
            failures += await failing_lists(api, lists[api.name])
    assert counts["automation"] > 100 and counts["gateway"] > 100, counts
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures)
    assert not twin.world.store.unreadable

    failures, again = await failing_after_restart(twin, tmp_path, lists)
    assert not failures, "after a restart:\n" + "\n".join(failures)
    assert not again.world.store.unreadable
