"""The built-in simulated chat model: a pure function of the world's seed and the conversation.

Given the conversation so far (OpenAI-style messages) it either asks for tools or answers, like a
small model driving the server's tools would: a question about devices lists them, a question about
readings reads a device's metrics (listing the devices first when none is named), a command looks
up the device's commands and sends the one named, a rule request reads the device and creates the
rule. The answer is written from the tool results of the turn, so it names the values the world
really has. Wording varies with the seed; the same seed and conversation give the same text.

:func:`tokens` cuts a text into the pieces a stream delivers (a word or up to five characters).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from twin.automation.chat_models import Reply, ToolCall
from twin.rng import hash_uniform

MAX_TARGETS = 10
"""The most devices one question reads: as many as a device list names (the rest are counted)."""
PLURAL = frozenset({"all", "each", "every", "devices", "sensors"})
LIST_WORDS = frozenset({"list", "devices", "sensors", "which", "inventory"})
READ_WORDS = frozenset(
    {"telemetry", "reading", "readings", "value", "values", "metric", "metrics", "current", "read",
     "temperature", "humidity", "measure", "measuring", "report", "reports", "status", "now"}
)  # fmt: skip
HISTORY_WORDS = {"average": "avg", "avg": "avg", "mean": "avg", "max": "max", "maximum": "max",
                 "highest": "max", "min": "min", "minimum": "min", "lowest": "min"}  # fmt: skip
COMMAND_WORDS = frozenset(
    {
        "send",
        "command",
        "execute",
        "run",
        "trigger",
        "reboot",
        "identify",
        "restart",
        "set",
        "change",
        "switch",
    }
)
RULE_WORDS = frozenset({"rule", "alert", "notify", "automation"})
BELOW_WORDS = frozenset({"below", "under", "less", "lower", "drops", "falls", "<"})
STOP_WORDS = frozenset(
    {"the", "a", "an", "of", "my", "me", "is", "are", "what", "show", "tell", "please", "and", "to",
     "for", "on", "in", "it", "its", "their", "give", "get", "can", "you", "i", "do", "have", "from",
     "with", "when", "how", "much", "many", "there", "about", "this", "that", "which", "now"}
)  # fmt: skip
_WORD = re.compile(r"[a-z0-9_][a-z0-9_.\-]*|[<>]")
_NUMBER = re.compile(r"(?<![\w.\-])-?\d+(?:\.\d+)?(?![\w\-])")
_TOKEN = re.compile(r"\s*(?:\w{1,5}|[^\w\s])|\s+")

GREETINGS = (
    "Hello! I can list your devices, read their telemetry, send them commands and create "
    "automation rules. What would you like to do?",
    "Hi! Ask me about your devices: I can read their current values and history, send commands "
    "and set up rules for you.",
)
CLOSINGS = ("", " Let me know if you need anything else.", " Anything else I should check?")
PREAMBLES = {
    "list_devices": ("Let me check which devices are registered.", "I'll look up the devices first."),
    "get_device_metrics": ("Let me read the current values.", "I'll fetch the latest readings."),
    "query_telemetry": ("Let me look at the history.", "I'll query the stored telemetry."),
    "get_device": ("Let me look up what this device accepts.", "I'll check the device's commands."),
    "send_device_command": ("Sending the command now.", "I'll send that command."),
    "create_rule": ("I'll create that rule.", "Creating the rule now."),
}


def tokens(text: str) -> list[str]:
    """The stream pieces of ``text``; joined they give ``text`` back."""
    return _TOKEN.findall(text)


def _words(text: str) -> list[str]:
    return [w.rstrip(".-") for w in _WORD.findall(text.lower())]


def _fmt(value: Any, digits: int | None = None) -> str:
    if isinstance(value, float) and digits is not None:
        value = round(value, digits)
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True, slots=True)
class _Result:
    name: str
    data: Mapping[str, Any]
    args: Mapping[str, Any]
    """The arguments of the call it answers."""


@dataclass(slots=True)
class _Ask:
    """What the user's message asks for."""

    words: list[str]
    ids: list[str]
    numbers: list[float]
    listing: bool
    reading: bool
    aggregate: str | None
    hours: int
    command: bool
    rule: bool

    @classmethod
    def of(cls, text: str) -> _Ask:
        words = _words(text)
        found = set(words)
        ids = [w for w in dict.fromkeys(words) if re.search(r"\d", w) and re.search(r"[a-z]", w) and "-" in w]
        masked = text.lower()
        for device_id in ids:
            masked = masked.replace(device_id, " ")
        numbers = [float(n) for n in _NUMBER.findall(masked)]
        aggregate = next((HISTORY_WORDS[w] for w in words if w in HISTORY_WORDS), None)
        hours = next(
            (int(n) for n, w in itertools.pairwise(words) if w.startswith("hour") and n.isdigit()),
            24,
        )
        rule = bool(found & RULE_WORDS) and bool(
            found & {"create", "add", "make", "set", "new", "when", "if"}
        )
        return cls(
            words,
            ids,
            numbers,
            listing=bool(found & LIST_WORDS),
            reading=bool(found & READ_WORDS) or aggregate is not None,
            aggregate=aggregate,
            hours=max(1, min(720, hours)),
            command=bool(found & COMMAND_WORDS) and not rule,
            rule=rule,
        )

    @property
    def needs_device(self) -> bool:
        return self.reading or self.command or self.rule

    def mentions(self, name: str) -> bool:
        text = " ".join(self.words)
        return name.lower() in self.words or name.lower().replace("_", " ") in text


class SimChatModel:
    """The chat's simulated model: a turn calls :meth:`reply` directly (nothing to await) and writes
    the conversation's tool messages with :meth:`tool_message`, as for an HTTP model."""

    def __init__(self, seed_key: int) -> None:
        self.seed_key = seed_key

    def tool_message(self, call: ToolCall, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call.call_id, "name": call.name, "content": content}

    def reply(self, messages: Sequence[Mapping[str, Any]], tool_names: set[Any]) -> Reply:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        ask = _Ask.of(str(messages[last_user].get("content", "")) if last_user >= 0 else "")
        done = _results(messages[last_user + 1 :])
        u = self._uniform(messages)
        calls = [c for c in self._plan(ask, done) if c.name in tool_names]
        if calls:
            choices = PREAMBLES.get(calls[-1].name, ("One moment.",))
            calls = [ToolCall(c.name, c.arguments, f"call_{len(done) + i}") for i, c in enumerate(calls)]
            preamble = choices[int(u * len(choices))] + "\n\n"
            return Reply(preamble, tuple(calls), round(0.6 + 0.4 * u, 2))
        return Reply(self._answer(ask, done, u), (), round(0.6 + 0.4 * u, 2))

    def _uniform(self, messages: Sequence[Mapping[str, Any]]) -> float:
        text = json.dumps([[m.get("role"), m.get("content")] for m in messages], default=str)
        digest = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 2
        return float(hash_uniform(self.seed_key, digest))

    # Planning -------------------------------------------------------------------------------------
    @staticmethod
    def _plan(ask: _Ask, done: list[_Result]) -> list[ToolCall]:
        listed = next((r.data for r in done if r.name == "list_devices" and "devices" in r.data), None)
        if (ask.listing or (ask.needs_device and not ask.ids)) and not any(
            r.name == "list_devices" for r in done
        ):
            return [ToolCall("list_devices", {})] + [
                ToolCall("get_device_metrics", {"device_id": d}) for d in ask.ids[:MAX_TARGETS] if ask.reading
            ]
        if not ask.needs_device:
            return []
        targets = _targets(ask, listed)
        metrics = {r.data.get("device_id"): r.data for r in done if r.name == "get_device_metrics"}
        calls: list[ToolCall] = []
        if ask.reading or ask.rule:
            calls += [
                ToolCall("get_device_metrics", {"device_id": t})
                for t in targets
                if t not in metrics and not _failed(done, "get_device_metrics", t)
            ]
        if calls:
            return calls
        if ask.aggregate and not any(r.name == "query_telemetry" for r in done):
            for t in targets:
                metric = _metric(ask, metrics.get(t))
                if metric:
                    args = {"device_id": t, "metric": metric, "hours": ask.hours, "aggregate": ask.aggregate}
                    calls.append(ToolCall("query_telemetry", args))
        if ask.command and targets and not any(r.name == "send_device_command" for r in done):
            details = next(
                (r.data for r in done if r.name == "get_device" and r.data.get("device_id") == targets[0]),
                None,
            )
            if details is None and not _failed(done, "get_device", targets[0]):
                calls.append(ToolCall("get_device", {"device_id": targets[0]}))
            elif details is not None and (chosen := _command(ask, details)) is not None:
                calls.append(ToolCall("send_device_command", {"device_id": targets[0], **chosen}))
        if ask.rule and targets and ask.numbers and not any(r.name == "create_rule" for r in done):
            metric = _metric(ask, metrics.get(targets[0]))
            if metric:
                calls.append(ToolCall("create_rule", _rule_args(ask, targets[0], metric)))
        return calls

    # Writing ----------------------------------------------------------------------------------------
    @staticmethod
    def _answer(ask: _Ask, done: list[_Result], u: float) -> str:
        if not done:
            if ask.needs_device or ask.listing:
                return "I could not find a device to work with. Which device do you mean?"
            return GREETINGS[int(u * len(GREETINGS))]
        sent = any(r.name == "send_device_command" for r in done)
        parts = [_sentence(ask, r) for r in done if not (sent and r.name == "get_device")]
        if ask.rule and not any(r.name == "create_rule" for r in done) and not ask.numbers:
            parts.append("Which threshold should the rule use?")
        text = " ".join(p for p in parts if p)
        return text + CLOSINGS[int(u * len(CLOSINGS))]


def _load(content: Any) -> Mapping[str, Any]:
    try:
        data = json.loads(str(content))
    except ValueError:
        return {"error": str(content)}
    return data if isinstance(data, dict) else {"result": data}


def _results(messages: Sequence[Mapping[str, Any]]) -> list[_Result]:
    """The tool results, each with the arguments of its call (OpenAI dialect: by ``tool_call_id``)."""
    args: dict[str, Mapping[str, Any]] = {}
    out = []
    for m in messages:
        for call in m.get("tool_calls") or ():
            args[call.get("id", "")] = _load(call.get("function", {}).get("arguments"))
        if m.get("role") == "tool":
            out.append(
                _Result(
                    str(m.get("name", "")), _load(m.get("content")), args.get(m.get("tool_call_id", ""), {})
                )
            )
    return out


def _failed(done: list[_Result], name: str, device_id: str) -> bool:
    return any(r.name == name and r.args.get("device_id") == device_id and "error" in r.data for r in done)


def _targets(ask: _Ask, listed: Mapping[str, Any] | None) -> list[str]:
    if ask.ids:
        return ask.ids[:MAX_TARGETS]
    devices = [d for d in (listed or {}).get("devices", ()) if isinstance(d, dict)]
    keys = [w for w in ask.words if w not in STOP_WORDS and len(w) > 2]
    matched = [
        d
        for d in devices
        if any(k.rstrip("s") in str(d.get("device_id", "")) + str(d.get("device_type", "")) for k in keys)
    ]
    pool = matched or [d for d in devices if d.get("status") == "online"] or devices
    count = MAX_TARGETS if set(ask.words) & PLURAL and not ask.command and not ask.rule else 1
    return [str(d["device_id"]) for d in pool[:count]]


def _metric(ask: _Ask, metrics: Mapping[str, Any] | None) -> str | None:
    values = (metrics or {}).get("values") or {}
    named = [m for m in values if ask.mentions(m)]
    numeric = [m for m, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)]
    return (named or numeric or [None])[0]


def _command(ask: _Ask, details: Mapping[str, Any]) -> dict[str, Any] | None:
    """The device's command the message names (every word of its name, or its display name)."""
    for command in details.get("commands", ()):
        named = set(command["name"].lower().split("_")) <= set(ask.words)
        if named or ask.mentions(command.get("display_name") or command["name"]):
            params = {
                p: (int(n) if n.is_integer() else n)
                for p, n in zip(command.get("parameters", ()), ask.numbers, strict=False)
            }
            return {"command": command["name"], "params": params}
    return None


def _rule_args(ask: _Ask, device_id: str, metric: str) -> dict[str, Any]:
    operator = "<" if set(ask.words) & BELOW_WORDS else ">"
    threshold = ask.numbers[0]
    threshold = int(threshold) if threshold.is_integer() else threshold
    name = f"{metric} {operator} {threshold} on {device_id}"
    definition = {
        "name": name,
        "trigger": {"trigger_type": "data_change"},
        "condition": {
            "condition_type": "comparison",
            "source": f"device:{device_id}:{metric}",
            "operator": operator,
            "threshold": threshold,
        },
        "actions": [{"type": "notify", "message": f"{device_id} {metric} {operator} {threshold}"}],
    }
    return {"name": name, "dsl": json.dumps(definition), "enabled": True}


def _sentence(ask: _Ask, r: _Result) -> str:
    data = r.data
    if "error" in data:
        return f"{r.name} failed: {data['error']}."
    if r.name == "list_devices":
        devices = [d for d in data.get("devices", ()) if isinstance(d, dict)]
        if not devices:
            return "No devices are registered yet."
        shown = ", ".join(f"{d.get('device_id')} ({d.get('status')})" for d in devices[:MAX_TARGETS])
        more = f" and {len(devices) - MAX_TARGETS} more" if len(devices) > MAX_TARGETS else ""
        return f"I found {len(devices)} device{'s' if len(devices) != 1 else ''}: {shown}{more}."
    if r.name == "get_device_metrics":
        values, units = data.get("values") or {}, data.get("units") or {}
        order = sorted(values, key=lambda m: not ask.mentions(m))
        if not values:
            return f"{data.get('device_id')} has not reported any values yet."
        shown = ", ".join(
            f"{m} is {_fmt(values[m])}{(' ' + units[m]) if units.get(m) else ''}" for m in order
        )
        return f"On {data.get('device_id')} ({data.get('status')}) the {shown}."
    if r.name == "query_telemetry":
        return (
            f"Over the last {data.get('hours')} hours the {data.get('aggregate')} {data.get('metric')} "
            f"of {data.get('device_id')} was {_fmt(data.get('value'), 2)} ({data.get('points')} samples)."
        )
    if r.name == "get_device":
        names = ", ".join(c["name"] for c in data.get("commands", ())) or "no commands"
        return f"{data.get('device_id')} accepts {names}. Which command should I send?"
    if r.name == "send_device_command":
        return f"I sent {data.get('command')} to {data.get('device_id')} (command {data.get('command_id')})."
    if r.name == "create_rule":
        state = "enabled" if data.get("enabled") else "disabled"
        return f'I created the rule "{data.get("name")}" ({data.get("rule_id")}); it is {state}.'
    if r.name == "list_rules":
        return f"There are {len(data.get('rules', ()))} rules."
    return ""
