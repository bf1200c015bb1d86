"""Support for the robustness tests: a twin on a state directory, signed-in clients for both APIs,
the routes to exercise (read off the served apps), and the check that every list endpoint answers.

A list endpoint is a ``GET`` without path parameters that is neither a stream nor a route the twin
does not simulate yet, and that answers 200 on a fresh twin (some need a query parameter, or a
file the device does not have yet): those must go on answering 200 whatever was written before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from fastapi import FastAPI
from fastapi.routing import APIRoute

from api.automation.catalogue import WS, vendor_routes
from api.gateway.catalogue import device_routes
from api.routing import shape_of
from tests.conftest import SCENARIOS, admin_token
from twin.serve import Twin, build
from twin.settings import Settings

API_KEY = "nmk_" + "cd" * 16
"""The operator's key: only an API key may manage API keys."""
ADMIN_PASSWORD = "secret123"
GATEWAY_PASSWORD = "password"
"""The camera's default credentials."""
STREAMS = {shape_of(r.path) for r in device_routes() if r.kind != "REST"} | {
    shape_of(r.path) for r in vendor_routes() if r.vendor_class == WS
}
WRITES = ("POST", "PUT", "PATCH", "DELETE")
CORE_LISTS = {
    "automation": {"/api/dashboards", "/api/messages", "/api/auth/keys", "/api/devices", "/api/rules"},
    "gateway": {
        "/api/v1/apps",
        "/api/v1/files",
        "/api/v1/event-logs",
        "/api/v1/dev/projects",
        "/api/v1/store/installs",
    },
}
"""Lists that must be among those checked, so the set cannot shrink unnoticed."""


def build_twin(state_dir: Path) -> Twin:
    """The test world in step mode on ``state_dir``; rate limiting out of the way."""
    settings = Settings(
        scenario=SCENARIOS / "test.yaml", step=True, state_dir=state_dir, api_key=API_KEY, rate_limit=10**9
    )
    return build(settings)


def simulated(route: APIRoute) -> bool:
    return not (route.name or "").startswith("not_simulated:") and shape_of(route.path) not in STREAMS


def http_routes(app: FastAPI) -> list[APIRoute]:
    return [r for r in app.state.routes if isinstance(r, APIRoute) and simulated(r)]


def write_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, FastAPI path) of every simulated write operation."""
    return sorted({(m, r.path) for r in http_routes(app) for m in r.methods if m in WRITES})


def get_paths(app: FastAPI) -> list[str]:
    return sorted({r.path for r in http_routes(app) if "GET" in r.methods and "{" not in r.path})


@dataclass
class Api:
    name: str
    app: FastAPI
    http: httpx.AsyncClient
    token: str = ""

    def headers(self, path: str) -> dict[str, str]:
        """Credentials for ``path``: the automation API's key routes take only an API key."""
        if self.name == "gateway":
            return {"Authorization": self.token}
        if path.startswith("/api/auth/keys"):
            return {"X-API-Key": API_KEY}
        return {"Authorization": f"Bearer {self.token}"}

    async def sign_in(self) -> None:
        if self.name == "gateway":
            credentials = {"username": "admin", "password": GATEWAY_PASSWORD}
            login = await self.http.post("/api/login", json=credentials)
            if login.status_code == 200:
                self.token = login.json()["data"]["token"]
            return
        credentials = {"username": "admin", "password": ADMIN_PASSWORD}
        login = await self.http.post("/api/auth/login", json=credentials)
        if login.status_code == 200:  # else the old token stays, and answers 401
            self.token = login.json()["token"]

    async def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        """One request; signed in again once if a request before it ended the session."""
        extra = kwargs.pop("headers", {})
        for _ in range(2):
            call = self.http.request(method, path, headers={**self.headers(path), **extra}, **kwargs)
            resp = await asyncio.wait_for(call, 30)
            if resp.status_code != 401:
                break
            await self.sign_in()
        return resp


@asynccontextmanager
async def apis(twin: Twin, *, sign_up: bool = True) -> AsyncIterator[list[Api]]:
    """Both APIs of ``twin``, signed in (``sign_up``: the automation admin is created first)."""
    async with (
        _client(twin.automation_app, "http://automation") as automation,
        _client(twin.gateway_apps["cam-01"], "http://cam-01") as gateway,
    ):
        both = [
            Api("automation", twin.automation_app, automation),
            Api("gateway", twin.gateway_apps["cam-01"], gateway),
        ]
        if sign_up:
            await admin_token(automation, password=ADMIN_PASSWORD)
        for api in both:
            await api.sign_in()
        yield both


def _client(app: FastAPI, base_url: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=base_url)


async def answering_lists(api: Api) -> set[str]:
    """The list endpoints of ``api`` that answer 200 now."""
    return {p for p in get_paths(api.app) if (await api.request("GET", p)).status_code == 200}


async def failing_lists(api: Api, expected: set[str]) -> list[str]:
    """Each of ``expected`` that does not answer 200, with its status and the start of its body."""
    failures = []
    for path in sorted(expected):
        resp = await api.request("GET", path)
        if resp.status_code != 200:
            failures.append(f"{api.name} GET {path}: {resp.status_code} {resp.text[:200]}")
    return failures


async def failing_after_restart(
    twin: Twin, state_dir: Path, expected: dict[str, set[str]]
) -> tuple[list[str], Twin]:
    """Close ``twin``'s store and build a twin again on ``state_dir``: each API's ``expected`` lists
    that do not answer 200 on it (:func:`failing_lists`), and the new twin."""
    twin.world.store.close()
    again = build_twin(state_dir)
    async with apis(again, sign_up=False) as both:
        failures = [f for api in both for f in await failing_lists(api, expected[api.name])]
    return failures, again
