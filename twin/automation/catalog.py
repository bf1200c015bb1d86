"""What the automation server offers an agent: its tools, grouped into capabilities. Fixed, ordered data."""

from __future__ import annotations

from hardware.ports.errors import NotFound
from hardware.ports.system import Capability, Tool, ToolParameter

P = ToolParameter
AGGREGATES = ("avg", "min", "max", "sum", "count", "first", "last")

TOOLS: tuple[Tool, ...] = (
    Tool(
        "list_devices",
        "device",
        "List devices with their type and status.",
        (
            P("device_type", "string", "Only devices of this type"),
            P("status", "string", "Only devices in this status", enum=("online", "offline", "disconnected")),
        ),
    ),
    Tool("get_device", "device", "Details of one device.", (P("device_id", "string", "Device id", True),)),
    Tool(
        "get_device_metrics",
        "device",
        "The latest value of every metric of a device.",
        (P("device_id", "string", "Device id", True),),
    ),
    Tool(
        "send_device_command",
        "device",
        "Send a command defined by the device type to a device.",
        (
            P("device_id", "string", "Device id", True),
            P("command", "string", "Command name", True),
            P("params", "object", "Command parameters"),
        ),
    ),
    Tool(
        "query_telemetry",
        "telemetry",
        "Historical values of one metric of a device, raw or aggregated.",
        (
            P("device_id", "string", "Device id", True),
            P("metric", "string", "Metric name", True),
            P("hours", "integer", "How far back to look, 1 to 720 hours"),
            P("aggregate", "string", "Aggregate the window into one value", enum=AGGREGATES),
        ),
    ),
    Tool("list_rules", "rule", "List automation rules and whether they are enabled."),
    Tool(
        "create_rule",
        "rule",
        "Create a rule from a trigger, a condition and actions.",
        (
            P("name", "string", "Rule name", True),
            P("dsl", "string", "Rule definition", True),
            P("enabled", "boolean", "Enable the rule at once"),
        ),
    ),
    Tool(
        "enable_rule",
        "rule",
        "Enable or disable a rule.",
        (P("rule_id", "string", "Rule id", True), P("enabled", "boolean", "New state", True)),
    ),
    Tool("delete_rule", "rule", "Delete a rule.", (P("rule_id", "string", "Rule id", True),)),
    Tool("list_agents", "agent", "List AI agents and their execution status."),
    Tool("execute_agent", "agent", "Run an agent now.", (P("agent_id", "string", "Agent id", True),)),
    Tool(
        "send_message",
        "message",
        "Send a notification message through the configured channels.",
        (
            P("title", "string", "Message title", True),
            P("content", "string", "Message body", True),
            P("level", "string", "Severity", enum=("info", "warning", "critical", "emergency")),
        ),
    ),
    Tool("get_system_info", "system", "Server version, uptime and resource usage."),
)

CAPABILITIES: tuple[Capability, ...] = (
    Capability("device", "Devices", "Discover, inspect and command devices."),
    Capability("telemetry", "Telemetry", "Query metric history and aggregates."),
    Capability("rule", "Rules", "Create and manage automation rules."),
    Capability("agent", "Agents", "List and run AI agents."),
    Capability("message", "Messages", "Send notifications through channels."),
    Capability("system", "System", "Server status and self-description."),
)


def capabilities() -> list[Capability]:
    """Each capability with the names of its tools, in catalogue order."""
    return [
        Capability(
            c.name, c.display_name, c.description, tuple(t.name for t in TOOLS if t.category == c.name)
        )
        for c in CAPABILITIES
    ]


def capability(name: str) -> Capability:
    for c in capabilities():
        if c.name == name:
            return c
    raise NotFound(f"Capability '{name}' not found", resource="capability")


def tools() -> list[Tool]:
    return list(TOOLS)


def tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise NotFound(f"Tool '{name}' not found", resource="tool")
