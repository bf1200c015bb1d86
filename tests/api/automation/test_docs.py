"""Self-description and coverage: routes.json tells the truth about every route's auth class."""

from __future__ import annotations

import dataclasses
import json
import re

import httpx
import pytest
from fastapi.routing import APIRoute

from api.automation.catalogue import WS, vendor_routes
from api.automation.deps import current_user
from api.routing import specificity
from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings


def concrete(path: str) -> str:
    path = re.sub(r"\*[A-Za-z_]+", "a/b.txt", path)
    return re.sub(r":[A-Za-z_]+", "x1", path)


async def routes_json(client: httpx.AsyncClient) -> list[dict]:
    resp = await client.get("/api/docs/routes.json")
    assert resp.status_code == 200
    return resp.json()


async def test_every_protected_route_refuses_a_missing_token_and_public_ones_answer(
    automation: httpx.AsyncClient,
) -> None:
    rows = await routes_json(automation)
    assert len(rows) >= 330
    checked = {"public": 0, "jwt-or-api-key": 0, "jwt-only": 0, "webhook": 0}
    for row in rows:
        if row["auth"] == WS:
            continue
        resp = await automation.request(row["method"], concrete(row["path"]))
        where = f"{row['method']} {row['path']}"
        if row["auth"] in ("jwt-or-api-key", "jwt-only"):
            assert resp.status_code == 401, where
            assert resp.json()["error"]["code"] == "UNAUTHORIZED", where
        elif row["path"] != "/api/auth/verify":  # public, and answers 401 itself when nothing verifies
            assert resp.status_code not in (401, 403), where
        checked[row["auth"]] += 1
    assert all(checked.values()), checked


@pytest.mark.parametrize("release", ["0.9.24", "0.9.17"])
async def test_every_vendor_route_is_served_with_its_auth_class(settings: Settings, release: str) -> None:
    twin = build(dataclasses.replace(settings, release=release))
    async with _client(twin.automation_app, "http://automation") as client:
        served = {(r["method"], r["path"]): r["auth"] for r in await routes_json(client)}
    for route in vendor_routes():
        if route.vendor_class == WS:
            continue  # the realtime issue serves these
        for method in route.methods:
            key = (method, route.path)
            assert key in served or any(
                m == method and re.sub(r":\w+", ":p", p) == re.sub(r":\w+", ":p", route.path)
                for m, p in served
            ), key
    public = sorted(
        p for (m, p), auth in served.items() if auth == "public" and not p.startswith("/api/docs")
    )
    assert {"/api/extensions/:id", "/api/tools/:name", "/api/extensions/dashboard-components"} <= set(public)
    assert {"/api/health", "/api/metrics", "/api/capabilities/:name", "/api/share/:token"} <= set(public)
    catalogued = {(m, r.path): r.vendor_class for r in vendor_routes() for m in r.methods}
    assert all(auth == catalogued.get(key, auth) for key, auth in served.items())  # the real router's


async def test_jwt_only_routes(automation: httpx.AsyncClient) -> None:
    rows = await routes_json(automation)
    jwt_only = {(r["method"], r["path"]) for r in rows if r["auth"] == "jwt-only"}
    assert {("GET", "/api/users"), ("POST", "/api/users"), ("DELETE", "/api/users/:username")} <= jwt_only


async def test_routes_not_simulated_yet_answer_501_after_auth(
    automation: httpx.AsyncClient, twin: Twin
) -> None:
    pending = sorted(
        r.path
        for r in twin.automation_app.state.routes
        if isinstance(r, APIRoute) and r.name.startswith("not_simulated:") and "GET" in r.methods
        and "{" not in r.path and any(d.dependency is current_user for d in r.dependencies)
    )  # fmt: skip
    if not pending:
        pytest.skip("every catalogued route is simulated")
    path = pending[0]
    token = await admin_token(automation)
    assert (await automation.get(path)).status_code == 401
    resp = await automation.get(path, headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 501
    assert resp.json() == {"success": False, "error": {
        "code": "NOT_IMPLEMENTED", "message": f"GET {path} is not simulated by this twin yet",
        "request_id": None}}  # fmt: skip


async def test_openapi_is_30_without_security_or_wildcards(automation: httpx.AsyncClient) -> None:
    doc = (await automation.get("/api/docs/openapi.json")).json()
    assert doc["openapi"] == "3.0.3"
    text = json.dumps(doc)
    assert "security" not in text.lower()
    assert not any(":path}" in p or "*" in p for p in doc["paths"])
    assert '{"type": "null"}' not in text
    operations = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    rest = {
        (r["method"], re.sub(r":(\w+)", r"{\1}", r["path"]))
        for r in await routes_json(automation)
        if r["auth"] != WS and "*" not in r["path"]
    }
    rest -= {("GET", "/api/docs")}
    assert rest <= operations
    assert len(operations) >= 320


async def test_console_works_offline(automation: httpx.AsyncClient) -> None:
    html = (await automation.get("/api/docs")).text
    assert "/api/docs/openapi.json" in html
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and all(a.startswith("/api/docs/") for a in assets), assets
    for asset in assets:
        assert (await automation.get(asset)).status_code == 200, asset
    assert (await automation.get("/api/docs/../../etc/passwd")).status_code == 404
    assert (await automation.get("/api/docs/nope.js")).status_code == 404


def test_literal_segments_win_over_parameters() -> None:
    paths = [
        "/api/devices/{id}",
        "/api/devices/drafts",
        "/api/docs/{rest:path}",
        "/api/docs/routes.json",
        "/api/devices/{id}/approve",
        "/api/devices/drafts/{id}",
        "/api/devices/drafts/cleanup",
    ]
    order = sorted(paths, key=specificity).index
    assert order("/api/devices/drafts") < order("/api/devices/{id}")
    assert (
        order("/api/devices/drafts/cleanup")
        < order("/api/devices/drafts/{id}")
        < order("/api/devices/{id}/approve")
    )
    assert order("/api/docs/routes.json") < order("/api/docs/{rest:path}")
