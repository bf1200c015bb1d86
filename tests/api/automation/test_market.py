"""The marketplaces from the shipped catalogue: extensions (browse, detail, README, updates, install),
community dashboard components (browse, install, upload, bundle, updates, remove) and cloud device
types (browse, import); the "marketplace unreachable" fault; failures in the vendor's shapes."""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile

import httpx

from tests.api.support import assert_error, data
from tests.conftest import _client, admin_token
from twin.scenario.actions import NoParams
from twin.scenario.catalog import ACTIONS
from twin.serve import Twin, build
from twin.settings import Settings


def unreachable(twin: Twin):
    """The scenario action, as a run applies it; returns its undo."""
    return ACTIONS["marketplace_unreachable"].run(twin.control, NoParams())


# Extensions ---------------------------------------------------------------------------------------
async def test_extension_marketplace_browse_detail_readme(automation: httpx.AsyncClient) -> None:
    listed = data(await automation.get("/api/extensions/market/list"))  # public, as the web app calls it
    assert listed["market_version"] and listed["total"] == len(listed["extensions"]) >= 3
    entry = next(e for e in listed["extensions"] if e["id"] == "air-quality-index")
    assert {"name", "description", "version", "author", "categories", "builds", "metadata_url"} <= set(entry)
    detail = data(await automation.get("/api/extensions/market/air-quality-index"))
    assert detail["version"] == entry["version"] and detail["type"] == "native"
    assert [c["name"] for c in detail["capabilities"]["commands"]] == ["compute_aqi"]
    readme = data(await automation.get("/api/extensions/market/air-quality-index/readme"))
    assert readme["content"].startswith("# Air Quality Index")
    assert data(await automation.get("/api/extensions/market/nope/readme")) == {"content": None}
    assert_error(await automation.get("/api/extensions/market/nope"), 404, "NOT_FOUND")


async def test_extension_install_and_updates(automation: httpx.AsyncClient, auth: dict) -> None:
    updates = data(await automation.get("/api/extensions/market/updates"))
    assert [(u["id"], u["current_version"], u["latest_version"]) for u in updates["updates_available"]] == [
        ("weather-forecast", "1.2.0", "1.3.0")
    ]
    url = "/api/extensions/market/install"
    result = data(await automation.post(url, json={"id": "air-quality-index"}, headers=auth))
    assert result == {
        "success": True, "extension_id": "air-quality-index", "downloaded": True, "installed": True,
        "path": "/var/lib/neomind/extensions/air-quality-index.json", "error": None,
    }  # fmt: skip
    ext = data(await automation.get("/api/extensions/air-quality-index"))
    assert ext["version"] == "1.0.0" and ext["state"] == "Running"
    upgraded = data(await automation.post(url, json={"id": "weather-forecast"}, headers=auth))
    assert upgraded["installed"] is True
    assert data(await automation.get("/api/extensions/weather-forecast"))["version"] == "1.3.0"
    run = {"command": "get_current", "args": {"city": "Oslo"}}
    out = data(await automation.post("/api/extensions/weather-forecast/command", json=run, headers=auth))
    assert out["output"]["city"] == "Oslo" and "temperature_c" in out["output"]  # still simulated
    assert data(await automation.get("/api/extensions/market/updates"))["count"] == 0
    missing = data(await automation.post(url, json={"id": "nope"}, headers=auth))
    assert missing["success"] is False and missing["installed"] is False and "not found" in missing["error"]
    assert_error(await automation.post(url, json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"id": 5}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"id": "air-quality-index"}), 401, "UNAUTHORIZED")


# Cloud device types -------------------------------------------------------------------------------
async def test_cloud_device_types_browse_and_import(automation: httpx.AsyncClient, auth: dict) -> None:
    listed = data(await automation.get("/api/device-types/cloud/list"))
    assert listed["index_version"] and listed["total"] == len(listed["device_types"]) >= 5
    assert {"device_type", "name", "description", "categories"} <= set(listed["device_types"][0])
    url = "/api/device-types/cloud/import"
    result = data(await automation.post(url, json={"device_types": ["smart_plug_v2", "nope"]}, headers=auth))
    failure = {"device_type": "nope", "reason": "HTTP status: 404 Not Found"}
    assert result == {"imported": 1, "skipped": 0, "failed": 1, "failures": [failure]}
    plug = data(await automation.get("/api/device-types/smart_plug_v2", headers=auth))
    assert {m["name"] for m in plug["metrics"]} == {"power", "state", "energy_kwh"}
    again = data(await automation.post(url, json={"device_types": ["smart_plug_v2"]}, headers=auth))
    assert again["imported"] == 1  # an existing type is updated, never skipped
    assert_error(
        await automation.post(url, json={"device_types": "x"}, headers=auth), 422, "VALIDATION_ERROR"
    )
    assert_error(await automation.post(url, json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(url, json={"device_types": []}), 401, "UNAUTHORIZED")


# Components ---------------------------------------------------------------------------------------
async def test_component_market_install_bundle_updates_remove(
    automation: httpx.AsyncClient, auth: dict
) -> None:
    market = data(await automation.get("/api/frontend-components/market/list"))
    assert {c["id"] for c in market["components"]} == {"gauge-pro", "heatmap", "clock"}
    assert market["total"] == 3 and market["market_version"]
    url = "/api/frontend-components/market/install"
    installed = data(await automation.post(url, json={"component_id": "heatmap"}, headers=auth))["component"]
    assert installed["version"] == "1.1.0" and installed["source"] == "marketplace"
    assert installed["installed_at"] == 1767225600 and installed["global_name"] == "NeoMindHeatmap"
    listed = data(await automation.get("/api/frontend-components", headers=auth))
    assert [c["id"] for c in listed["components"]] == ["heatmap"] and listed["total"] == 1
    assert listed["builtin_count"] == len(listed["builtin_types"]) == 18
    one = data(await automation.get("/api/frontend-components/heatmap", headers=auth))["component"]
    assert one == installed
    builtin = data(await automation.get("/api/frontend-components/line-chart", headers=auth))["component"]
    assert builtin["name"] == "Line Chart" and builtin["category"] == "chart"
    bundle = await automation.get("/api/frontend-components/heatmap/bundle")  # public: a <script> tag
    assert bundle.status_code == 200 and bundle.headers["content-type"].startswith("application/javascript")
    assert b"window.NeoMindHeatmap=" in bundle.content and bundle.headers["cache-control"] == "no-cache"
    assert data(await automation.get("/api/frontend-components/updates", headers=auth)) == {
        "updates": [],
        "count": 0,
    }
    removed = data(await automation.delete("/api/frontend-components/heatmap", headers=auth))
    assert removed == {"success": True, "component_id": "heatmap", "state": "uninstalled"}
    for method, path in [
        ("GET", "/api/frontend-components/heatmap"),
        ("DELETE", "/api/frontend-components/heatmap"),
        ("GET", "/api/frontend-components/heatmap/bundle"),
    ]:
        assert_error(await automation.request(method, path, headers=auth), 404, "NOT_FOUND")
    assert_error(await automation.post(url, json={"component_id": "nope"}, headers=auth), 404, "NOT_FOUND")
    for bad in ("", "value-card", "../x"):
        assert_error(await automation.post(url, json={"component_id": bad}, headers=auth), 400, "BAD_REQUEST")
    assert_error(await automation.get("/api/frontend-components/value-card/bundle"), 400, "BAD_REQUEST")
    assert_error(await automation.post(url, json={"component_id": "heatmap"}), 401, "UNAUTHORIZED")
    assert_error(await automation.get("/api/frontend-components"), 401, "UNAUTHORIZED")


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, content in files.items():
            z.writestr(name, content)
    return buf.getvalue()


async def test_component_upload(automation: httpx.AsyncClient, auth: dict) -> None:
    manifest = {"id": "dial", "name": {"en": "Dial"}, "description": "A dial", "global_name": "Dial"}
    url = "/api/frontend-components"
    parts = {"manifest": (None, json.dumps(manifest)), "bundle": ("bundle.js", b"window.Dial={default:1}")}
    component = data(await automation.post(url, files=parts, headers=auth))["component"]
    assert component["source"] == "local" and component["icon"] == "Box" and component["version"] == "1.0.0"
    assert component["size_constraints"]["max_w"] == 12
    package = _zip(
        {"pkg/manifest.json": json.dumps({**manifest, "id": "dial2"}).encode(), "pkg/bundle.js": b"x"}
    )
    resp = await automation.post(url, files={"package": ("dial.zip", package)}, headers=auth)
    assert data(resp)["component"]["id"] == "dial2"
    assert (await automation.get("/api/frontend-components/dial2/bundle")).content == b"x"
    cases = [
        ({"bundle": ("b.js", b"x")}, "Missing 'manifest' or 'package' field"),
        ({"manifest": (None, json.dumps(manifest))}, "Missing 'bundle' or 'package' field"),
        ({"manifest": (None, "{"), "bundle": ("b.js", b"x")}, "Invalid manifest JSON"),
        ({"manifest": (None, json.dumps({"id": "x"})), "bundle": ("b.js", b"x")}, "missing field `name`"),
        (
            {"manifest": (None, json.dumps({**manifest, "id": "sparkline"})), "bundle": ("b.js", b"x")},
            "reserved",
        ),
        ({"package": ("p.zip", b"not a zip")}, "Invalid ZIP file"),
        ({"package": ("p.zip", _zip({"bundle.js": b"x"}))}, "ZIP must contain manifest.json"),
    ]
    for files, message in cases:
        resp = await automation.post(url, files=files, headers=auth)
        assert_error(resp, 400, "BAD_REQUEST")
        assert message in resp.json()["error"]["message"], (files, resp.text)
    assert_error(await automation.post(url, json=manifest, headers=auth), 400, "BAD_REQUEST")  # not multipart
    assert_error(await automation.post(url, files=parts), 401, "UNAUTHORIZED")


# The fault ----------------------------------------------------------------------------------------
async def test_marketplace_unreachable(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    await automation.post(
        "/api/frontend-components/market/install", json={"component_id": "clock"}, headers=auth
    )
    undo = unreachable(twin)
    for path, key, message in [
        ("/api/extensions/market/list", "extensions", "extension marketplace"),
        ("/api/frontend-components/market/list", "components", "component marketplace"),
        ("/api/device-types/cloud/list", "device_types", "cloud repository"),
    ]:
        body = data(await automation.get(path))
        assert body[key] == [] and body["total"] == 0 and body["error"] == "network_error", path
        assert message in body["message"]
    assert_error(await automation.get("/api/extensions/market/air-quality-index"), 500, "INTERNAL_ERROR")
    assert data(await automation.get("/api/extensions/market/air-quality-index/readme")) == {"content": None}
    assert data(await automation.get("/api/extensions/market/updates"))["count"] == 0
    failed = data(
        await automation.post("/api/extensions/market/install", json={"id": "modbus-bridge"}, headers=auth)
    )
    assert failed["success"] is False and failed["error"].startswith("Network error")
    resp = await automation.post("/api/frontend-components/market/install", json={"component_id": "heatmap"},
                                 headers=auth)  # fmt: skip
    assert_error(resp, 503, "SERVICE_UNAVAILABLE")
    updates = data(await automation.get("/api/frontend-components/updates", headers=auth))
    assert updates == {"updates": [], "count": 0, "error": "network_error"}
    body = {"device_types": ["door_contact"]}
    imported = data(await automation.post("/api/device-types/cloud/import", json=body, headers=auth))
    assert imported["imported"] == 0 and imported["failed"] == 1
    assert (
        await automation.get("/api/frontend-components/clock/bundle")
    ).status_code == 200  # installed: local
    undo()
    assert data(await automation.get("/api/extensions/market/list"))["total"] > 0


async def test_release_0917_answers_component_install_failures_200(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        reg = await client.post("/api/auth/register", json={"username": "first", "password": "secret1"})
        auth = {"Authorization": f"Bearer {reg.json()['token']}"}
        url = "/api/frontend-components/market/install"
        resp = await client.post(url, json={"component_id": "nope"}, headers=auth)
        assert resp.status_code == 200
        assert resp.json() == {"success": False, "error": "Component 'nope' not found in marketplace"}
        ok = await client.post(url, json={"component_id": "gauge-pro"}, headers=auth)
        assert ok.json()["data"]["component"]["version"] == "2.0.1"


async def test_installed_components_survive_a_restart(tmp_path, settings: Settings) -> None:
    durable = dataclasses.replace(settings, state_dir=tmp_path)
    twin = build(durable)
    async with _client(twin.automation_app, "http://automation") as client:
        auth = {"Authorization": f"Bearer {await admin_token(client)}"}
        url = "/api/frontend-components/market/install"
        assert (await client.post(url, json={"component_id": "gauge-pro"}, headers=auth)).status_code == 200
    twin.world.store.close()
    again = build(durable)
    async with _client(again.automation_app, "http://automation") as client:
        bundle = await client.get("/api/frontend-components/gauge-pro/bundle")
        assert bundle.status_code == 200 and b"NeoMindGaugePro" in bundle.content
