"""What an agent knows besides its prompt: the user's messages to it, its memory of past
conclusions, and the resources it could bind. Durable, per agent.

- Messages (``agent_messages``) are instructions a user leaves for an agent; the newest
  ``context_window_size`` (default 10) are given to the model on every execution.
- Memory is read off the execution history: the conclusions since the memory was last cleared
  (``memory_cleared_at`` on the agent), newest first, at most :data:`MEMORY_ENTRIES`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.agents import AgentMessage
from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.events import EventKind

if TYPE_CHECKING:
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine

MEMORY_ENTRIES = 20
DEFAULT_CONTEXT = 10
MESSAGE_TYPES = ("instruction", "question", "feedback", "note")
MAX_MESSAGE = 10_000


class AgentContext:
    def __init__(self, world: Engine, *, devices: DeviceRegistry) -> None:
        self.world = world
        self.devices = devices
        self.notes = world.store.collection("agent_messages")

    # Messages ---------------------------------------------------------------------------------
    def messages(self, agent_id: str) -> list[AgentMessage]:
        return [AgentMessage(**m) for m in self.notes.values() if m["agent_id"] == agent_id]

    def add_message(self, agent_id: str, content: str, message_type: str) -> AgentMessage:
        if not 1 <= len(content) <= MAX_MESSAGE:
            raise InvalidInput(f"content must be 1 to {MAX_MESSAGE} characters", field="content")
        if message_type not in MESSAGE_TYPES:
            raise InvalidInput(
                f"message_type must be one of {', '.join(MESSAGE_TYPES)}", field="message_type"
            )
        key = self.world.streams.get("automation.agent_messages").bytes(16)
        doc: dict[str, Any] = {
            "id": str(uuid.UUID(bytes=key, version=4)),
            "agent_id": agent_id,
            "content": content,
            "message_type": message_type,
            "timestamp": self.world.now(),
        }
        self.notes.put(doc["id"], doc)
        return AgentMessage(**doc)

    def delete_messages(self, agent_id: str, message_id: str | None) -> int:
        if message_id is not None:
            doc = self.notes.get(message_id)
            if doc is None or doc["agent_id"] != agent_id:
                raise NotFound(f"Message {message_id}", resource="agent_message")
            self.notes.delete(message_id)
            return 1
        ids = [mid for mid, m in self.notes.items() if m["agent_id"] == agent_id]
        for mid in ids:
            self.notes.delete(mid)
        return len(ids)

    def for_prompt(self, doc: Mapping[str, Any]) -> list[str]:
        """The newest messages the model sees, oldest first."""
        window = doc.get("context_window_size") or DEFAULT_CONTEXT
        return [f"[{m.message_type}] {m.content}" for m in self.messages(doc["id"])[-window:]]

    # Memory -----------------------------------------------------------------------------------
    def memory(self, doc: Mapping[str, Any], runs: list[Mapping[str, Any]]) -> dict[str, Any]:
        since = doc.get("memory_cleared_at")
        entries = [
            {
                "execution_id": r["id"],
                "timestamp": r["timestamp"],
                "conclusion": r["decision_process"].get("conclusion", ""),
            }
            for r in reversed(runs)
            if r["status"] in ("completed", "partial") and (since is None or r["timestamp"] > since)
        ][:MEMORY_ENTRIES]
        return {"agent_id": doc["id"], "entries": entries, "count": len(entries), "cleared_at": since}

    def memory_updated(self, agent_id: str, execution_id: str) -> None:
        self.world.emit(
            EventKind.AGENT_MEMORY_UPDATED, agent_id, agent_id=agent_id, execution_id=execution_id
        )

    # Resources ----------------------------------------------------------------------------------
    def available_resources(self) -> list[Mapping[str, Any]]:
        devices = self.devices
        out: list[Mapping[str, Any]] = []
        for device in devices.list(1, 1000, None, None).devices:
            detail = devices.detail(device.device_id)
            out.append(
                {
                    "device_id": device.device_id,
                    "name": device.name,
                    "device_type": device.device_type,
                    "status": device.status,
                    "metrics": [
                        {"name": m.name, "display_name": m.display_name, "unit": m.unit}
                        for m in detail.metrics
                    ],
                    "commands": [{"name": c.name, "display_name": c.display_name} for c in detail.commands],
                }
            )
        return out
