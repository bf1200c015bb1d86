"""Automations over HTTP: the unified list, CRUD, enable, executions, templates, export and import,
intent analysis; refusals (missing fields, wrong types, definitions that are not transforms, unknown
ids, no or bad credentials) in the vendor's envelope; durability across a restart on the same state
directory."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx
import pytest

from tests.api.lists import API_KEY, build_twin
from tests.api.support import assert_error
from tests.conftest import _client
from twin.serve import Twin, build
from twin.settings import Settings

CODE = "return {f: input.temperature * 9 / 5 + 32}"
DEFINITION = {"scope": "global", "js_code": CODE, "output_prefix": "transform", "complexity": 3}


async def create(client: httpx.AsyncClient, headers: dict, name: str = "Fahrenheit", **extra) -> dict:
    body = {"name": name, "description": "°C to °F", "type": "transform", "definition": DEFINITION, **extra}
    resp = await client.post("/api/automations", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["message"] == "Automation created successfully"
    return resp.json()["data"]["automation"]


async def test_crud(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    created = await create(automation, auth)
    assert created == {
        "id": created["id"],
        "name": "Fahrenheit",
        "description": "°C to °F",
        "type": "transform",
        "enabled": True,
        "execution_count": 0,
        "last_executed": None,
        "complexity": 3,
        "created_at": 1767225600,
        "updated_at": 1767225600,
    }
    got = (await automation.get(f"/api/automations/{created['id']}", headers=auth)).json()["data"]
    assert got["automation"] == created
    assert got["definition"] == {
        "id": created["id"],
        "name": "Fahrenheit",
        "description": "°C to °F",
        "enabled": True,
        "execution_count": 0,
        "last_executed": None,
        "created_at": 1767225600,
        "updated_at": 1767225600,
        "scope": "global",
        "js_code": CODE,
        "output_prefix": "transform",
        "complexity": 3,
    }

    twin.clock.advance(0.5)  # no sample yet: nothing runs before the first tick's debounce ends
    twin.clock.advance(119.5)
    changes = {
        "name": "F",
        "definition": {
            "js_code": "return 1",
            "scope": {"device_type": "env_sensor"},
            "complexity": 5,
            "intent": 7,
        },
    }
    resp = await automation.put(f"/api/automations/{created['id']}", json=changes, headers=auth)
    assert resp.json()["data"]["message"] == "Automation updated successfully"
    updated = (await automation.get(f"/api/automations/{created['id']}", headers=auth)).json()["data"]
    assert updated["automation"]["name"] == "F" and updated["automation"]["updated_at"] == 1767225720
    assert updated["definition"]["js_code"] == "return 1" and updated["definition"]["complexity"] == 3
    assert (
        updated["definition"]["scope"] == {"device_type": "env_sensor"}
        and "intent" not in updated["definition"]
    )

    resp = await automation.post(
        f"/api/automations/{created['id']}/enable", json={"enabled": False}, headers=auth
    )
    assert resp.json()["data"] == {"message": "Automation disabled", "enabled": False}
    after = (await automation.get(f"/api/automations/{created['id']}", headers=auth)).json()["data"][
        "automation"
    ]
    assert after["enabled"] is False and after["updated_at"] == 1767225720  # enabling is not an edit

    resp = await automation.delete(f"/api/automations/{created['id']}", headers=auth)
    assert resp.json()["data"] == {"message": "Automation deleted successfully"}
    resp = await automation.get(f"/api/automations/{created['id']}", headers=auth)
    assert_error(resp, 404, "NOT_FOUND", "Automation not found not found")
    runs = (await automation.get(f"/api/automations/{created['id']}/executions", headers=auth)).json()["data"]
    assert runs["count"] == 0  # forgotten with it


async def test_list_filters_and_pages(automation: httpx.AsyncClient, auth: dict, twin: Twin) -> None:
    first = await create(automation, auth, name="Alpha")
    twin.clock.advance(1)
    await create(automation, auth, name="Beta", description="counts fish", enabled=False)
    twin.clock.advance(1)
    await create(automation, auth, name="Gamma")

    listed = (await automation.get("/api/automations", headers=auth)).json()["data"]
    assert [a["name"] for a in listed["automations"]] == ["Gamma", "Beta", "Alpha"]  # newest change first
    assert listed["count"] == 3 and "total" not in listed and "pagination" not in listed
    page = (await automation.get("/api/automations?limit=2&offset=1", headers=auth)).json()["data"]
    assert [a["name"] for a in page["automations"]] == ["Beta", "Alpha"] and page["count"] == 2
    assert page["total"] == 3 and page["pagination"] == {"limit": 2, "offset": 1, "has_more": False}
    page = (await automation.get("/api/automations?limit=1", headers=auth)).json()["data"]
    assert page["pagination"] == {"limit": 1, "offset": 0, "has_more": True}

    off = (await automation.get("/api/automations?enabled=false", headers=auth)).json()["data"]
    assert [a["name"] for a in off["automations"]] == ["Beta"]
    found = (await automation.get("/api/automations?search=FISH&type=transform", headers=auth)).json()["data"]
    assert [a["name"] for a in found["automations"]] == ["Beta"]
    every = (await automation.get("/api/automations?type=all", headers=auth)).json()["data"]
    assert every["count"] == 3
    transforms = (await automation.get("/api/automations/transforms", headers=auth)).json()["data"]
    assert transforms["count"] == 3 and transforms["transforms"][0]["id"] == first["id"]  # stored order
    assert "type" not in transforms["transforms"][0]


async def test_export_import_templates_and_intent(automation: httpx.AsyncClient, auth: dict) -> None:
    created = await create(automation, auth)
    exported = (await automation.get("/api/automations/export", headers=auth)).json()["data"]
    assert exported["count"] == 1 and exported["exported_at"] == "2026-01-01T00:00:00+00:00"
    assert exported["automations"][0]["id"] == created["id"] and exported["automations"][0]["js_code"] == CODE

    renamed = [
        {**exported["automations"][0], "name": "Imported"},
        {**exported["automations"][0], "id": "t-2"},
    ]
    resp = await automation.post("/api/automations/import", json={"automations": renamed}, headers=auth)
    assert resp.json()["data"] == {"message": "Import completed", "imported": 2, "failed": 0}
    listed = (await automation.get("/api/automations", headers=auth)).json()["data"]["automations"]
    names = {a["id"]: a["name"] for a in listed}
    assert names == {created["id"]: "Imported", "t-2": "Fahrenheit"}  # the id is kept: same id, replaced

    single = {"automations": [{"id": "x", "name": "x", "type": "transform", "definition": DEFINITION}]}
    resp = await automation.post("/api/automations/import", json=single, headers=auth)
    assert_error(resp, 400, "BAD_REQUEST", "Invalid automations data: missing field `created_at`")
    resp = await automation.post("/api/automations/import", json={"rules": []}, headers=auth)
    assert_error(
        resp, 400, "BAD_REQUEST", "Invalid automations data: invalid type: null, expected a sequence"
    )

    templates = (await automation.get("/api/automations/templates", headers=auth)).json()["data"]
    assert templates == {"templates": [], "count": 0}
    intent = await automation.post(
        "/api/automations/analyze-intent", json={"description": "Calculate the average value"}, headers=auth
    )
    assert intent.json()["data"] == {
        "recommended_type": "transform",
        "confidence": 65,
        "reasoning": "Recommended as a data transform automation",
        "suggested_automation": None,
        "warnings": [],
    }


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ({}, "missing field `scope`"),
        (None, "invalid type: null, expected struct TransformAutomation"),
        (
            {"scope": "everywhere"},
            "unknown variant `everywhere`, expected one of `global`, `device_type`, `device`",
        ),
        ({"scope": {"device": 5}}, "invalid type: integer `5`, expected a string"),
        ({"scope": "global", "js_code": 5}, "invalid type: integer `5`, expected a string"),
        ({"scope": "global", "complexity": 300}, "invalid value: integer `300`, expected u8"),
        ({"scope": "global", "operations": [{"op_type": "magic"}]}, "unknown variant `magic`"),
        ({"scope": "global", "operations": [{"op_type": "extract", "from": "$"}]}, "missing field `output`"),
    ],
)
async def test_definitions_that_are_not_transforms(
    automation: httpx.AsyncClient, auth: dict, definition: object, message: str
) -> None:
    resp = await automation.post(
        "/api/automations", json={"name": "x", "definition": definition}, headers=auth
    )
    assert_error(resp, 400, "BAD_REQUEST")
    assert resp.json()["error"]["message"].startswith(f"Invalid transform definition: {message}")


async def test_refusals(automation: httpx.AsyncClient, auth: dict) -> None:
    for body in (
        {"definition": DEFINITION},  # no name
        {"name": "x"},  # no definition
        {"name": 5, "definition": DEFINITION},
        {"name": "x", "enabled": "yes", "definition": DEFINITION},
        {"name": "x", "type": "rule", "definition": DEFINITION},
    ):
        assert_error(
            await automation.post("/api/automations", json=body, headers=auth), 422, "VALIDATION_ERROR"
        )
    created = await create(automation, auth)
    url = f"/api/automations/{created['id']}"
    assert_error(await automation.put(url, json={"enabled": "no"}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.post(f"{url}/enable", json={}, headers=auth), 422, "VALIDATION_ERROR")
    assert_error(
        await automation.post(f"{url}/enable", json={"enabled": 1}, headers=auth), 422, "VALIDATION_ERROR"
    )
    resp = await automation.post("/api/automations/analyze-intent", json={}, headers=auth)
    assert_error(resp, 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/automations?limit=-1", headers=auth), 422, "VALIDATION_ERROR")
    assert_error(await automation.get("/api/automations?type=rule", headers=auth), 422, "VALIDATION_ERROR")
    missing = "Automation not found not found"
    assert_error(await automation.get("/api/automations/nope", headers=auth), 404, "NOT_FOUND", missing)
    assert_error(
        await automation.put("/api/automations/nope", json={}, headers=auth), 404, "NOT_FOUND", missing
    )
    assert_error(await automation.delete("/api/automations/nope", headers=auth), 404, "NOT_FOUND", missing)
    resp = await automation.post("/api/automations/nope/enable", json={"enabled": True}, headers=auth)
    assert_error(resp, 404, "NOT_FOUND", missing)
    runs = await automation.get("/api/automations/nope/executions?limit=x", headers=auth)
    assert runs.json()["data"] == {"automation_id": "nope", "executions": [], "count": 0}

    for method, path in (
        ("GET", "/api/automations"),
        ("POST", "/api/automations"),
        ("GET", url),
        ("PUT", url),
        ("DELETE", url),
        ("POST", f"{url}/enable"),
        ("GET", f"{url}/executions"),
        ("GET", "/api/automations/export"),
        ("POST", "/api/automations/import"),
        ("POST", "/api/automations/analyze-intent"),
        ("GET", "/api/automations/templates"),
    ):
        assert_error(await automation.request(method, path, json={}), 401, "UNAUTHORIZED")
        resp = await automation.request(method, path, json={}, headers={"Authorization": "Bearer nope"})
        assert_error(resp, 401, "UNAUTHORIZED")
    assert (await automation.get(url, headers=auth)).status_code == 200  # all still there


async def test_release_0917_refuses_in_its_own_shape(settings: Settings) -> None:
    twin = build(dataclasses.replace(settings, release="0.9.17"))
    async with _client(twin.automation_app, "http://automation") as client:
        resp = await client.get("/api/automations")
        assert resp.status_code == 401 and set(resp.json()) == {"error", "status"}
        reg = await client.post("/api/auth/register", json={"username": "first", "password": "secret1"})
        auth = {"Authorization": f"Bearer {reg.json()['token']}"}
        created = await create(client, auth)
        assert (await client.get(f"/api/automations/{created['id']}", headers=auth)).status_code == 200


async def test_automations_and_their_runs_survive_a_restart(tmp_path: Path) -> None:
    key = {"X-API-Key": API_KEY}
    twin = build_twin(tmp_path / "state")
    async with _client(twin.automation_app, "http://automation") as client:
        created = await create(client, key, definition={**DEFINITION, "scope": {"device": "env_sensor-0001"}})
        twin.clock.advance(15)
        before = (await client.get(f"/api/automations/{created['id']}/executions", headers=key)).json()[
            "data"
        ]
        telemetry = {"source": f"transform:{created['id']}", "metric": "transform.f"}
        outputs = (await client.get("/api/telemetry", params=telemetry, headers=key)).json()["data"]["data"]
    twin.world.store.close()

    again = build_twin(tmp_path / "state")
    async with _client(again.automation_app, "http://automation") as client:
        got = (await client.get(f"/api/automations/{created['id']}", headers=key)).json()["data"][
            "automation"
        ]
        assert got["name"] == "Fahrenheit" and got["execution_count"] == 1
        runs = (await client.get(f"/api/automations/{created['id']}/executions", headers=key)).json()["data"]
        assert runs == before and runs["count"] == 2
        params = {**telemetry, "start": 1767225600, "end": 1767225700}
        assert (await client.get("/api/telemetry", params=params, headers=key)).json()["data"][
            "data"
        ] == outputs
        sources = await client.get("/api/automations/transforms/data-sources", headers=key)
        assert sources.json()["data"]["count"] == 0  # outputs register again as transforms run again
