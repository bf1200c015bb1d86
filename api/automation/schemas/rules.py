"""Wire shapes of rules (release 0.9.24): the rule DTO with its DSL preview, dry runs, executions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from api import json_input
from hardware.ports.rules import Rule, RuleExecution, RuleImport, RuleTest


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rules: list[Any]


class EnableRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    enabled: bool


def rfc3339(unix: float | None) -> str | None:
    """``2026-01-01T00:01:20+00:00``: the rule timestamps' chrono form (offset, not ``Z``)."""
    return None if unix is None else datetime.fromtimestamp(unix, UTC).isoformat()


def test_value(raw: bytes) -> Any:
    """The optional body of ``POST /rules/:id/test``: ``{"value": n}``, ``{"input": n}``, a bare JSON
    value, or plain text. ``None`` when there is none."""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        body = json_input.loads(raw, json_input.SERDE)
    except ValueError:  # not JSON as the server reads it (a lone surrogate, too deep...): text
        return text
    if isinstance(body, dict):
        return body.get("value", body.get("input"))
    return body


def _number(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else json.dumps(x)


def _condition_dsl(c: Mapping[str, Any]) -> str:
    kind = c["condition_type"]
    if kind == "none":
        return "true"
    if kind == "logical":
        parts = [_condition_dsl(child) for child in c["conditions"]]
        if c["operator"] == "not":
            return f"NOT ({parts[0]})"
        return f" {c['operator'].upper()} ".join(f"({p})" for p in parts)
    if kind == "range":
        return f"{c['source']} BETWEEN {_number(c['min'])} AND {_number(c['max'])}"
    value = _number(c["threshold"]) if "threshold" in c else json.dumps(c["threshold_value"])
    return f"{c['source']} {c['operator']} {value}"


def _action_dsl(a: Mapping[str, Any]) -> str:
    if a["type"] == "notify":
        return f"NOTIFY {json.dumps(a['message'])}"
    if a["type"] == "execute":
        params = ", ".join(f"{k}={json.dumps(v)}" for k, v in a["params"].items())
        return f"EXECUTE {a['target_type']}:{a['target']}.{a['command']}({params})"
    return f"TRIGGER AGENT {a['agent_id']}"


def dsl_preview(r: Rule) -> str:
    """A read-only rendering of the JSON rule in the server's rule language."""
    lines = [f"RULE {json.dumps(r.name)}"]
    if r.trigger["trigger_type"] == "schedule":
        lines.append(f"SCHEDULE {json.dumps(r.trigger['cron'])}")
    lines.append(f"WHEN {_condition_dsl(r.condition)}")
    if r.for_duration_ms:
        lines.append(f"FOR {r.for_duration_ms / 1000:g} seconds")
    lines.append("DO")
    lines += [f"    {_action_dsl(a)}" for a in r.actions]
    lines.append("END")
    return "\n".join(lines)


def _condition(c: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(c)
    if c["condition_type"] == "range":
        out["operator"] = "between"
    if c["condition_type"] == "logical":
        out["conditions"] = [_condition(child) for child in c["conditions"]]
    return out


def rule(r: Rule, *, detail: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {"id": r.id, "name": r.name}
    if r.description is not None:
        body["description"] = r.description
    body.update(
        enabled=r.enabled,
        trigger_count=r.trigger_count,
        last_triggered=rfc3339(r.last_triggered),
        created_at=rfc3339(r.created_at),
        updated_at=rfc3339(r.updated_at),
        trigger=dict(r.trigger),
        condition=_condition(r.condition),
        actions=[dict(a) for a in r.actions],
        cooldown=r.cooldown_ms,
    )
    if r.last_triggered is None:
        del body["last_triggered"]
    if r.tags:
        body["tags"] = list(r.tags)
    if r.for_duration_ms is not None:
        body["for_duration"] = r.for_duration_ms
    body["dsl_preview"] = dsl_preview(r)
    if detail:
        body["source"] = r.source
    return body


def execution(e: RuleExecution) -> dict[str, Any]:
    return {
        "rule_id": e.rule_id,
        "rule_name": e.rule_name,
        "success": e.success,
        "actions_executed": list(e.actions_executed),
        "error": e.error,
        "duration_ms": e.duration_ms,
        "triggered_at": rfc3339(e.triggered_at),
    }


def trigger_result(e: RuleExecution) -> dict[str, Any]:
    return {
        "rule_id": e.rule_id,
        "success": e.success,
        "actions_executed": list(e.actions_executed),
        "error": e.error,
        "duration_ms": e.duration_ms,
    }


def test_result(t: RuleTest) -> dict[str, Any]:
    body: dict[str, Any] = {
        "rule_id": t.rule_id,
        "rule_name": t.rule_name,
        "condition_met": t.condition_met,
        "value_used": t.value_used,
        "value_source": t.value_source,
        "threshold": t.threshold,
        "operator": t.operator,
    }
    if t.operator == "between":
        body.update(range_min=t.range_min, range_max=t.range_max)
    if t.executed is not None:
        body["executed"] = t.executed
        if t.execution is not None:
            r = trigger_result(t.execution)
            body["execution_result"] = {k: v for k, v in r.items() if k != "rule_id"}
    return body


def export(rules: list[Rule], now: float) -> dict[str, Any]:
    return {
        "version": "1.0",
        "exported_at": rfc3339(now),
        "count": len(rules),
        "rules": [rule(r, detail=True) for r in rules],
    }


def imported(result: RuleImport) -> dict[str, Any]:
    return {"imported": result.imported, "skipped": result.skipped, "errors": list(result.errors)}


def stats(rules: list[Rule]) -> dict[str, Any]:
    """``/stats/rules``: counts, and rules per trigger type."""
    by_type: dict[str, int] = {}
    for r in rules:
        by_type[r.trigger["trigger_type"]] = by_type.get(r.trigger["trigger_type"], 0) + 1
    enabled = sum(r.enabled for r in rules)
    return {
        "total_rules": len(rules),
        "enabled_rules": enabled,
        "disabled_rules": len(rules) - enabled,
        "by_type": by_type,
    }
