"""The automation backend's chat: sessions with durable histories, and turns that stream a model's
answer (text as it is generated, the tools it calls and their results).

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock. A turn's
events are the vendor's agent events (``Content``, ``ToolCallStart``, ``end``...); the API layer
gives them their wire shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """Per-session overrides of the platform's defaults; ``None`` inherits."""

    system_prompt: str | None = None
    temperature: float | None = None
    model: str | None = None
    enable_tools: bool | None = None


@dataclass(frozen=True, slots=True)
class SessionInfo:
    session_id: str
    created_at: float
    title: str | None
    preview: str | None
    """The first user message (at most 50 characters and ``...``), once its turn has ended."""
    memory_enabled: bool


@dataclass(frozen=True, slots=True)
class SessionState:
    id: str
    started_at: float
    last_activity: float
    message_count: int


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    name: str
    id: str
    arguments: Mapping[str, Any]
    result: Any = None
    round: int | None = None


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a session's history, as the agent keeps it."""

    role: str
    """``user``, ``assistant`` or ``tool``."""
    content: str
    timestamp: float
    tool_calls: tuple[ToolCallRecord, ...] | None = None
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    thinking: str | None = None
    images: tuple[str, ...] | None = None
    round_contents: Mapping[str, str] | None = None
    """Per round (``"1"``, ``"2"``...) the text the model wrote before calling tools."""
    round_thinking: Mapping[str, str] | None = None


@dataclass(frozen=True, slots=True)
class PendingStream:
    """What a turn in flight has produced so far, kept for a client that reconnects."""

    session_id: str
    user_message: str
    content: str
    thinking: str
    stage: str
    """``waiting``, ``thinking``, ``generating``, ``tool_execution`` or ``complete``."""
    started_at: float


class ChatEventKind(StrEnum):
    """The vendor's agent events; the values are their wire ``type`` names."""

    THINKING = "Thinking"
    CONTENT = "Content"
    TOOL_CALL_START = "ToolCallStart"
    TOOL_CALL_END = "ToolCallEnd"
    ERROR = "Error"
    WARNING = "Warning"
    PROGRESS = "Progress"
    INTERMEDIATE_END = "intermediate_end"
    END = "end"
    RESPONSE = "response"
    """The whole answer at once: the server's fallback when the model could not start a stream."""


@dataclass(frozen=True, slots=True)
class ChatEvent:
    kind: ChatEventKind
    content: str = ""
    """Thinking, Content and response: the text."""
    tool: str = ""
    arguments: Mapping[str, Any] | None = None
    result: str = ""
    success: bool = True
    round: int | None = None
    message: str = ""
    """Error, Warning and Progress: the text; response: why the model could not stream."""
    stage: str | None = None
    elapsed: int = 0
    """Progress: seconds since the turn began."""
    prompt_tokens: int | None = None
    tools_used: tuple[str, ...] = ()
    processing_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class TurnRequest:
    message: str
    """What the model is given (a page context, if any, already in front)."""
    user_message: str | None = None
    """What the user typed, when it differs from ``message``."""
    backend_id: str | None = None
    """The model backend to answer with; an unknown id falls back to the active one."""
    images: tuple[str, ...] = ()
    """Data URLs of attached images."""


class ChatTurn(Protocol):
    session_id: str

    async def next(self) -> ChatEvent | None:
        """The turn's next event, waiting for the model as long as it takes (in world time);
        ``None`` once the turn has ended (after its ``end`` or ``response``)."""
        ...

    def cancel(self) -> bool:
        """Interrupt the turn: it ends with ``[Interrupted]``. False if it had already ended."""
        ...


@runtime_checkable
class ChatSessions(Protocol):
    """Unknown session ids raise ``NotFound`` (resource ``session``)."""

    def create_session(self, options: SessionOptions | None = None) -> str: ...

    def exists(self, session_id: str) -> bool: ...

    def list_sessions(self) -> list[SessionInfo]:
        """Newest first."""
        ...

    def session_state(self, session_id: str) -> SessionState: ...

    def history(self, session_id: str) -> list[ChatMessage]: ...

    def rename(self, session_id: str, title: str | None) -> None:
        """A blank title clears it."""
        ...

    def set_memory(self, session_id: str, enabled: bool) -> None: ...

    def delete_session(self, session_id: str) -> None: ...

    def cleanup(self) -> int:
        """Remove sessions without messages created over an hour ago; how many went."""
        ...

    def pending(self, session_id: str) -> PendingStream | None: ...

    def clear_pending(self, session_id: str) -> None: ...

    def start_turn(self, session_id: str, request: TurnRequest) -> ChatTurn:
        """The user's message begins a turn; turns of one session run one after another."""
        ...

    def cancel(self, session_id: str) -> bool:
        """Interrupt the session's turn in flight, if any."""
        ...
