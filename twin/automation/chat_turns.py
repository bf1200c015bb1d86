"""One chat turn: a SimPy process that converses with the model in rounds and streams what happens.

A round asks the model (the built-in simulated one, or an HTTP backend) for an answer given the
conversation and the tools. The simulated model's text is released a piece at a time at the pace
of :class:`~twin.automation.model_faults.ModelFaults` (tokens per world second, after a first-token
delay); an HTTP backend's pieces are released as they arrive (through a ``simpy.Store`` its reader
task fills), so in step mode every token waits for the clock. Tool calls run on the world at once
and are reported as ``ToolCallStart``/``ToolCallEnd`` after the round's text, then
``intermediate_end``; the round without tool calls ends the turn with ``end``. The history gets the
vendor's messages: the user's, an assistant message with the round's tool calls and results, a
``tool`` message per result, and the final answer.

Failures follow the server: a model that cannot start answering in the first round gets the
server's non-streaming fallback (a ``response`` event with its help text); in a later round an
``Error`` ("Processing failed: ...") and ``end``; a model silent for 20 minutes of world time the
stream timeout (``Error`` "Stream timeout: response took too long", then ``end``). Cancelling ends
the turn with ``[Interrupted]``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import simpy

from hardware.ports.chat import ChatEvent, TurnRequest
from hardware.ports.chat import ChatEventKind as K
from hardware.ports.errors import Unavailable
from twin.automation.chat_models import ToolCall
from twin.automation.chat_stream import assistant_message, stream
from twin.automation.model_faults import ModelFaults
from twin.automation.sim_model import SimChatModel, tokens
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.automation.chat_tools import ChatTools
    from twin.automation.llm import ModelBackendRegistry
    from twin.engine import Engine

log = logging.getLogger(__name__)

MAX_ROUNDS = 30
STREAM_TIMEOUT_S = 1200.0
PROGRESS_EVERY_S = 5.0
PENDING_EVERY = 20
PENDING_EVERY_S = 2.0
MAX_QUEUED = 8192
INTERRUPTED = "\n\n[Interrupted]"
FALLBACK = (
    '我理解了您的问题。我可以帮助您:\n\n- 查看设备列表 (说 "列出设备")\n- 查看规则列表 (说 "列出规则")\n'
    '- 查询设备数据 (说 "查询数据")\n- 创建自动化规则 (说 "创建规则")\n\n'
    "注意: 完整的对话功能需要配置 LLM 后端。\n"
    "设置环境变量 OLLAMA_ENDPOINT 或 OPENAI_API_KEY 来启用。"
)
"""The server's keyword fallback when the model fails before streaming (its default help text)."""
SYSTEM_PROMPT = (
    "You are NeoMind, the assistant of an IoT automation server. Use the tools to list devices, read "
    "their telemetry, send them commands and manage rules; answer in the user's language."
)


class Host(Protocol):
    """What a turn works with: the world, the tools, the model backends and the session's records."""

    world: Engine
    tools: ChatTools
    llm: ModelBackendRegistry
    faults: ModelFaults

    def conversation(self, session_id: str) -> list[dict[str, Any]]: ...

    def options(self, session_id: str) -> Mapping[str, Any]: ...

    def record(self, session_id: str, *messages: dict[str, Any]) -> None: ...

    def save_pending(self, session_id: str, pending: dict[str, Any] | None) -> None: ...

    def turn_ended(self, session_id: str) -> None: ...


@dataclass(slots=True)
class _Round:
    content: str = ""
    thinking: str = ""
    calls: tuple[ToolCall, ...] = ()
    prompt_tokens: int | None = None
    failure: str | None = None
    timed_out: bool = False


@dataclass(slots=True)
class _Pending:
    doc: dict[str, Any]
    saved_at: float
    unsaved: int = 0


class Turn:
    def __init__(self, host: Host, session_id: str, request: TurnRequest, previous: Turn | None) -> None:
        self.host = host
        self.env = host.world.env
        self.session_id = session_id
        self.request = request
        self.events: deque[ChatEvent] = deque(maxlen=MAX_QUEUED)
        self.finished = False
        self.done = self.env.event()
        """Succeeds when the turn has ended (the session's next turn waits for it)."""
        self.started = self.env.now
        self._signal: simpy.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._pending: _Pending | None = None
        self._progressed = self.env.now
        self._running = self._cancelled = False
        self._options: Mapping[str, Any] = {}
        """The session's options, read when the turn starts conversing."""
        backend = request.backend_id if request.backend_id and host.llm.exists(request.backend_id) else None
        self.model: Any = (
            SimChatModel(host.world.streams.key("llm:chat"))
            if host.llm.is_simulated(backend)
            else host.llm.model(backend)
        )
        self.proc = self.env.process(self._run(previous))

    # Reading --------------------------------------------------------------------------------------
    def signal(self) -> simpy.Event:
        """An event that fires when the turn has more to read (or has ended)."""
        if self._signal is None:
            self._signal = self.env.event()
            if self.events or self.finished:
                self._signal.succeed()
        return self._signal

    def pop(self) -> ChatEvent | None:
        return self.events.popleft() if self.events else None

    def cancel(self) -> bool:
        if self.finished or self._cancelled:
            return False
        self._cancelled = True
        if self._running:  # a process not started yet sees the flag when it starts
            self.proc.interrupt("cancelled")
        return True

    # The process ---------------------------------------------------------------------------------
    def _run(self, previous: Turn | None) -> Generator[Any, Any, None]:
        self._running = True
        try:
            if self._cancelled:
                raise simpy.Interrupt("cancelled")
            if previous is not None and not previous.done.processed:
                yield previous.done
            yield from self._converse()
        except simpy.Interrupt:
            self._emit(ChatEvent(K.CONTENT, content=INTERRUPTED))
            self._emit(ChatEvent(K.END))
            self.host.save_pending(self.session_id, None)
        except GeneratorExit:  # the world was discarded under the turn: nothing to keep
            self._close()
            raise
        except Exception as err:  # a failure here must not leave the session's next turns waiting
            log.exception("chat turn of session %s failed", self.session_id)
            self._emit(ChatEvent(K.ERROR, message=f"Processing failed: {err}"))
            self._emit(ChatEvent(K.END))
            self.host.save_pending(self.session_id, None)
        self._close()
        self.done.succeed()
        self.host.turn_ended(self.session_id)

    def _close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.finished = True
        self._wake()

    def _converse(self) -> Generator[Any, Any, None]:
        host, sid, request = self.host, self.session_id, self.request
        self._options = host.options(sid)
        messages = self._prompt()
        host.record(sid, _message("user", request.message, host.world.now(), images=request.images or None))
        doc = _pending_doc(sid, request.user_message or request.message, host.world.now())
        self._pending = _Pending(doc, self.env.now)
        host.save_pending(sid, doc)
        tools = host.tools.defs() if self._options.get("enable_tools", True) else []
        prompt_tokens = None
        for number in range(1, MAX_ROUNDS + 1):
            result = yield from self._ask(messages, tools if number < MAX_ROUNDS else [])
            if result.timed_out:
                self._emit(ChatEvent(K.ERROR, message="Stream timeout: response took too long"))
                break
            if result.failure is not None and number == 1:
                self._fallback(result.failure)
                return
            if result.failure is not None:
                self._emit(ChatEvent(K.ERROR, message=f"Processing failed: LLM error: {result.failure}"))
                break
            if not result.calls:
                thinking = result.thinking or None
                host.record(sid, _message("assistant", result.content, host.world.now(), thinking=thinking))
                prompt_tokens = result.prompt_tokens
                break
            yield from self._tools(number, result, messages)
        self._emit(ChatEvent(K.END, prompt_tokens=prompt_tokens))
        host.save_pending(sid, None)

    def _prompt(self) -> list[dict[str, Any]]:
        """System prompt, the stored conversation and the user's message, in the model's dialect."""
        system = self._options.get("system_prompt") or SYSTEM_PROMPT
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        calls: deque[ToolCall] = deque()
        for m in self.host.conversation(self.session_id)[-40:]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                made = [
                    ToolCall(c["name"], c["arguments"], f"call_h{len(messages)}_{i}")
                    for i, c in enumerate(m["tool_calls"])
                ]
                calls.extend(made)
                messages.append(self._assistant(m["content"], made))
            elif m["role"] == "tool":
                call = calls.popleft() if calls else ToolCall(m.get("tool_call_name") or "", {}, "")
                messages.append(self.model.tool_message(call, m["content"]))
            elif m["role"] in ("user", "assistant"):
                messages.append({"role": m["role"], "content": m["content"]})
        messages.append({"role": "user", "content": self.request.message})
        return messages

    def _assistant(self, content: str, calls: list[ToolCall] | tuple[ToolCall, ...]) -> dict[str, Any]:
        """The simulated model reads the OpenAI dialect."""
        return assistant_message(self.model, content, calls)

    # A round with the model -------------------------------------------------------------------
    def _ask(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Generator[Any, Any, _Round]:
        faults, env = self.host.faults, self.env
        if faults.hang:
            yield env.timeout(STREAM_TIMEOUT_S)
            return _Round(timed_out=True)
        status = faults.take_error()
        if status is not None:
            return _Round(failure=f"model backend answered HTTP {status}")
        if isinstance(self.model, SimChatModel):
            return (yield from self._paced(messages, tools))
        return (yield from self._streamed(messages, tools))

    def _paced(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Generator[Any, Any, _Round]:
        """The simulated model: its first token after a seeded delay, then one piece per beat."""
        env, faults = self.env, self.host.faults
        reply = self.model.reply(messages, {t["function"]["name"] for t in tools})
        key = self.host.world.streams.key(f"chat-pace:{self.session_id}")
        first = 0.25 + 0.5 * float(hash_uniform(key, int(env.now * 1000)))
        yield env.timeout(first + faults.slow_first_token_s)
        for piece in tokens(reply.content):
            self._content(piece)
            yield env.timeout(1.0 / faults.tokens_per_second)
        prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4
        return _Round(reply.content, "", reply.tool_calls, prompt)

    def _streamed(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> Generator[Any, Any, _Round]:
        """An HTTP model: its pieces as they arrive, each handed over when the world next steps."""
        env = self.env
        if self.host.faults.slow_first_token_s:
            yield env.timeout(self.host.faults.slow_first_token_s)
        inbox = simpy.Store(env)
        options = self._options
        overrides = {k: options[k] for k in ("model", "temperature") if options.get(k) is not None}
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return _Round(failure="no event loop to reach the model backend")
        self._task = loop.create_task(_pump(self.model, messages, tools, overrides, inbox))
        out = _Round()
        while True:
            get = inbox.get()
            got = yield get | env.timeout(STREAM_TIMEOUT_S)
            if get not in got:
                return _Round(timed_out=True)
            item = get.value
            if item is None:
                return out
            if isinstance(item, Unavailable):
                if not (out.content or out.thinking):
                    return _Round(failure=item.message)
                self._emit(ChatEvent(K.ERROR, message=f"Stream error: {item.message}"))
                return out
            if item.thinking:
                out.thinking += item.thinking
                self._thinking(item.thinking)
            if item.content:
                out.content += item.content
                self._content(item.content)
            if item.tool_calls or item.prompt_tokens is not None:
                out.calls, out.prompt_tokens = item.tool_calls, item.prompt_tokens

    def _tools(
        self, number: int, result: _Round, messages: list[dict[str, Any]]
    ) -> Generator[Any, Any, None]:
        """Run the round's calls on the world, report them after their (seeded) run time, and keep
        them in the history and the conversation."""
        host, env, sid = self.host, self.env, self.session_id
        outcomes = [(call, host.tools.call(call)) for call in result.calls]
        key = host.world.streams.key(f"chat-tools:{sid}")
        base = int(env.now * 1000)
        yield env.timeout(sum(0.02 + 0.1 * float(hash_uniform(key, base + i)) for i in range(len(outcomes))))
        now = host.world.now()
        records = [
            {"name": c.name, "id": "", "arguments": dict(c.arguments), "result": outcome, "round": number}
            for c, outcome in outcomes
        ]
        kept = [
            _message("assistant", result.content, now, tool_calls=records, thinking=result.thinking or None)
        ]
        messages.append(self._assistant(result.content, result.calls))
        for call, outcome in outcomes:
            ok = "error" not in outcome
            shown = _json(outcome) if ok else str(outcome["error"])
            self._emit(
                ChatEvent(K.TOOL_CALL_START, tool=call.name, arguments=dict(call.arguments), round=number)
            )
            self._emit(ChatEvent(K.TOOL_CALL_END, tool=call.name, result=shown, success=ok, round=number))
            kept.append(_message("tool", shown, now, tool_call_name=call.name))
            messages.append(self.model.tool_message(call, _json(outcome)))
        host.record(sid, *kept)
        self._emit(ChatEvent(K.INTERMEDIATE_END))

    def _fallback(self, reason: str) -> None:
        """The model failed before streaming: the server answers at once with its keyword fallback."""
        host = self.host
        host.record(self.session_id, _message("assistant", FALLBACK, host.world.now()))
        elapsed = round((self.env.now - self.started) * 1000)
        fallback = ChatEvent(
            K.RESPONSE, content=FALLBACK, message=f"LLM error: {reason}", processing_time_ms=elapsed
        )
        self._emit(fallback)
        host.save_pending(self.session_id, None)

    # Output ---------------------------------------------------------------------------------------
    def _content(self, piece: str) -> None:
        if self.env.now - self._progressed > PROGRESS_EVERY_S:
            self._progressed = self.env.now
            elapsed = int(self.env.now - self.started)
            progress = ChatEvent(
                K.PROGRESS, message="Generating response...", stage="generating", elapsed=elapsed
            )
            self._emit(progress)
        self._emit(ChatEvent(K.CONTENT, content=piece))
        self._pend(content=piece, stage="generating")

    def _thinking(self, piece: str) -> None:
        self._emit(ChatEvent(K.THINKING, content=piece))
        self._pend(thinking=piece, stage="thinking")

    def _pend(self, **changes: Any) -> None:
        """The stored pending state follows the stream, written every 20 pieces or 2 world seconds
        (like the server, which keeps the latest piece rather than the text so far)."""
        pending = self._pending
        if pending is None:
            return
        pending.doc.update(changes, updated_at=int(self.host.world.now()))
        pending.unsaved += 1
        if pending.unsaved >= PENDING_EVERY or self.env.now - pending.saved_at >= PENDING_EVERY_S:
            self.host.save_pending(self.session_id, pending.doc)
            pending.unsaved, pending.saved_at = 0, self.env.now

    def _emit(self, event: ChatEvent) -> None:
        self.events.append(event)
        self._wake()

    def _wake(self) -> None:
        signal = self._signal
        if signal is not None and not signal.triggered:
            signal.succeed()
            self._signal = None


async def _pump(
    model: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    overrides: Mapping[str, Any],
    inbox: simpy.Store,
) -> None:
    """Feed the model's stream into the turn's inbox: deltas, then ``None`` (or the failure)."""
    try:
        async for delta in stream(model, messages, tools, overrides):
            inbox.put(delta)
    except Unavailable as err:
        inbox.put(err)
        return
    inbox.put(None)


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def _message(role: str, content: str, at: float, **extra: Any) -> dict[str, Any]:
    """A history message in the agent's shape (``tool_calls`` and ``tool_call_id`` always present)."""
    message: dict[str, Any] = {"role": role, "content": content, "tool_calls": None, "tool_call_id": None}
    message.update({k: (list(v) if isinstance(v, tuple) else v) for k, v in extra.items() if v is not None})
    message["timestamp"] = int(at)
    return message


def _pending_doc(session_id: str, user_message: str, at: float) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "user_message": user_message,
        "content": "",
        "thinking": "",
        "stage": "waiting",
        "started_at": int(at),
        "updated_at": int(at),
    }
