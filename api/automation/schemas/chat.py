"""Wire shapes of chat sessions (``/sessions*``, enveloped) and of the chat WebSocket (``/chat``).

Field order follows the server's ``json!`` literals and structs (serde_json keeps insertion order).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from hardware.ports.chat import (
    ChatEvent,
    ChatEventKind,
    ChatMessage,
    PendingStream,
    SessionInfo,
    SessionOptions,
    SessionState,
    ToolCallRecord,
    TurnRequest,
)

MAX_STREAM_S = 1200
"""The server's stream budget, from which ``Progress`` computes ``remainingTime``."""


# Request bodies -------------------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class UpdateSession(_Body):
    title: StrictStr | None = None


class ToggleMemory(_Body):
    enabled: StrictBool


class ChatImage(_Body):
    data: StrictStr
    mimeType: StrictStr | None = None


class SessionConfig(_Body):
    systemPrompt: StrictStr | None = None
    temperature: float | None = None
    model: StrictStr | None = None
    enableTools: StrictBool | None = None

    def to_port(self) -> SessionOptions:
        return SessionOptions(self.systemPrompt, self.temperature, self.model, self.enableTools)


class ChatRequest(_Body):
    """The chat request of both the WebSocket frames and ``POST /sessions/:id/chat``."""

    message: StrictStr
    images: list[ChatImage] | None = None
    sessionId: StrictStr | None = None
    backendId: StrictStr | None = None
    selectedSkills: list[StrictStr] = Field(default_factory=list)
    pageContext: StrictStr | None = None
    sessionConfig: SessionConfig | None = None

    def to_turn(self) -> TurnRequest:
        """The page context, if any, goes in front of the message (the model sees both)."""
        text = f"{self.pageContext}\n\n{self.message}" if self.pageContext else self.message
        images = tuple(i.data for i in self.images or ())
        return TurnRequest(text, self.message if text != self.message else None, self.backendId, images)


class AgentConfig(_Body):
    """``POST /sessions`` ``{"config": AgentConfig}``: the whole struct or nothing."""

    name: StrictStr
    system_prompt: StrictStr
    max_context_tokens: int = Field(ge=0)
    temperature: float
    enable_tools: StrictBool
    enable_memory: StrictBool
    model: StrictStr
    api_endpoint: StrictStr | None
    api_key: StrictStr | None

    def to_port(self) -> SessionOptions:
        return SessionOptions(self.system_prompt, self.temperature, self.model, self.enable_tools)


# Sessions ---------------------------------------------------------------------------------------------
def session_item(s: SessionInfo) -> dict[str, Any]:
    """The light list entry: the server does not count messages there."""
    return {
        "sessionId": s.session_id,
        "createdAt": int(s.created_at) * 1000,
        "messageCount": 0,
        "title": s.title,
        "preview": s.preview,
        "memoryEnabled": s.memory_enabled,
    }


def pagination(page: int, page_size: int, total: int) -> dict[str, Any]:
    pages = -(-total // page_size)
    return {
        "page": page,
        "page_size": page_size,
        "total_count": total,
        "total_pages": pages,
        "has_next": page < pages,
        "has_prev": page > 1,
    }


def session_state(s: SessionState) -> dict[str, Any]:
    return {
        "id": s.id,
        "started_at": int(s.started_at),
        "last_activity": int(s.last_activity),
        "message_count": s.message_count,
        "metadata": {},
    }


def _tool_call(c: ToolCallRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "id": c.id, "arguments": dict(c.arguments)}
    if c.result is not None:
        out["result"] = c.result
    if c.round is not None:
        out["round"] = c.round
    return out


def _tool_calls(m: ChatMessage) -> list[dict[str, Any]] | None:
    return None if m.tool_calls is None else [_tool_call(c) for c in m.tool_calls]


def history_message(m: ChatMessage) -> dict[str, Any]:
    """``AgentMessage``: ``tool_calls`` and ``tool_call_id`` always present, the rest when set."""
    out: dict[str, Any] = {
        "role": m.role,
        "content": m.content,
        "tool_calls": _tool_calls(m),
        "tool_call_id": m.tool_call_id,
    }
    if m.tool_call_name is not None:
        out["tool_call_name"] = m.tool_call_name
    if m.thinking is not None:
        out["thinking"] = m.thinking
    if m.images:
        out["images"] = [{"data": data} for data in m.images]
    if m.round_contents is not None:
        out["round_contents"] = dict(m.round_contents)
    if m.round_thinking is not None:
        out["round_thinking"] = dict(m.round_thinking)
    out["timestamp"] = int(m.timestamp)
    return out


def pending(session_id: str, p: PendingStream | None, now: float) -> dict[str, Any]:
    if p is None:
        return {"hasPending": False, "sessionId": session_id}
    return {
        "hasPending": True,
        "sessionId": session_id,
        "userMessage": p.user_message,
        "content": p.content,
        "thinking": p.thinking,
        "stage": p.stage,
        "elapsed": int(now) - int(p.started_at),
        "startedAt": int(p.started_at),
    }


# WebSocket frames -------------------------------------------------------------------------------------
def history_frame(session_id: str, m: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "history",
        "sessionId": session_id,
        "role": m.role,
        "content": m.content,
        "thinking": m.thinking,
        "toolCalls": _tool_calls(m),
        "timestamp": int(m.timestamp),
    }
    if m.round_contents is not None:
        out["round_contents"] = dict(m.round_contents)
    if m.round_thinking is not None:
        out["round_thinking"] = dict(m.round_thinking)
    return out


def event_frame(session_id: str, e: ChatEvent) -> dict[str, Any]:
    """An agent event as ``process_stream_to_channel`` sends it."""
    k = ChatEventKind
    if e.kind in (k.THINKING, k.CONTENT):
        return {"type": e.kind.value, "content": e.content, "sessionId": session_id}
    out: dict[str, Any]
    if e.kind is k.TOOL_CALL_START:
        out = {
            "type": e.kind.value,
            "tool": e.tool,
            "arguments": dict(e.arguments or {}),
            "sessionId": session_id,
        }
    elif e.kind is k.TOOL_CALL_END:
        out = {
            "type": e.kind.value,
            "tool": e.tool,
            "result": e.result,
            "success": e.success,
            "sessionId": session_id,
        }
    elif e.kind is k.PROGRESS:
        return {
            "type": "Progress",
            "message": e.message,
            "stage": e.stage,
            "elapsed": e.elapsed,
            "remainingTime": max(0, MAX_STREAM_S - e.elapsed),
            "sessionId": session_id,
        }
    elif e.kind in (k.ERROR, k.WARNING):
        return {"type": e.kind.value, "message": e.message, "sessionId": session_id}
    elif e.kind is k.RESPONSE:
        return {
            "type": "response",
            "content": e.content,
            "sessionId": session_id,
            "toolsUsed": list(e.tools_used),
            "processingTimeMs": e.processing_time_ms,
        }
    else:  # intermediate_end, end
        out = {"type": e.kind.value, "sessionId": session_id}
        if e.kind is k.END and e.prompt_tokens is not None:
            out["tokenUsage"] = {"promptTokens": e.prompt_tokens}
        return out
    if e.round is not None:
        out["round"] = e.round
    return out


def chat_response(
    response: str, session_id: str, tools_used: list[str], ms: int, thinking: str | None
) -> dict[str, Any]:
    """``POST /sessions/:id/chat`` (raw, not enveloped)."""
    out: dict[str, Any] = {
        "response": response,
        "sessionId": session_id,
        "toolsUsed": tools_used,
        "processingTimeMs": ms,
    }
    if thinking is not None:
        out["thinking"] = thinking
    return out
