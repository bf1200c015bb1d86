"""What a rule's actions reach: performing them when the rule fires (``notify`` sends a message to
the channels, ``execute`` a device command, ``trigger_agent`` starts an agent run) and checking that
the resources a rule names (its sources' devices, its actions' devices and agents) exist."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind
from hardware.ports.rules import NewMessage
from twin.automation import rule_spec
from twin.automation.rule_spec import HINT

if TYPE_CHECKING:
    from twin.automation.messages import MessageCenter
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine


class RuleActions:
    def __init__(
        self, world: Engine, *, devices: DeviceRegistry, messages: MessageCenter, agents: Callable[[], object]
    ) -> None:
        """``agents``: the agents registry as it is now (see :class:`~twin.automation.rules.RuleEngine`)."""
        self.world = world
        self.devices = devices
        self.messages = messages
        self.agents = agents

    def perform(self, doc: dict[str, Any], action: Mapping[str, Any], value: Any) -> str:
        kind = action["type"]
        if kind == "notify":
            text = str(action["message"]).replace("${value}", str(value)).replace("{{value}}", str(value))
            message = self.messages.send_message(
                NewMessage(
                    category="alert",
                    severity=action["severity"],
                    title=doc["name"],
                    message=text,
                    source=doc["name"],
                    source_type="rule",
                    metadata={"rule_id": doc["id"], "trigger_value": value},
                ),
                channels=action.get("channels"),
            )
            return f"notify:{message.id}"
        if kind == "execute":
            if action["target_type"] != "device":
                raise InvalidInput("extension commands are not available to rules in this twin")
            sent = self.devices.send_command(action["target"], action["command"], action["params"])
            return f"execute:{sent.device_id}:{sent.command}"
        trigger = getattr(self.agents(), "trigger", None)
        if callable(trigger):
            trigger(
                action["agent_id"],
                trigger_type="rule",
                data={"rule_id": doc["id"], "value": value, "input": action.get("input")},
            )
        else:
            self.world.emit(
                EventKind.RULE_AGENT_REQUESTED,
                doc["id"],
                rule_id=doc["id"],
                agent_id=action["agent_id"],
                input=action.get("input"),
                data=action.get("data"),
                timestamp=int(self.world.now()),
            )
        return f"trigger_agent:{action['agent_id']}"

    def check_resources(self, spec: Mapping[str, Any]) -> None:
        missing = [s for s in rule_spec.sources_of(spec["condition"]) if not self._available(s)]
        missing += [
            a["target"]
            for a in spec["actions"]
            if a["type"] == "execute"
            and a["target_type"] == "device"
            and not self.devices.exists(a["target"])
        ]
        missing += [
            a["agent_id"] for a in spec["actions"] if a["type"] == "trigger_agent" and not self._agent(a)
        ]
        if missing:
            raise InvalidInput(
                "Rule references unavailable resources", resource="rule", hint=HINT, missing=missing
            )

    def _agent(self, action: Mapping[str, Any]) -> bool:
        """Whether the agent a ``trigger_agent`` action names exists (true when agents are not built)."""
        get_agent = getattr(self.agents(), "get_agent", None)
        if get_agent is None:
            return True
        try:
            get_agent(action["agent_id"])
        except NotFound:
            return False
        return True

    def _available(self, source: str) -> bool:
        source_type, device_id, _ = rule_spec.parse_source(source)
        return source_type == "device" and self.devices.exists(device_id)
