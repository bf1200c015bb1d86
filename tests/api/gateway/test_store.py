"""The app store (``/api/v1/store/*``): the swagger's shapes, a store install end to end (the app
appears in ``/apps`` and its image lands on the partitions), install records, and failure paths
for every route (wrong types, unknown keys, a missing token)."""

from __future__ import annotations

import httpx
import pytest

from tests.api import handler_shapes as hs
from tests.api.gateway.test_apps import usage
from tests.conftest import gateway_token
from twin.serve import Twin

STORE = "/api/v1/store"


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def test_catalogue_shapes_follow_the_swagger(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    page = (await gateway.get(f"{STORE}/apps", headers=auth, params={"page_size": 2})).json()["data"]
    assert page["total"] >= 4 and len(page["apps"]) == 2 and page["page_size"] == 2
    app = page["apps"][0]
    assert isinstance(app["id"], int) and isinstance(app["architectures"], str)
    assert isinstance(app["soc_support"], str) and isinstance(app["rating"], float)
    second = (await gateway.get(f"{STORE}/apps", headers=auth, params={"page": 2, "page_size": 2})).json()
    assert {a["key"] for a in second["data"]["apps"]}.isdisjoint({a["key"] for a in page["apps"]})
    found = (await gateway.get(f"{STORE}/apps", headers=auth, params={"search": "vehicle"})).json()["data"]
    assert [a["key"] for a in found["apps"]] == ["vehicle-counter"]
    detail = (await gateway.get(f"{STORE}/apps/ppe-detector", headers=auth)).json()["data"]
    assert detail["versions"][0]["app_id"] == detail["app"]["id"]
    assert isinstance(detail["versions"][0]["default_config"], str)
    assert {t["key"] for t in detail["tags"]} == {"people", "safety"}
    tags = (await gateway.get(f"{STORE}/tags", headers=auth)).json()["data"]["tags"]
    assert all(set(t) == {"id", "key", "name", "name_zh", "sort", "created_at", "updated_at"} for t in tags)
    assert {t["key"] for t in found["apps"][0]["tags"]} == {"vehicle"}  # AppWithTags


async def test_a_store_install_lands_in_apps_and_on_the_partitions(
    gateway: httpx.AsyncClient, twin: Twin, auth: dict[str, str]
) -> None:
    before = usage(twin)
    resp = await gateway.post(
        f"{STORE}/apps/vehicle-counter/install", headers=auth, json={"config": {"lanes": 2}}
    )
    assert resp.status_code == 200, resp.text
    again = await gateway.post(f"{STORE}/apps/vehicle-counter/install", headers=auth)
    assert (again.status_code, again.json()["code"]) == (409, 4001), again.text
    task_id = resp.json()["data"]["task_id"]
    assert (await gateway.get(f"{STORE}/installs/vehicle-counter", headers=auth)).json()["data"]["install"][
        "version"
    ] == "2.0.1"
    for _ in range(200):
        task = (await gateway.get(f"/api/v1/apps/install-progress/{task_id}", headers=auth)).json()["data"]
        if task["phase"] in ("complete", "error"):
            break
        twin.clock.advance(0.5)
    assert task["phase"] == "complete", task
    apps = (await gateway.get("/api/v1/apps", headers=auth)).json()["data"]
    assert "vehicle-counter" in str(apps)
    after = usage(twin)
    assert sum(after.values()) - sum(before.values()) >= 58_000_000, (before, after)
    record = (await gateway.get(f"{STORE}/installs/vehicle-counter", headers=auth)).json()["data"]["install"]
    assert record["status"] == "installed" and '"lanes": 2' in record["config"]
    assert record["app_detail_id"] == 21 and record["image"] == "vehicle-counter:2.0.1"
    # once the first install is done, the app can be installed again over itself
    assert (await gateway.post(f"{STORE}/apps/vehicle-counter/install", headers=auth)).status_code == 200


async def test_update_install_record_fields(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    body = {"app_id": "custom", "name": "Custom", "store_app_id": 4, "image": "custom:1"}
    made = (await gateway.post(f"{STORE}/installs", headers=auth, json=body)).json()["data"]["install"]
    assert made["store_app_id"] == 4 and made["image"] == "custom:1"
    upd = await gateway.put(
        f"{STORE}/installs/custom", headers=auth, json={"status": "running", "pid": 42, "container_id": "c1"}
    )
    rec = upd.json()["data"]["install"]
    assert (rec["status"], rec["pid"], rec["container_id"]) == ("running", 42, "c1")
    listed = (await gateway.get(f"{STORE}/installs", headers=auth)).json()["data"]["installs"]
    assert [r["app_id"] for r in listed] == ["custom"]
    assert (await gateway.delete(f"{STORE}/installs/custom", headers=auth)).status_code == 200
    assert (await gateway.get(f"{STORE}/installs", headers=auth)).json()["data"]["installs"] == []


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "code"),
    [
        ("POST", "/apps/people-counter/install", {"json": {"version": 1}}, 400, 1001),
        ("POST", "/apps/people-counter/install", {"content": b"{broken"}, 400, 1001),
        ("POST", "/apps/people-counter/install", {"content": b"[]"}, 400, 1001),
        ("POST", "/installs", {"json": {"name": "x"}}, 400, 1001),
        ("POST", "/installs", {"json": {"app_id": 1, "name": "x"}}, 400, 1001),
        ("POST", "/installs", {"json": {"app_id": "a", "name": "x", "store_app_id": "abc"}}, 400, 1001),
        ("POST", "/installs", {"json": {"app_id": "a", "name": "x", "store_app_id": [1]}}, 400, 1001),
        ("POST", "/installs", {"json": {"app_id": "a", "name": "x", "version": 2}}, 400, 1001),
        ("POST", "/installs", {"content": b"nope"}, 400, 1001),
        ("PUT", "/installs/ghost", {"json": {"status": "x"}}, 404, 4000),
        ("PUT", "/installs/ghost", {"content": b"nope"}, 400, 1001),
    ],
)
async def test_store_bad_requests(
    gateway: httpx.AsyncClient,
    auth: dict[str, str],
    method: str,
    path: str,
    kwargs: dict,
    status: int,
    code: int,
) -> None:
    resp = await gateway.request(method, STORE + path, headers=auth, **kwargs)
    assert (resp.status_code, resp.json()["code"]) == (status, code), resp.text


@pytest.mark.parametrize("body", [{"pid": "12"}, {"pid": True}, {"status": 1}, {"container_id": []}])
async def test_update_with_wrong_types_changes_nothing(
    gateway: httpx.AsyncClient, auth: dict[str, str], body: dict
) -> None:
    await gateway.post(f"{STORE}/installs", headers=auth, json={"app_id": "custom", "name": "Custom"})
    resp = await gateway.put(f"{STORE}/installs/custom", headers=auth, json={"message": "m", **body})
    assert (resp.status_code, resp.json()["code"]) == (400, 1001), resp.text
    rec = (await gateway.get(f"{STORE}/installs/custom", headers=auth)).json()["data"]["install"]
    assert rec["message"] == "" and rec["status"] == "installing"


async def test_install_records_in_the_app_install_shape(
    gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    body = {"app_id": "custom", "name": "Custom", "store_app_id": 2}
    await gateway.post(f"{STORE}/installs", headers=auth, json=body)
    await gateway.post(f"{STORE}/installs", headers=auth, json={"app_id": "bare", "name": "Bare"})
    listed = (await gateway.get(f"{STORE}/installs", headers=auth)).json()["data"]
    assert hs.mismatches(listed, hs.STORE["GET /api/v1/store/installs"]) == [] and listed["total"] == 2
    bare, custom = listed["installs"]
    assert (
        bare["store_app_id"] is None
        and "store_app" not in bare
        and bare["started_at"] == "0001-01-01T00:00:00Z"
    )
    assert custom["store_app"]["key"] == "vehicle-counter"
    one = (await gateway.get(f"{STORE}/installs/bare", headers=auth)).json()["data"]
    assert one["store_app"] is None and one["install"]["app_id"] == "bare"
    gone = await gateway.delete(f"{STORE}/installs/bare", headers=auth)
    assert gone.json()["data"] == {"message": "install deleted"}


@pytest.mark.parametrize(
    "params",
    [
        {"page": "abc"},
        {"page": "0"},
        {"page_size": "x"},
        {"page_size": "0"},
        {"page_size": "101"},
        {"featured": "no"},
    ],
)
async def test_odd_query_values_fall_back_to_the_defaults(
    gateway: httpx.AsyncClient, auth: dict[str, str], params: dict
) -> None:
    """ListApps reads them with strconv.Atoi and no error: out of range is page 1, 20 a page, and
    only ``featured=true`` filters."""
    resp = await gateway.get(f"{STORE}/apps", headers=auth, params=params)
    data = resp.json()["data"]
    assert (data["page"], data["page_size"], len(data["apps"])) == (1, 20, 4), resp.text
    featured = (await gateway.get(f"{STORE}/apps", headers=auth, params={"featured": "true"})).json()["data"]
    assert {a["key"] for a in featured["apps"]} == {"people-counter", "intrusion-alarm"}


ROUTES = [
    ("GET", "/apps"),
    ("GET", "/apps/people-counter"),
    ("POST", "/apps/people-counter/install"),
    ("GET", "/categories"),
    ("GET", "/tags"),
    ("GET", "/installs"),
    ("POST", "/installs"),
    ("GET", "/installs/x"),
    ("PUT", "/installs/x"),
    ("DELETE", "/installs/x"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, STORE + path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


async def test_a_wrong_token_is_refused(gateway: httpx.AsyncClient) -> None:
    resp = await gateway.get(f"{STORE}/apps", headers={"Authorization": "Bearer not-a-session"})
    assert resp.status_code == 401 and resp.json()["code"] in (2000, 2001, 2002), resp.text
