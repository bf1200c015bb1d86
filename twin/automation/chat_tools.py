"""The tools a chat's model may call: the server's own catalogue (``GET /api/tools``), acting on the
world through its areas. Device tools are the agents' (:func:`twin.automation.agent_runs.device_tool`);
the chat adds a device's details, telemetry history and rules. Every result is a JSON object; a
refusal is ``{"error": ...}`` and counts as a failed call.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hardware.ports.devices import SourceQuery
from hardware.ports.errors import DomainError
from twin.automation.agent_runs import AGENT_TOOLS, device_tool, tool_defs
from twin.automation.chat_models import ToolCall

if TYPE_CHECKING:
    from twin.automation.registry import DeviceRegistry
    from twin.automation.rules import RuleEngine
    from twin.automation.telemetry import Telemetry
    from twin.engine import Engine

CHAT_TOOLS = (*AGENT_TOOLS, "get_device", "query_telemetry", "list_rules", "create_rule")
HOUR = 3600


class ChatTools:
    def __init__(
        self, world: Engine, *, devices: DeviceRegistry, telemetry: Telemetry, rules: RuleEngine
    ) -> None:
        self.world = world
        self.devices = devices
        self.telemetry = telemetry
        self.rules = rules
        self._defs = tool_defs(CHAT_TOOLS)

    def defs(self) -> list[dict[str, Any]]:
        return self._defs

    def call(self, call: ToolCall) -> dict[str, Any]:
        if call.name in AGENT_TOOLS:
            return device_tool(self.devices, call)
        args = call.arguments
        try:
            if call.name == "get_device":
                return self._device(str(args.get("device_id", "")))
            if call.name == "query_telemetry":
                return self._history(args)
            if call.name == "list_rules":
                return {
                    "rules": [
                        {"id": r.id, "name": r.name, "enabled": r.enabled} for r in self.rules.list_rules()
                    ]
                }
            if call.name == "create_rule":
                return self._create_rule(args)
        except DomainError as err:
            return {"error": err.message}
        return {"error": f"unknown tool {call.name}"}

    def _device(self, device_id: str) -> dict[str, Any]:
        detail = self.devices.detail(device_id)
        d = detail.device
        return {
            "device_id": d.device_id,
            "name": d.name,
            "device_type": d.device_type,
            "status": d.status,
            "metrics": [{"name": m.name, "unit": m.unit} for m in detail.metrics],
            "commands": [
                {"name": c.name, "display_name": c.display_name, "parameters": [p.name for p in c.parameters]}
                for c in detail.commands
            ],
        }

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        device_id, metric = str(args.get("device_id", "")), str(args.get("metric", ""))
        hours = args.get("hours") or 24
        if not isinstance(hours, int) or not 1 <= hours <= 720:
            return {"error": "hours must be an integer from 1 to 720"}
        aggregate = args.get("aggregate") or "avg"
        now = self.world.now()
        query = SourceQuery(
            f"device:{device_id}", metric, start=now - hours * HOUR, end=now, aggregate=aggregate
        )
        found = self.telemetry.query_source(query)
        return {
            "device_id": device_id,
            "metric": metric,
            "hours": hours,
            "aggregate": aggregate,
            "value": found.value,
            "points": found.total_count,
        }

    def _create_rule(self, args: dict[str, Any]) -> dict[str, Any]:
        dsl = args.get("dsl")
        try:
            definition = json.loads(dsl) if isinstance(dsl, str) else dsl
        except ValueError:
            return {"error": "dsl must be the rule's JSON definition"}
        if not isinstance(definition, dict):
            return {"error": "dsl must be the rule's JSON definition"}
        if args.get("name"):
            definition = {**definition, "name": args["name"]}
        if "enabled" in args:
            definition = {**definition, "enabled": bool(args["enabled"])}
        rule = self.rules.create_rule(definition)
        return {"rule_id": rule.id, "name": rule.name, "enabled": rule.enabled}
