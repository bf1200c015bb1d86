"""Auth classes exactly as the real router: for every route of ``routes.tsv``, in both releases, a
request without credentials is never refused 401 on a public route and always refused 401 on a
jwt-or-api-key or jwt-only route."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from api.automation.catalogue import HYBRID, JWT_ONLY, PUBLIC, vendor_routes
from tests.conftest import _client
from twin.serve import build
from twin.settings import Settings

SELF_VERIFYING = {("GET", "/api/auth/verify")}
"""Public, and its handler answers 401 itself when there is no token to verify."""


def concrete(path: str) -> str:
    path = re.sub(r"\*[A-Za-z_]+", "a/b.png", path)
    return re.sub(r":[A-Za-z_]+", "x1", path)


@pytest.fixture(params=["0.9.24", "0.9.17"])
async def anonymous(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    twin = build(dataclasses.replace(settings, release=request.param))
    async with _client(twin.automation_app, "http://automation") as client:
        yield client


async def test_every_route_answers_an_anonymous_request_as_its_class(anonymous: httpx.AsyncClient) -> None:
    checked = {PUBLIC: 0, HYBRID: 0, JWT_ONLY: 0}
    wrong = []
    for route in vendor_routes():
        if route.vendor_class not in checked:
            continue  # webhooks check their own token; WebSocket and SSE routes authenticate inside
        for method in route.methods:
            resp = await anonymous.request(method, concrete(route.path))
            refused = resp.status_code == 401
            if route.vendor_class == PUBLIC and refused and (method, route.path) not in SELF_VERIFYING:
                wrong.append(f"{method} {route.path}: public, answered 401")
            if route.vendor_class != PUBLIC and not refused:
                wrong.append(f"{method} {route.path}: {route.vendor_class}, answered {resp.status_code}")
            checked[route.vendor_class] += 1
    assert not wrong, "\n".join(wrong)
    assert checked[PUBLIC] >= 48 and checked[HYBRID] >= 276 and checked[JWT_ONLY] == 3, checked


async def test_the_web_app_reads_dashboard_components_and_extension_widgets_without_a_token(
    anonymous: httpx.AsyncClient,
) -> None:
    for path in ("/api/extensions/dashboard-components", "/api/extensions", "/api/tools"):
        resp = await anonymous.get(path)
        assert resp.status_code == 200 and resp.json()["success"] is True, path
    unknown = await anonymous.get("/api/extensions/nope/components")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "NOT_FOUND"


async def test_public_reads_do_not_open_the_writes_beside_them(anonymous: httpx.AsyncClient) -> None:
    for method, path in (
        ("POST", "/api/extensions/x1/command"),
        ("PUT", "/api/extensions/x1/config"),
        ("DELETE", "/api/extensions/x1"),
        ("POST", "/api/extensions/market/install"),
        ("POST", "/api/frontend-components/market/install"),
        ("DELETE", "/api/frontend-components/x1"),
        ("POST", "/api/device-types/cloud/import"),
    ):
        resp = await anonymous.request(method, path, json={})
        assert resp.status_code == 401, (method, path)
