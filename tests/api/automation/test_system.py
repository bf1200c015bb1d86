"""Public system routes: /metrics (Prometheus text), network info, capabilities, tools; system stats."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator

import httpx
import pytest

from api.automation.metrics import route_template
from tests.conftest import SCENARIOS, _client, admin_token
from twin.sensors import sensors_of
from twin.serve import Twin, build
from twin.settings import Settings, parse

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.eE+-]+|NaN|\+Inf|-Inf)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def make_twin(**overrides) -> Twin:
    return build(Settings(scenario=SCENARIOS / "test.yaml", step=True, **overrides))


def parse_metrics(text: str) -> tuple[dict[str, tuple[str, str]], list[tuple[str, dict[str, str], float]]]:
    """Every line is ``# HELP``, ``# TYPE`` or ``name{labels} value``; returns (meta, samples)."""
    meta: dict[str, tuple[str, str]] = {}
    samples: list[tuple[str, dict[str, str], float]] = []
    helps: set[str] = set()
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            assert name in helps, f"TYPE before HELP for {name}"
            meta[name] = (kind, "")
        else:
            m = SAMPLE.match(line)
            assert m, f"not an exposition line: {line!r}"
            labels = dict(LABEL.findall(m.group(3) or ""))
            assert m.group(1) in meta, f"sample before its TYPE: {line!r}"
            samples.append((m.group(1), labels, float(m.group(4))))
    return meta, samples


def value(samples, name: str, **labels: str) -> float:
    found = [v for n, lab, v in samples if n == name and all(lab.get(k) == x for k, x in labels.items())]
    return sum(found)


async def scrape(client: httpx.AsyncClient):
    resp = await client.get("/api/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse_metrics(resp.text)


# /metrics ------------------------------------------------------------------------------------
async def test_metrics_has_help_and_type_for_every_metric(automation: httpx.AsyncClient) -> None:
    meta, samples = await scrape(automation)
    assert meta == {
        "neomind_http_requests_total": ("counter", ""),
        "neomind_event_bus_events_published_total": ("counter", ""),
        "neomind_event_bus_events_dropped_total": ("counter", ""),
        "neomind_uptime_seconds": ("gauge", ""),
        "neomind_build_info": ("gauge", ""),
    }
    assert ("neomind_build_info", {"version": "0.9.24"}, 1.0) in samples


async def test_request_counters_use_route_templates(automation: httpx.AsyncClient) -> None:
    _, before = await scrape(automation)
    for name in ("device", "telemetry", "nope"):
        await automation.get(f"/api/capabilities/{name}")
    await automation.get("/api/health")
    await automation.get("/api/settings/timezone")  # 401
    _, after = await scrape(automation)
    name = "neomind_http_requests_total"
    assert value(after, name, route="/api/capabilities/{name}", status="200") == 2
    assert value(after, name, route="/api/capabilities/{name}", status="404") == 1
    assert value(after, name, method="GET", route="/api/health", status="200") == 1
    assert value(after, name, route="/api/settings/timezone", status="401") == 1
    assert value(after, name, route="/api/metrics") == value(before, name, route="/api/metrics") + 1
    assert not any("telemetry" in lab.get("route", "") for _, lab, _ in after)


async def test_unmatched_paths_share_one_label(automation: httpx.AsyncClient) -> None:
    for i in range(3):
        await automation.get(f"/nowhere/{i}")
    _, samples = await scrape(automation)
    routes = {lab["route"] for n, lab, _ in samples if n == "neomind_http_requests_total"}
    assert "unmatched" in routes and not any(r.startswith("/nowhere") for r in routes)


async def test_dropped_events_and_uptime_follow_the_world(twin: Twin, automation: httpx.AsyncClient) -> None:
    _, before = await scrape(automation)
    assert value(before, "neomind_event_bus_events_dropped_total") == 0
    sub = twin.automation.bus.subscribe(maxlen=1)
    twin.clock.advance(60)
    _, after = await scrape(automation)
    assert len(sub) == 1
    dropped = value(after, "neomind_event_bus_events_dropped_total")
    published = value(after, "neomind_event_bus_events_published_total")
    assert dropped > 0 and published >= dropped + 1
    assert published > value(before, "neomind_event_bus_events_published_total")
    assert value(after, "neomind_uptime_seconds") == pytest.approx(60)
    sub.close()


async def test_the_earlier_release_serves_metrics_and_a_public_tool_detail() -> None:
    twin = make_twin(release="0.9.17", public_host="h")
    async with _client(twin.automation_app, "http://automation") as client:
        _, samples = await scrape(client)
        tool = await client.get("/api/tools/list_devices")
    assert ("neomind_build_info", {"version": "0.9.17"}, 1.0) in samples
    assert tool.status_code == 200 and tool.json()["data"]["name"] == "list_devices"


# /system/network-info ------------------------------------------------------------------------
@pytest.fixture
async def configured() -> AsyncIterator[httpx.AsyncClient]:
    _, settings = parse(
        ["run", "--port", "9400", "--mqtt-port", "1999"],
        {"NEOMIND_PUBLIC_HOST": "twin.lan", "NEOMIND_SERVER_URL": "https://iot.example.com/"},
    )
    twin = build(dataclasses.replace(settings, scenario=SCENARIOS / "test.yaml", step=True))
    async with _client(twin.automation_app, "http://automation") as client:
        yield client


async def test_network_info_honours_the_configured_addresses(configured: httpx.AsyncClient) -> None:
    resp = await configured.get(
        "/api/system/network-info", headers={"X-Forwarded-Host": "proxy.example", "X-Forwarded-Proto": "http"}
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["success"] is True and "timestamp" in body["meta"]
    assert body["data"] == {
        "ssid": None,
        "ip": "twin.lan",
        "server_url": "https://iot.example.com",
        "server_url_source": "env",
        "api_url": "https://iot.example.com/api",
        "mqtt_url": "mqtt://twin.lan:1999",
        "webhook_url_template": "https://iot.example.com/api/devices/{device_id}/webhook",
        "events_ws_url": "wss://iot.example.com/api/events/ws",
    }


async def test_network_info_uses_forwarded_headers_then_falls_back() -> None:
    async with _client(make_twin(public_host="10.0.0.5").automation_app, "http://automation") as client:
        forwarded = await client.get(
            "/api/system/network-info",
            headers={"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "edge.example:8443, inner"},
        )
        host_only = await client.get("/api/system/network-info", headers={"X-Forwarded-Host": "edge"})
        plain = await client.get("/api/system/network-info")
    data = forwarded.json()["data"]
    assert (data["server_url"], data["server_url_source"]) == ("https://edge.example:8443", "proxy_header")
    assert data["webhook_url_template"] == "https://edge.example:8443/api/devices/{device_id}/webhook"
    assert data["mqtt_url"] == "mqtt://10.0.0.5:1883"
    assert host_only.json()["data"]["server_url"] == "http://edge"
    data = plain.json()["data"]
    assert (data["server_url"], data["server_url_source"]) == ("http://10.0.0.5:9375", "fallback")
    assert data["ip"] == "10.0.0.5"


async def test_network_info_reports_an_external_broker() -> None:
    twin = make_twin(public_host="h", mqtt_url="mqtt://broker.lan:1884")
    async with _client(twin.automation_app, "http://automation") as client:
        data = (await client.get("/api/system/network-info")).json()["data"]
    assert data["mqtt_url"] == "mqtt://broker.lan:1884" and data["server_url"] == "http://h:9375"


# Capabilities and tools --------------------------------------------------------------------------
async def test_capabilities_list_and_detail(automation: httpx.AsyncClient) -> None:
    resp = await automation.get("/api/capabilities")
    assert resp.status_code == 200
    data = resp.json()["data"]
    names = [c["name"] for c in data["capabilities"]]
    assert data["count"] == len(names)
    assert {"device", "rule", "agent", "telemetry"} <= set(names)
    assert (await automation.get("/api/capabilities")).json()["data"] == data  # deterministic
    device = (await automation.get("/api/capabilities/device")).json()["data"]
    assert device == next(c for c in data["capabilities"] if c["name"] == "device")
    assert {"list_devices", "send_device_command"} <= set(device["tools"])


async def test_tools_list_and_detail(automation: httpx.AsyncClient) -> None:
    """``/tools`` and ``/tools/:name`` are public, as on the real router."""
    data = (await automation.get("/api/tools")).json()["data"]
    names = [t["name"] for t in data["tools"]]
    assert data["count"] == len(names) == len(set(names))
    assert {
        "list_devices",
        "get_device_metrics",
        "send_device_command",
        "query_telemetry",
        "create_rule",
    } <= set(names)
    caps = (await automation.get("/api/capabilities")).json()["data"]["capabilities"]
    assert sorted(t for c in caps for t in c["tools"]) == sorted(names)  # every tool in one capability
    tool = (await automation.get("/api/tools/send_device_command")).json()["data"]
    assert tool["parameters"]["type"] == "object"
    assert tool["parameters"]["required"] == ["device_id", "command"]
    assert tool["parameters"]["properties"]["params"]["type"] == "object"


async def test_unknown_capability_or_tool_is_404(automation: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {await admin_token(automation)}"}
    for path in ("/api/capabilities/teleportation", "/api/tools/launch_rocket", "/api/tools/LIST_DEVICES"):
        resp = await automation.get(path, headers=auth)
        assert resp.status_code == 404
        body = resp.json()
        assert body["success"] is False and body["error"]["code"] == "NOT_FOUND"
        assert "not found" in body["error"]["message"]


# /stats/system ---------------------------------------------------------------------------------
async def test_system_stats_needs_auth_and_has_the_appendix_shape(
    twin: Twin, automation: httpx.AsyncClient
) -> None:
    assert (await automation.get("/api/stats/system")).status_code == 401
    token = await admin_token(automation)
    twin.clock.advance(90)
    resp = await automation.get("/api/stats/system", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["version"] == "0.9.24" and data["uptime"] == 90
    assert data["stats"]["users"] == 1 and data["stats"]["devices"] == len(sensors_of(twin.world).by_device)
    assert data["used_memory"] + data["free_memory"] == data["total_memory"]
    assert 0 <= data["cpu_usage"] <= 100 and data["cpu_count"] >= 1
    assert {"platform", "arch", "available_memory", "gpus", "disks", "networks"} <= set(data)


def test_route_template_restores_an_included_router_prefix() -> None:
    class Route:
        def __init__(self, path: str) -> None:
            self.path = path

    assert route_template({"path": "/api/tools/x", "route": Route("/tools/{name}")}) == "/api/tools/{name}"
    assert (
        route_template({"path": "/api/tools/x", "route": Route("/api/tools/{name}")}) == "/api/tools/{name}"
    )
    assert (
        route_template({"path": "/api/images/a/b", "route": Route("/images/{p:path}")}) == "/images/{p:path}"
    )
    assert route_template({"path": "/api/nothing"}) == "unmatched"
