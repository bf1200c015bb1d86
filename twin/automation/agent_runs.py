"""One agent execution: the conversation with the model and the tools it may call.

The model gets a system prompt naming the agent's bound devices and commands, the user prompt (and
the trigger's data), and three tools: ``list_devices``, ``get_device_metrics`` and
``send_device_command``. Tool calls go through the devices area of the world; in ``focused`` mode
only the agent's bound commands may be sent. Up to ``max_chain_depth`` rounds, the last without
tools so the model has to conclude.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hardware.ports.errors import DomainError
from twin.automation import catalog
from twin.automation.chat_models import ChatModel, Hints, ToolCall

if TYPE_CHECKING:
    from twin.automation.agent_context import AgentContext
    from twin.automation.llm import ModelBackendRegistry
    from twin.automation.registry import DeviceRegistry

DEFAULT_CHAIN_DEPTH = 3
AGENT_TOOLS = ("list_devices", "get_device_metrics", "send_device_command")


class Tools(Protocol):
    """What the agents' tools act through: the devices area."""

    @property
    def devices(self) -> DeviceRegistry: ...


class Crew(Tools, Protocol):
    """What an execution works with: the model backends, the agents' context and the devices."""

    @property
    def llm(self) -> ModelBackendRegistry: ...

    @property
    def context(self) -> AgentContext: ...


async def conduct(crew: Crew, doc: dict[str, Any], data: Any) -> dict[str, Any]:
    """The conversation: prompt → tool calls (read devices, send commands) → conclusion."""
    model: ChatModel = crew.llm.model(doc.get("llm_backend_id"))
    hints = hints_of(doc)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt(doc, hints)},
        {"role": "user", "content": user_prompt(doc, data, crew.context.for_prompt(doc))},
    ]
    tools = tool_defs()
    collected, actions, failed = [], [], 0
    steps: list[dict[str, Any]] = []
    depth = doc.get("max_chain_depth") or DEFAULT_CHAIN_DEPTH
    reply = None
    for round_ in range(depth):
        reply = await model.chat(messages, tools if round_ < depth - 1 else [], hints)
        if not reply.tool_calls:
            break
        if reply.assistant:
            messages.append(reply.assistant)
        for call in reply.tool_calls:
            outcome = call_tool(crew, doc, call)
            steps.append(
                {"step": len(steps) + 1, "description": f"{call.name}({json.dumps(call.arguments)})"}
            )
            if "error" in outcome:
                failed += 1
            if call.name == "send_device_command":
                actions.append(
                    {"action_type": "device_command", **call.arguments, "success": "error" not in outcome}
                )
            else:
                collected.append({"source": call.name, "data": outcome})
            messages.append(model.tool_message(call, json.dumps(outcome, default=str)))
    conclusion = reply.content if reply else ""
    total = len(steps)
    return {
        "decision_process": {
            "situation_analysis": f"{len(hints.devices)} bound device(s), trigger data: {data!r}"[:500],
            "data_collected": collected,
            "reasoning_steps": steps,
            "decisions": [a for a in actions if a["success"]],
            "conclusion": conclusion,
            "confidence": reply.confidence if reply else 0.0,
        },
        "result": {
            "actions_executed": actions,
            "notifications_sent": [],
            "summary": conclusion,
            "success_rate": 1.0 if total == 0 else round((total - failed) / total, 3),
        },
        "partial": failed > 0,
        "tool_calls": total,
    }


def call_tool(tools: Tools, doc: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """Run one tool call through the devices area; refusals come back as ``{"error": ...}``. In
    ``focused`` mode only the agent's bound commands may be sent."""
    if call.name == "send_device_command" and doc["execution_mode"] == "focused":
        device_id, command = str(call.arguments.get("device_id", "")), str(call.arguments.get("command", ""))
        if (device_id, command) not in {(d, c) for d, c, _ in hints_of(doc).commands}:
            return {"error": f"command {command} on {device_id} is not bound to this agent"}
    return device_tool(tools.devices, call)


def device_tool(devices: DeviceRegistry, call: ToolCall) -> dict[str, Any]:
    """The device tools (:data:`AGENT_TOOLS`), shared with the chat; refusals as ``{"error": ...}``."""
    args = call.arguments
    try:
        if call.name == "list_devices":
            page = devices.list(1, 100, args.get("device_type"), args.get("status"))
            rows = [
                {"device_id": d.device_id, "name": d.name, "device_type": d.device_type, "status": d.status}
                for d in page.devices
            ]
            return {"devices": rows}
        if call.name == "get_device_metrics":
            current = devices.current(str(args.get("device_id", "")))
            return {
                "device_id": current.device.device_id,
                "status": current.device.status,
                "values": {m.name: m.value for m in current.metrics},
                "units": {m.name: m.unit for m in current.metrics if m.unit and m.unit != "-"},
            }
        if call.name == "send_device_command":
            device_id, command = str(args.get("device_id", "")), str(args.get("command", ""))
            sent = devices.send_command(device_id, command, dict(args.get("params") or {}))
            return {
                "device_id": device_id,
                "command": command,
                "command_id": sent.command_id,
                "sent": True,
            }
    except DomainError as err:
        return {"error": err.message}
    return {"error": f"unknown tool {call.name}"}


def hints_of(doc: dict[str, Any]) -> Hints:
    devices: list[str] = []
    commands: list[tuple[str, str, Mapping[str, Any]]] = []
    for r in doc.get("resources", ()):
        device_id, _, rest = r["resource_id"].partition(":")
        if device_id and device_id not in devices and r["resource_type"] in ("device", "metric", "command"):
            devices.append(device_id)
        if r["resource_type"] == "command" and rest:
            commands.append((device_id, rest, dict(r.get("config", {}).get("parameters", {}))))
    return Hints(tuple(devices), tuple(commands))


def user_prompt(doc: Mapping[str, Any], data: Any, notes: list[str]) -> str:
    """The agent's prompt, then the trigger's data and the user's messages, if any."""
    parts = [doc["user_prompt"]]
    if data:
        parts.append(f"Input: {json.dumps(data, default=str)}")
    if notes:
        parts.append("Messages from the user:\n" + "\n".join(notes))
    return "\n\n".join(parts)


def system_prompt(doc: dict[str, Any], hints: Hints) -> str:
    lines = [doc.get("system_prompt") or "You are an automation agent watching IoT devices."]
    if hints.devices:
        lines.append("Bound devices: " + ", ".join(hints.devices))
    if hints.commands:
        lines.append("Allowed commands: " + ", ".join(f"{d}.{c}" for d, c, _ in hints.commands))
    return "\n".join(lines)


def tool_defs(names: tuple[str, ...] = AGENT_TOOLS) -> list[dict[str, Any]]:
    """The catalogue's tools named in ``names``, as OpenAI-style function definitions."""
    defs = []
    for tool in catalog.tools():
        if tool.name not in names:
            continue
        props = {p.name: {"type": p.type, "description": p.description} for p in tool.parameters}
        required = [p.name for p in tool.parameters if p.required]
        defs.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": {"type": "object", "properties": props, "required": required},
                },
            }
        )
    return defs
