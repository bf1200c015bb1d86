"""Chat sessions: durable documents (``chat_sessions``), their histories (``chat_history``) and the
pending state of a turn in flight (``chat_pending``), and the turns themselves
(:mod:`twin.automation.chat_turns`). Session ids are UUIDs from the world's random streams.

As on the server, a session's creation time is whole seconds; the list is newest first and does
not count messages; the preview is the first user message (50 characters at most), set when a turn
ends (when the server persists the history); the cleanup removes sessions without messages that are
more than an hour old.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hardware.ports.chat import (
    ChatMessage,
    PendingStream,
    SessionInfo,
    SessionOptions,
    SessionState,
    ToolCallRecord,
    TurnRequest,
)
from hardware.ports.errors import NotFound
from twin.automation.chat_tools import ChatTools
from twin.automation.chat_turns import Turn
from twin.automation.model_faults import ModelFaults

if TYPE_CHECKING:
    from twin.automation.llm import ModelBackendRegistry
    from twin.automation.registry import DeviceRegistry
    from twin.automation.rules import RuleEngine
    from twin.automation.telemetry import Telemetry
    from twin.engine import Engine

EMPTY_SESSION_MAX_AGE_S = 3600
PREVIEW_CHARS = 50


def not_found(session_id: str) -> NotFound:
    return NotFound(f"Session: {session_id}", resource="session")


class ChatRegistry:
    """The world's chat: implements :class:`hardware.ports.chat.ChatSessions` but for the waiting,
    which the backend adapter does on the world clock."""

    def __init__(
        self,
        world: Engine,
        *,
        llm: ModelBackendRegistry,
        devices: DeviceRegistry,
        telemetry: Telemetry,
        rules: RuleEngine,
    ) -> None:
        self.world = world
        self.llm = llm
        self.tools = ChatTools(world, devices=devices, telemetry=telemetry, rules=rules)
        self.faults = ModelFaults()
        self.docs = world.store.collection("chat_sessions")
        self.histories = world.store.collection("chat_history")
        self.pendings = world.store.collection("chat_pending")
        self.turns: dict[str, Turn] = {}
        """The latest turn of each session (finished ones are dropped when the next begins)."""

    # Sessions -----------------------------------------------------------------------------------
    def create_session(self, options: SessionOptions | None = None) -> str:
        key = self.world.streams.get("automation.chat").bytes(16)
        session_id = str(uuid.UUID(bytes=key, version=4))
        now = int(self.world.now())
        opts = options or SessionOptions()
        doc = {
            "id": session_id,
            "created_at": now,
            "last_activity": now,
            "title": None,
            "preview": None,
            "memory_enabled": False,
            "options": {k: v for k, v in dataclasses.asdict(opts).items() if v is not None},
            "message_count": 0,
        }
        self.docs.put(session_id, doc)
        return session_id

    def exists(self, session_id: str) -> bool:
        return session_id in self.docs

    def list_sessions(self) -> list[SessionInfo]:
        docs = list(reversed(self.docs.values()))
        docs.sort(key=lambda d: -d["created_at"])  # stable: the newest of one second first
        return [
            SessionInfo(
                d["id"], d["created_at"], d.get("title"), d.get("preview"), d.get("memory_enabled", False)
            )
            for d in docs
        ]

    def session_state(self, session_id: str) -> SessionState:
        doc = self._doc(session_id)
        return SessionState(doc["id"], doc["created_at"], doc["last_activity"], doc["message_count"])

    def history(self, session_id: str) -> list[ChatMessage]:
        self._doc(session_id)
        return [_message_of(m) for m in self.conversation(session_id)]

    def rename(self, session_id: str, title: str | None) -> None:
        doc = self._doc(session_id)
        doc["title"] = title if title and title.strip() else None
        self.docs.put(session_id, doc)

    def set_memory(self, session_id: str, enabled: bool) -> None:
        doc = self._doc(session_id)
        doc["memory_enabled"] = enabled
        self.docs.put(session_id, doc)

    def delete_session(self, session_id: str) -> None:
        self._doc(session_id)
        self.cancel(session_id)
        self.docs.delete(session_id)
        self.histories.delete(session_id)
        self.pendings.delete(session_id)
        self.turns.pop(session_id, None)

    def cleanup(self) -> int:
        now = self.world.now()
        stale = [
            d["id"]
            for d in self.docs.values()
            if not d["message_count"] and now - d["created_at"] > EMPTY_SESSION_MAX_AGE_S
        ]
        for session_id in stale:
            self.delete_session(session_id)
        return len(stale)

    # Pending streams ----------------------------------------------------------------------------
    def pending(self, session_id: str) -> PendingStream | None:
        doc = self.pendings.get(session_id)
        if doc is None:
            return None
        return PendingStream(
            doc["session_id"],
            doc["user_message"],
            doc["content"],
            doc["thinking"],
            doc["stage"],
            doc["started_at"],
        )

    def clear_pending(self, session_id: str) -> None:
        self.pendings.delete(session_id)

    # Turns --------------------------------------------------------------------------------------
    def start_turn(self, session_id: str, request: TurnRequest) -> Turn:
        self._doc(session_id)
        previous = self.turns.get(session_id)
        if previous is not None and previous.finished:
            previous = None
        turn = Turn(self, session_id, request, previous)
        self.turns[session_id] = turn
        return turn

    def cancel(self, session_id: str) -> bool:
        turn = self.turns.get(session_id)
        return turn is not None and turn.cancel()

    # For turns (chat_turns.Host) ----------------------------------------------------------------
    def conversation(self, session_id: str) -> list[dict[str, Any]]:
        doc = self.histories.get(session_id)
        return list(doc["messages"]) if doc else []

    def options(self, session_id: str) -> Mapping[str, Any]:
        doc = self.docs.get(session_id)
        return doc.get("options", {}) if doc else {}

    def record(self, session_id: str, *messages: dict[str, Any]) -> None:
        """Append to the history, in one write of each document."""
        doc = self.docs.get(session_id)
        if doc is None or not messages:  # deleted while its turn ran
            return
        with self.world.store.atomic():
            self.histories.put(session_id, {"messages": [*self.conversation(session_id), *messages]})
            doc.update(
                last_activity=messages[-1]["timestamp"], message_count=doc["message_count"] + len(messages)
            )
            self.docs.put(session_id, doc)

    def turn_ended(self, session_id: str) -> None:
        """The history is kept: the session's preview is its first user message, once set."""
        doc = self.docs.get(session_id)
        if doc is None or doc.get("preview"):
            return
        first = next((m for m in self.conversation(session_id) if m["role"] == "user"), None)
        if first is None or not first["content"].strip():
            return
        text = first["content"].strip()
        doc["preview"] = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."
        self.docs.put(session_id, doc)

    def save_pending(self, session_id: str, pending: dict[str, Any] | None) -> None:
        if pending is None:
            self.pendings.delete(session_id)
        elif session_id in self.docs:
            self.pendings.put(session_id, pending)

    # Internals ----------------------------------------------------------------------------------
    def _doc(self, session_id: str) -> dict[str, Any]:
        doc = self.docs.get(session_id)
        if doc is None:
            raise not_found(session_id)
        return doc


def _message_of(m: Mapping[str, Any]) -> ChatMessage:
    calls = m.get("tool_calls")
    return ChatMessage(
        role=m["role"],
        content=m["content"],
        timestamp=m["timestamp"],
        tool_calls=None
        if calls is None
        else tuple(
            ToolCallRecord(c["name"], c.get("id", ""), c["arguments"], c.get("result"), c.get("round"))
            for c in calls
        ),
        tool_call_id=m.get("tool_call_id"),
        tool_call_name=m.get("tool_call_name"),
        thinking=m.get("thinking"),
        images=tuple(m["images"]) if m.get("images") else None,
        round_contents=m.get("round_contents"),
        round_thinking=m.get("round_thinking"),
    )
