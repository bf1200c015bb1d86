"""The parts of a scenario file checked before and beside its schema, and how a schema error is told:
the timeline's actions and their parameters (each problem at its own line and key), and, for an
unknown key, action, expectation kind or choice, the closest ones the file could have meant."""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from twin.scenario.catalog import ACTIONS
from twin.scenario.source import Document
from twin.scenario.suggest import did_you_mean

_QUOTED = re.compile(r"'([^']*)'")
_CHOICES = ("literal_error", "enum", "union_tag_invalid")
"""Error types whose context names the values the key takes."""


def precheck(doc: Document) -> list[tuple[int, str]]:
    """The actions named in the timeline and their parameters, checked on their own so that an
    unknown action or a bad parameter is reported at its own line and key, beside whatever else
    is wrong with the step (the schema then leaves them to this check)."""
    problems = []
    timeline = doc.data.get("timeline")
    for i, step in enumerate(timeline if isinstance(timeline, list) else []):
        if not isinstance(step, dict) or not isinstance(step.get("do"), str):
            continue
        name = step["do"]
        if name not in ACTIONS:
            why = f"unknown action {name!r}" + (
                did_you_mean(name, ACTIONS) or f"; known: {', '.join(sorted(ACTIONS))}"
            )
            problems.append(doc.problem(("timeline", i, "do"), why))
            continue
        params = step.get("params", {})
        if not isinstance(params, dict):
            continue
        model = ACTIONS[name].params
        try:
            model.model_validate(params)
        except ValidationError as err:
            problems += [
                doc.problem(("timeline", i, "params", *e["loc"]), message(e, model)) for e in err.errors()
            ]
    return problems


def message(error: Any, model: type[BaseModel]) -> str:
    """A validation error of ``model`` in words: ``unknown key; did you mean 'seconds'?``, or
    pydantic's own message with the closest allowed value when the key takes a few."""
    kind, loc = error["type"], tuple(error["loc"])
    if kind == "extra_forbidden":
        keys = _keys(_schema(model), loc[:-1])
        return "unknown key" + (did_you_mean(str(loc[-1]), keys) if keys else "")
    ctx = error.get("ctx") or {}
    given = ctx.get("tag", error.get("input"))
    if kind in _CHOICES and isinstance(given, str):
        allowed = _QUOTED.findall(str(ctx.get("expected_tags", ctx.get("expected", ""))))
        return error["msg"] + did_you_mean(given, allowed)
    return error["msg"]


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _keys(schema: dict[str, Any], loc: tuple) -> list[str] | None:
    """The keys the mapping at ``loc`` (a validation error's, union tags included) may have, read off
    the model's JSON Schema; ``None`` when the schema does not say."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        return node

    def walk(node: Any, path: tuple) -> list[str] | None:
        node = resolve(node)
        if not isinstance(node, dict):
            return None
        branches = [*node.get("anyOf", ()), *node.get("oneOf", ()), *node.get("allOf", ())]
        if not path:
            if "properties" in node:
                return list(node["properties"])
            return next((keys for b in branches if (keys := walk(b, path)) is not None), None)
        head, rest = path[0], path[1:]
        mapping = (node.get("discriminator") or {}).get("mapping", {})
        if isinstance(head, str) and head in mapping:
            return walk({"$ref": mapping[head]}, rest)
        if isinstance(head, str) and head in node.get("properties", {}):
            return walk(node["properties"][head], rest)
        if isinstance(head, int) and isinstance(node.get("items"), dict):
            return walk(node["items"], rest)
        if isinstance(head, str) and isinstance(node.get("additionalProperties"), dict):
            return walk(node["additionalProperties"], rest)
        return next((keys for b in branches if (keys := walk(b, path)) is not None), None)

    return walk(schema, loc)
