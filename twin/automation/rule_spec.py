"""Rule definitions: validation and normalisation of the JSON, condition evaluation, cron times.

A definition is the vendor's ``CompiledRule`` JSON. :func:`parse` checks it and returns the stored
form: operators in symbol form (``greater_than`` → ``>``), every condition annotated with its
``source_type``/``source_id``/``metric``, the ``data_change`` trigger's ``sources`` derived from
the condition, defaults filled in (cooldown 60 000 ms, severity ``info``, target type ``device``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hardware.ports.errors import InvalidInput
from hardware.ports.rules import SEVERITIES, Rule, RuleExecution

DEFAULT_COOLDOWN_MS = 60_000
HINT = (
    'A rule is a JSON object: {"name": str, "trigger": {"trigger_type": "data_change"|"schedule"|'
    '"manual"}, "condition": {"condition_type": "comparison", "source": "device:<id>:<metric>", '
    '"operator": ">", "threshold": 30} | {"condition_type": "range", "source", "min", "max"} | '
    '{"condition_type": "logical", "operator": "and"|"or"|"not", "conditions": [...]}, '
    '"actions": [{"type": "notify", "message": str} | {"type": "execute", "target", '
    '"command", "params"} | {"type": "trigger_agent", "agent_id"}], "cooldown": ms, '
    '"for_duration": ms}'
)

OPERATORS: dict[str, str] = {}
for symbol, names in {
    ">": (">", "greater_than", "gt"),
    "<": ("<", "less_than", "lt"),
    ">=": (">=", "greater_equal", "gte", "greater_than_or_equal"),
    "<=": ("<=", "less_equal", "lte", "less_than_or_equal"),
    "==": ("==", "equal", "eq"),
    "!=": ("!=", "not_equal", "ne"),
    "contains": ("contains",),
    "starts_with": ("starts_with", "startswith"),
    "ends_with": ("ends_with", "endswith"),
    "regex": ("regex", "matches"),
}.items():
    OPERATORS.update(dict.fromkeys(names, symbol))
STRING_OPERATORS = ("contains", "starts_with", "ends_with", "regex")
SOURCE_TYPES = ("device", "extension", "transform")


def bad(message: str, field: str | None = None) -> InvalidInput:
    return InvalidInput(message, resource="rule", hint=HINT, field=field)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise bad(f"{what} must be a number", what)


def _ms(raw: Mapping[str, Any], key: str, default: int | None) -> int | None:
    value = raw.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise bad(f"{key} must be a non-negative integer (milliseconds)", key)
    return value


def parse_source(source: Any) -> tuple[str, str, str]:
    """``device:<id>:<metric>`` → ``(source_type, source_id, metric)``."""
    parts = source.split(":") if isinstance(source, str) else []
    if len(parts) != 3 or parts[0] not in SOURCE_TYPES or not parts[1] or not parts[2]:
        raise bad(f"Invalid source {source!r}: expected device:<device_id>:<metric>", "source")
    return parts[0], parts[1], parts[2]


def parse_condition(raw: Any, depth: int = 0) -> dict[str, Any]:
    if raw is None:
        return {"condition_type": "none"}
    if not isinstance(raw, Mapping) or depth > 8:
        raise bad("condition must be an object", "condition")
    kind = raw.get("condition_type")
    if kind == "none" and depth == 0:
        return {"condition_type": "none"}
    if kind == "logical":
        op: str | None = str(raw.get("operator", "")).lower()
        children = raw.get("conditions")
        if op not in ("and", "or", "not") or not isinstance(children, list) or not children:
            raise bad("logical condition needs operator and|or|not and a non-empty conditions list")
        if op == "not" and len(children) != 1:
            raise bad("a 'not' condition takes exactly one condition")
        return {
            "condition_type": "logical",
            "operator": op,
            "conditions": [parse_condition(c, depth + 1) for c in children],
        }
    if kind not in ("comparison", "range"):
        raise bad(f"Unknown condition_type {kind!r}", "condition_type")
    source_type, source_id, metric = parse_source(raw.get("source"))
    out: dict[str, Any] = {
        "condition_type": kind,
        "source": raw["source"],
        "source_type": source_type,
        "source_id": source_id,
        "metric": metric,
    }
    if kind == "range":
        lo, hi = _number(raw.get("min"), "min"), _number(raw.get("max"), "max")
        if lo > hi:
            raise bad("range min must not exceed max", "min")
        out.update(min=lo, max=hi)
        return out
    op = OPERATORS.get(str(raw.get("operator", "")).lower())
    if op is None:
        raise bad(f"Unknown operator {raw.get('operator')!r}", "operator")
    out["operator"] = op
    if op in STRING_OPERATORS:
        text = raw.get("threshold_value", raw.get("threshold"))
        if text is None:
            raise bad(f"operator {op} needs threshold_value", "threshold_value")
        out["threshold_value"] = str(text)
        if op == "regex":
            try:
                re.compile(out["threshold_value"])
            except re.error as err:
                raise bad(f"Invalid regex: {err}", "threshold_value") from err
        return out
    out["threshold"] = _number(raw.get("threshold"), "threshold")
    if raw.get("threshold_value") is not None:
        out["threshold_value"] = str(raw["threshold_value"])
    return out


def sources_of(condition: Mapping[str, Any]) -> list[str]:
    if condition["condition_type"] == "logical":
        return sorted({s for c in condition["conditions"] for s in sources_of(c)})
    if condition["condition_type"] == "none":
        return []
    return [condition["source"]]


def parse_action(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise bad("each action must be an object", "actions")
    kind = raw.get("type")
    if kind == "notify":
        message = raw.get("message")
        severity = str(raw.get("severity", "info")).lower()
        if not isinstance(message, str) or not message:
            raise bad("a notify action needs a message", "message")
        if severity not in SEVERITIES:
            raise bad(f"Invalid severity {raw.get('severity')!r}", "severity")
        out: dict[str, Any] = {"type": "notify", "message": message, "severity": severity}
        if raw.get("channels") is not None:
            out["channels"] = [str(c) for c in raw["channels"]]
        return out
    if kind == "execute":
        target, command = raw.get("target"), raw.get("command")
        target_type = raw.get("target_type", "device")
        params = raw.get("params") or {}
        if not isinstance(target, str) or not target or not isinstance(command, str) or not command:
            raise bad("an execute action needs target and command", "target")
        if target_type not in ("device", "extension") or not isinstance(params, Mapping):
            raise bad("execute: target_type is device|extension and params an object", "target_type")
        return {
            "type": "execute",
            "target": target,
            "target_type": target_type,
            "command": command,
            "params": dict(params),
        }
    if kind == "trigger_agent":
        agent_id = raw.get("agent_id")
        if not isinstance(agent_id, str) or not agent_id:
            raise bad("a trigger_agent action needs agent_id", "agent_id")
        out = {"type": "trigger_agent", "agent_id": agent_id}
        for key in ("input", "data"):
            if raw.get(key) is not None:
                out[key] = raw[key]
        return out
    raise bad(f"Unknown action type {kind!r}", "type")


def parse(raw: Any) -> dict[str, Any]:
    """Validate a definition; the normalised fields of the stored rule."""
    if not isinstance(raw, Mapping):
        raise bad("Invalid rule: expected a JSON object")
    name = raw.get("name")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 100:
        raise bad("name is required (1-100 characters)", "name")
    description = raw.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > 500):
        raise bad("description must be a string of at most 500 characters", "description")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise bad("enabled must be a boolean", "enabled")
    tags = raw.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad("tags must be a list of strings", "tags")
    condition = parse_condition(raw.get("condition"))
    trigger_raw = raw.get("trigger") or {"trigger_type": "data_change"}
    if not isinstance(trigger_raw, Mapping):
        raise bad("trigger must be an object", "trigger")
    trigger_type = trigger_raw.get("trigger_type", "data_change")
    if trigger_type == "data_change":
        trigger: dict[str, Any] = {"trigger_type": "data_change", "sources": sources_of(condition)}
    elif trigger_type == "schedule":
        cron = trigger_raw.get("cron")
        if not isinstance(cron, str):
            raise bad("a schedule trigger needs cron", "cron")
        Cron(cron)
        trigger = {"trigger_type": "schedule", "cron": cron}
    elif trigger_type == "manual":
        trigger = {"trigger_type": "manual"}
    else:
        raise bad(f"Unknown trigger_type {trigger_type!r}", "trigger_type")
    actions = raw.get("actions", [])
    if not isinstance(actions, list):
        raise bad("actions must be a list", "actions")
    return {
        "name": name,
        "description": description,
        "enabled": enabled,
        "tags": tags,
        "trigger": trigger,
        "condition": condition,
        "actions": [parse_action(a) for a in actions],
        "cooldown": _ms(raw, "cooldown", DEFAULT_COOLDOWN_MS),
        "for_duration": _ms(raw, "for_duration", None),
        "source": raw.get("source"),
    }


# Evaluation -----------------------------------------------------------------------------------
def compare(condition: Mapping[str, Any], value: Any) -> bool:
    """One comparison or range condition against one value (non-numbers never match numerically)."""
    if condition["condition_type"] == "range":
        number = _as_number(value)
        return number is not None and condition["min"] <= number <= condition["max"]
    op = condition["operator"]
    if op in STRING_OPERATORS:
        text, pattern = str(value), condition["threshold_value"]
        if op == "contains":
            return pattern in text
        if op == "starts_with":
            return text.startswith(pattern)
        if op == "ends_with":
            return text.endswith(pattern)
        return re.search(pattern, text) is not None
    if op in ("==", "!=") and isinstance(value, str) and "threshold_value" in condition:
        return (value == condition["threshold_value"]) == (op == "==")
    number = _as_number(value)
    if number is None:
        return False
    t = condition["threshold"]
    return {
        ">": number > t,
        "<": number < t,
        ">=": number >= t,
        "<=": number <= t,
        "==": number == t,
        "!=": number != t,
    }[op]


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def evaluate(condition: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """The condition over the latest value of each source (a source never seen makes it false)."""
    kind = condition["condition_type"]
    if kind == "none":
        return True
    if kind == "logical":
        results = [evaluate(c, values) for c in condition["conditions"]]
        op = condition["operator"]
        return all(results) if op == "and" else any(results) if op == "or" else not results[0]
    if condition["source"] not in values:
        return False
    return compare(condition, values[condition["source"]])


# Cron -----------------------------------------------------------------------------------------
class Cron:
    """A cron expression: 5 fields (minute hour day month weekday) or 6 with seconds first.

    Fields take ``*``, numbers, ``a-b``, ``a,b`` and ``/step``; weekday 0 or 7 is Sunday. Times
    are UTC Unix seconds.
    """

    RANGES = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 7))

    def __init__(self, expr: str) -> None:
        fields = expr.split()
        if len(fields) == 5:
            fields = ["0", *fields]
        if len(fields) not in (6, 7):  # a trailing year field is accepted and ignored
            raise bad(f"Invalid cron expression {expr!r}", "cron")
        try:
            self.sets = [self._field(f, lo, hi) for f, (lo, hi) in zip(fields[:6], self.RANGES, strict=True)]
        except ValueError as err:
            raise bad(f"Invalid cron expression {expr!r}", "cron") from err
        if 7 in self.sets[5]:
            self.sets[5].add(0)

    @staticmethod
    def _field(text: str, lo: int, hi: int) -> set[int]:
        out: set[int] = set()
        for part in text.split(","):
            body, _, step_text = part.partition("/")
            step = int(step_text) if step_text else 1
            if body in ("*", "?"):
                a, b = lo, hi
            elif "-" in body:
                a, b = (int(x) for x in body.split("-", 1))
            else:
                a = int(body)
                b = hi if step_text else a
            if not (lo <= a <= b <= hi) or step < 1:
                raise ValueError(text)
            out.update(range(a, b + 1, step))
        return out

    def next_after(self, unix: float) -> float:
        """The first matching whole second strictly after ``unix``."""
        t = math.floor(unix) + 1
        seconds, minutes, hours, days, months, weekdays = self.sets
        for _ in range(366 * 24 * 60 * 2):  # minutes in two years: more than any valid expression needs
            _, mo, d, h, mi, s, wd = _fields(t)
            if mo not in months or d not in days or (wd + 1) % 7 not in weekdays:
                t = _start_of_next_day(t)
                continue
            if h not in hours:
                t = t - t % 3600 + 3600
                continue
            if mi not in minutes:
                t = t - t % 60 + 60
                continue
            later = [x for x in sorted(seconds) if x >= s]
            if later:
                return float(t - s + later[0])
            t = t - t % 60 + 60
        raise bad("cron expression never matches", "cron")


def _fields(t: int) -> tuple[int, int, int, int, int, int, int]:
    g = datetime.fromtimestamp(t, UTC)
    return g.year, g.month, g.day, g.hour, g.minute, g.second, g.weekday()


def _start_of_next_day(t: int) -> int:
    return t - t % 86_400 + 86_400


def execution_of(d: dict[str, Any]) -> RuleExecution:
    """A recorded run, from its stored document."""
    return RuleExecution(**{**d, "actions_executed": tuple(d["actions_executed"])})


def rule_of(d: dict[str, Any]) -> Rule:
    """A rule, from its stored document."""
    return Rule(
        id=d["id"],
        name=d["name"],
        enabled=d["enabled"],
        trigger=d["trigger"],
        condition=d["condition"],
        actions=tuple(d["actions"]),
        cooldown_ms=d["cooldown"],
        for_duration_ms=d.get("for_duration"),
        trigger_count=d.get("trigger_count", 0),
        last_triggered=d.get("last_triggered"),
        created_at=d["created_at"],
        updated_at=d["updated_at"],
        description=d.get("description"),
        tags=tuple(d.get("tags") or ()),
        source=d.get("source"),
    )
