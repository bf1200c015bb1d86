"""Dashboards over HTTP: CRUD with layout, share links that expire on the world clock, the public
``/share/:token`` and the share proxy, with refusals in the vendor's envelope."""

from __future__ import annotations

import dataclasses
import re

import httpx
import pytest

from tests.conftest import _client, admin_token
from twin.serve import Twin, build
from twin.settings import Settings

DEVICE = "env_sensor-0001"
COMPONENT = {
    "id": "c1",
    "type": "line_chart",
    "position": {"x": 0, "y": 0, "w": 6, "h": 4},
    "title": "Temperature",
    "data_source": {"type": "telemetry", "source": f"device:{DEVICE}:temperature"},
}


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {await admin_token(automation)}"}


def assert_error(resp: httpx.Response, status: int, code: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json()["success"] is False and resp.json()["error"]["code"] == code


async def create(client: httpx.AsyncClient, auth: dict, **extra) -> dict:
    body = {"name": "Lab", "layout": {"columns": 24}, "components": [COMPONENT], **extra}
    resp = await client.post("/api/dashboards", json=body, headers=auth)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


async def test_ids_are_named_as_the_handler_names_them(automation: httpx.AsyncClient, auth: dict) -> None:
    board = await create(automation, auth)
    uuid4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
    assert re.fullmatch("dashboard_" + uuid4, board["id"])
    got = await automation.get(f"/api/dashboards/{board['id']}", headers=auth)
    assert got.status_code == 200 and got.json()["data"]["id"] == board["id"]


async def test_crud_with_layout(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    board = await create(automation, auth)
    assert board["layout"] == {
        "columns": 24, "rows": "auto", "breakpoints": {"lg": 1200, "md": 996, "sm": 768, "xs": 480},
    }  # fmt: skip
    assert board["components"] == [COMPONENT] and board["is_default"] is True
    assert board["created_at"] == board["updated_at"] == 1767225600
    second = await create(automation, auth, name="Roof")
    assert second["is_default"] is False

    listed = (await automation.get("/api/dashboards", headers=auth)).json()["data"]
    assert listed["count"] == 2 and [d["name"] for d in listed["dashboards"]] == ["Lab", "Roof"]

    twin.clock.advance(60)
    moved = {**COMPONENT, "position": {"x": 6, "y": 0, "w": 6, "h": 4}}
    resp = await automation.put(
        f"/api/dashboards/{board['id']}", json={"layout": {"rows": 10}, "components": [moved]}, headers=auth
    )
    updated = resp.json()["data"]
    assert updated["layout"]["columns"] == 24 and updated["layout"]["rows"] == 10
    assert updated["components"][0]["position"]["x"] == 6 and updated["updated_at"] == 1767225660
    assert (await automation.get(f"/api/dashboards/{board['id']}", headers=auth)).json()["data"] == updated

    resp = await automation.delete(f"/api/dashboards/{board['id']}", headers=auth)
    assert resp.json()["data"] == {"id": board["id"], "deleted": True}
    assert_error(await automation.get(f"/api/dashboards/{board['id']}", headers=auth), 404, "NOT_FOUND")


async def test_share_links_expire_as_gone(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    board = await create(automation, auth)
    resp = await automation.post(
        f"/api/dashboards/{board['id']}/share",
        json={"permissions": {"allow_interactive": False}, "expires_in_hours": 1},
        headers=auth,
    )
    link = resp.json()["data"]
    assert re.fullmatch(r"ds_[0-9a-f]{32}", link["token"]) and link["share_url"] == f"/share/{link['token']}"
    assert link["expires_at"] == link["created_at"] + 3600 and link["dashboard_id"] == board["id"]

    shared = await automation.get(f"/api/share/{link['token']}")  # no credentials
    data = shared.json()["data"]
    assert shared.status_code == 200 and data["dashboard"]["id"] == board["id"]
    assert data["permissions"] == {"allow_interactive": False} and data["expires_at"] == link["expires_at"]

    twin.clock.advance(3599)
    assert (await automation.get(f"/api/share/{link['token']}")).status_code == 200
    twin.clock.advance(1)
    assert_error(await automation.get(f"/api/share/{link['token']}"), 410, "GONE")
    assert_error(await automation.get("/api/share/ds_0000"), 404, "NOT_FOUND")


async def test_links_without_expiry_list_and_revoke(automation: httpx.AsyncClient, auth: dict) -> None:
    board = await create(automation, auth)
    link = (await automation.post(f"/api/dashboards/{board['id']}/share", json={}, headers=auth)).json()[
        "data"
    ]
    assert "expires_at" not in link
    shares = (await automation.get(f"/api/dashboards/{board['id']}/share", headers=auth)).json()["data"]
    assert shares["count"] == 1 and shares["shares"][0]["token"] == link["token"]
    resp = await automation.delete(f"/api/dashboards/{board['id']}/share/{link['token']}", headers=auth)
    assert resp.json()["data"] == {"token": link["token"], "revoked": True}
    assert_error(await automation.get(f"/api/share/{link['token']}"), 404, "NOT_FOUND")
    resp = await automation.delete(f"/api/dashboards/{board['id']}/share/{link['token']}", headers=auth)
    assert_error(resp, 404, "NOT_FOUND")


async def test_share_proxy_reads_only_the_dashboards_devices(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    board = await create(automation, auth)
    token = (await automation.post(f"/api/dashboards/{board['id']}/share", json={}, headers=auth)).json()[
        "data"
    ]
    base = f"/api/share/{token['token']}/proxy"
    resp = await automation.get(f"{base}/devices/{DEVICE}/current", headers=auth)
    data = resp.json()["data"]
    assert resp.status_code == 200 and data["device_id"] == DEVICE and "temperature" in data["values"]
    assert_error(
        await automation.get(f"{base}/devices/env_sensor-0002/current", headers=auth), 404, "NOT_FOUND"
    )
    assert_error(await automation.get(f"{base}/users", headers=auth), 404, "NOT_FOUND")
    resp = await automation.post(f"{base}/devices/{DEVICE}/current", json={}, headers=auth)
    assert_error(resp, 405, "METHOD_NOT_ALLOWED")
    anonymous = await automation.get(f"{base}/devices/{DEVICE}/current")  # the link is the credential
    assert anonymous.status_code == 200 and anonymous.json()["data"]["device_id"] == DEVICE
    assert_error(await automation.get(f"/api/share/nope/proxy/devices/{DEVICE}/current"), 404, "NOT_FOUND")


async def test_release_0917_serves_the_share_proxy_without_credentials(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        reg = await client.post("/api/auth/register", json={"username": "first", "password": "secret1"})
        auth = {"Authorization": f"Bearer {reg.json()['token']}"}
        board = await create(client, auth)
        link = (await client.post(f"/api/dashboards/{board['id']}/share", json={}, headers=auth)).json()[
            "data"
        ]
        resp = await client.get(f"/api/share/{link['token']}/proxy/devices/{DEVICE}")
        assert resp.status_code == 200 and resp.json()["data"]["device_id"] == DEVICE
        earlier = await client.get(f"/api/dashboards/shared/{link['token']}")  # the earlier revision's path
        assert earlier.status_code == 200 and earlier.json()["data"]["dashboard"]["id"] == board["id"]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({}, 422, "VALIDATION_ERROR"),
        ({"name": ""}, 400, "BAD_REQUEST"),
        ({"name": "x", "layout": {"columns": 0}}, 400, "BAD_REQUEST"),
        ({"name": "x", "layout": {"rows": "many"}}, 400, "BAD_REQUEST"),
        ({"name": "x", "components": [{"id": "c", "type": "gauge"}]}, 400, "BAD_REQUEST"),
        (
            {"name": "x", "components": [{**COMPONENT, "position": {"x": 0, "y": 0, "w": 0, "h": 1}}]},
            400,
            "BAD_REQUEST",
        ),
        ({"name": "x", "components": [COMPONENT, COMPONENT]}, 400, "BAD_REQUEST"),
        ({"name": "x", "components": "all"}, 422, "VALIDATION_ERROR"),
    ],
)
async def test_create_refusals(
    automation: httpx.AsyncClient, auth: dict, body: dict, status: int, code: str
) -> None:
    assert_error(await automation.post("/api/dashboards", json=body, headers=auth), status, code)


async def test_unknown_ids_bad_shares_and_auth(automation: httpx.AsyncClient, auth: dict) -> None:
    board = await create(automation, auth)
    for method, path in [
        ("GET", "/api/dashboards/nope"),
        ("PUT", "/api/dashboards/nope"),
        ("DELETE", "/api/dashboards/nope"),
        ("POST", "/api/dashboards/nope/share"),
        ("GET", "/api/dashboards/nope/share"),
    ]:
        assert_error(await automation.request(method, path, json={}, headers=auth), 404, "NOT_FOUND")
    share = f"/api/dashboards/{board['id']}/share"
    assert_error(
        await automation.post(share, json={"expires_in_hours": -1}, headers=auth), 400, "BAD_REQUEST"
    )
    resp = await automation.post(share, json={"expires_in_hours": "soon"}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    resp = await automation.put(f"/api/dashboards/{board['id']}", json={"name": ""}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST")
    assert_error(await automation.get("/api/dashboards"), 401, "UNAUTHORIZED")
    assert_error(await automation.post(share, json={}), 401, "UNAUTHORIZED")


async def test_default_duplicate_reorder_and_templates(automation: httpx.AsyncClient, auth: dict) -> None:
    first = await create(automation, auth)
    second = await create(automation, auth, name="Roof")
    resp = await automation.post(f"/api/dashboards/{second['id']}/default", headers=auth)
    assert resp.json()["data"]["is_default"] is True
    assert (await automation.get(f"/api/dashboards/{first['id']}", headers=auth)).json()["data"][
        "is_default"
    ] is False
    copy = (await automation.post(f"/api/dashboards/{first['id']}/duplicate", headers=auth)).json()["data"]
    assert (
        copy["name"] == "Lab (copy)"
        and copy["components"] == first["components"]
        and copy["id"] != first["id"]
    )
    order = [copy["id"], second["id"], first["id"]]
    listed = (
        await automation.put("/api/dashboards/reorder", json={"dashboard_ids": order}, headers=auth)
    ).json()
    assert [d["id"] for d in listed["data"]["dashboards"]] == order
    assert [d["sort_order"] for d in listed["data"]["dashboards"]] == [0, 1, 2]
    resp = await automation.put("/api/dashboards/reorder", json={"dashboard_ids": ["nope"]}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND")
    templates = (await automation.get("/api/dashboards/templates", headers=auth)).json()["data"]
    assert templates["count"] == 2 and templates["templates"][0]["id"] == "overview"
    one = (await automation.get("/api/dashboards/templates/single-metric", headers=auth)).json()["data"]
    assert one["components"][0]["type"] == "gauge"
    assert_error(await automation.get("/api/dashboards/templates/nope", headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.post("/api/dashboards/nope/duplicate", headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.post(f"/api/dashboards/{first['id']}/default"), 401, "UNAUTHORIZED")


async def test_add_and_remove_components(automation: httpx.AsyncClient, auth: dict) -> None:
    board = await create(automation, auth)
    gauge = {"id": "g1", "type": "gauge", "position": {"x": 6, "y": 0, "w": 3, "h": 3}}
    resp = await automation.post(f"/api/dashboards/{board['id']}/components", json=gauge, headers=auth)
    assert [c["id"] for c in resp.json()["data"]["components"]] == ["c1", "g1"]
    resp = await automation.post(f"/api/dashboards/{board['id']}/components", json=gauge, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST")  # duplicate id
    resp = await automation.delete(f"/api/dashboards/{board['id']}/components?component_id=c1", headers=auth)
    assert [c["id"] for c in resp.json()["data"]["components"]] == ["g1"]
    resp = await automation.request(
        "DELETE", f"/api/dashboards/{board['id']}/components", json={"component_id": "g1"}, headers=auth
    )
    assert resp.json()["data"]["components"] == []
    resp = await automation.delete(f"/api/dashboards/{board['id']}/components?component_id=g1", headers=auth)
    assert_error(resp, 404, "NOT_FOUND")
    resp = await automation.post(f"/api/dashboards/{board['id']}/components", json={"id": "x"}, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST")
    assert_error(
        await automation.post("/api/dashboards/nope/components", json=gauge, headers=auth), 404, "NOT_FOUND"
    )
