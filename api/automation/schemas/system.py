"""Wire shapes of the system area: settings, capabilities, tools, network info, stats and /metrics."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from api.automation.metrics import HttpCounters
from hardware.ports.rules import DeliveryStats
from hardware.ports.system import (
    AgentSettings,
    BusStats,
    Capability,
    DeviceSettings,
    HostStats,
    NetworkInfo,
    RetentionCleanup,
    RetentionPolicy,
    TimezoneOption,
    TimezoneSetting,
    Tool,
)

METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
METRIC_PREFIX = "neomind"


# Request bodies: strict types (``"yes"`` is not a boolean); a field left out keeps its value, and
# ``null`` is only accepted where the setting is nullable. Bad types answer 422, bad values 400.
def _omittable() -> Any:
    """A setting that may be left out (it keeps its value) but not sent as ``null``."""
    return Field(default=None)


class _Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


class TimezoneRequest(_Settings):
    timezone: str


class RetentionRequest(_Settings):
    enabled: bool = _omittable()
    interval_hours: int = _omittable()
    default_retention: int | None = None
    image_retention: int | None = None


class AgentSettingsRequest(_Settings):
    max_rounds: int = _omittable()
    execution_timeout_secs: int = _omittable()
    tool_concurrency: int = _omittable()
    default_temperature: float = _omittable()
    default_top_p: float = _omittable()
    default_thinking_enabled: bool | None = None
    chat_history_depth: int = _omittable()
    chat_turn_timeout_secs: int = _omittable()


class DeviceSettingsRequest(_Settings):
    default_offline_timeout_secs: int = _omittable()
    auto_onboard_enabled: bool = _omittable()


# Settings ----------------------------------------------------------------------------------------
def timezone(t: TimezoneSetting) -> dict[str, Any]:
    return {"timezone": t.timezone, "is_default": t.is_default}


def timezone_updated(t: TimezoneSetting) -> dict[str, Any]:
    return {"success": True, "timezone": t.timezone}


def timezones(options: list[TimezoneOption]) -> dict[str, Any]:
    return {"timezones": [{"id": o.id, "name": o.name} for o in options]}


def retention(p: RetentionPolicy) -> dict[str, Any]:
    return dataclasses.asdict(p)


def retention_cleanup(c: RetentionCleanup) -> dict[str, Any]:
    """Times are unix seconds; a ``None`` cutoff means that class of data is kept forever;
    ``deleted`` counts the stored samples removed (simulated sensor history is not stored)."""
    return {
        "success": True,
        "message": "Retention cleanup completed",
        "ran_at": int(c.ran_at),
        "default_cutoff": None if c.default_cutoff is None else int(c.default_cutoff),
        "image_cutoff": None if c.image_cutoff is None else int(c.image_cutoff),
        "deleted": c.deleted,
    }


def agent_settings(a: AgentSettings) -> dict[str, Any]:
    return dataclasses.asdict(a)


def device_settings(d: DeviceSettings, *, updated: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = dataclasses.asdict(d)
    if updated:
        body["success"] = True  # the PUT payload carries its own flag (reference §3)
    return body


# Self-description --------------------------------------------------------------------------------
def capability(c: Capability) -> dict[str, Any]:
    return {
        "name": c.name,
        "display_name": c.display_name,
        "description": c.description,
        "tools": list(c.tools),
    }


def capabilities(items: list[Capability]) -> dict[str, Any]:
    return {"capabilities": [capability(c) for c in items], "count": len(items)}


def tool(t: Tool) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for p in t.parameters:
        prop: dict[str, Any] = {"type": p.type, "description": p.description}
        if p.enum:
            prop["enum"] = list(p.enum)
        properties[p.name] = prop
    return {
        "name": t.name,
        "category": t.category,
        "description": t.description,
        "parameters": {
            "type": "object",
            "properties": properties,
            "required": [p.name for p in t.parameters if p.required],
        },
    }


def tools(items: list[Tool]) -> dict[str, Any]:
    return {"tools": [tool(t) for t in items], "count": len(items)}


# Network info ------------------------------------------------------------------------------------
def _first(header: str | None) -> str:
    """The client-most value of a possibly comma-separated forwarding header."""
    return (header or "").split(",")[0].strip()


def network_info(net: NetworkInfo, forwarded_proto: str | None, forwarded_host: str | None) -> dict[str, Any]:
    """``server_url``: the configured URL, else the proxy's ``X-Forwarded-*``, else ``http://<ip>:<port>``."""
    if net.server_url:
        server_url, source = net.server_url.rstrip("/"), "env"
    elif host := _first(forwarded_host):
        server_url, source = f"{_first(forwarded_proto) or 'http'}://{host}", "proxy_header"
    else:
        server_url, source = net.fallback_url, "fallback"
    ws = "wss" if server_url.startswith("https://") else "ws"
    return {
        "ssid": net.ssid,
        "ip": net.ip,
        "server_url": server_url,
        "server_url_source": source,
        "api_url": f"{server_url}/api",
        "mqtt_url": net.broker_url,
        "webhook_url_template": f"{server_url}/api/devices/{{device_id}}/webhook",
        "events_ws_url": f"{ws}://{server_url.split('://', 1)[-1]}/api/events/ws",
    }


# Statistics --------------------------------------------------------------------------------------
def system_stats(h: HostStats, version: str, uptime: float) -> dict[str, Any]:
    """``GET /stats/system`` (appendix shape); GPUs, disks and networks of the simulated host are empty."""
    return {
        "stats": dict(h.counts),
        "version": version,
        "uptime": int(uptime),
        "platform": h.platform,
        "arch": h.arch,
        "cpu_count": h.cpu_count,
        "total_memory": h.total_memory,
        "used_memory": h.used_memory,
        "free_memory": h.free_memory,
        "available_memory": h.available_memory,
        "cpu_usage": h.cpu_usage,
        "gpus": [],
        "disks": [],
        "networks": [],
    }


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


DELIVERY_METRICS = (
    ("consecutive_failures", "gauge", "Failed attempts in a row."),
    ("pending", "gauge", "Deliveries not finished yet, waiting ones included."),
    ("waiting", "gauge", "Deliveries held back by an open circuit."),
    ("attempts", "counter", "Delivery attempts."),
    ("delivered", "counter", "Deliveries that got through."),
    ("failed", "counter", "Deliveries given up (retries spent, or dropped)."),
    ("dropped", "counter", "Deliveries given up unattempted: too many were waiting behind an open circuit."),
)
"""Per push target and channel: ``neomind_delivery_<name>[_total]{owner_kind, owner_id}``."""


def prometheus_text(
    counters: HttpCounters,
    bus: BusStats,
    uptime: float,
    version: str,
    deliveries: list[DeliveryStats] | None = None,
) -> str:
    """The Prometheus text exposition format 0.0.4: ``# HELP``/``# TYPE`` then samples per metric."""
    p = METRIC_PREFIX
    lines: list[str] = []

    def metric(name: str, kind: str, help_: str, samples: list[tuple[str, float | int]]) -> None:
        lines.append(f"# HELP {p}_{name} {help_}")
        lines.append(f"# TYPE {p}_{name} {kind}")
        lines.extend(f"{p}_{name}{labels} {value}" for labels, value in samples)

    metric(
        "http_requests_total",
        "counter",
        "HTTP requests served, by method, route template and status.",
        [
            (_labels(method=method, route=route, status=str(status)), count)
            for (method, route, status), count in counters.items()
        ],
    )
    metric(
        "event_bus_events_published_total",
        "counter",
        "Events published on the event bus.",
        [("", bus.published)],
    )
    metric(
        "event_bus_events_dropped_total",
        "counter",
        "Events dropped because a subscriber's bounded queue was full.",
        [("", bus.dropped)],
    )
    metric("uptime_seconds", "gauge", "Seconds since the server started.", [("", round(uptime, 3))])
    metric("build_info", "gauge", "Server version; the value is always 1.", [(_labels(version=version), 1)])
    if deliveries:  # the families appear with the first push target or channel
        metric(
            "delivery_circuit",
            "gauge",
            "A push target's or channel's circuit: 1 for its state (closed, open, half_open).",
            [(_labels(owner_kind=d.owner_kind, owner_id=d.owner_id, state=d.circuit), 1) for d in deliveries],
        )
        for name, kind, help_ in DELIVERY_METRICS:
            samples = [
                (_labels(owner_kind=d.owner_kind, owner_id=d.owner_id), getattr(d, name)) for d in deliveries
            ]
            metric(f"delivery_{name}{'_total' if kind == 'counter' else ''}", kind, help_, samples)
    return "\n".join(lines) + "\n"
