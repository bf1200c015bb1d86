"""The scenario JSON Schema for editors: ``python -m twin.scenario.schema`` writes scenarios/schema.json
(a test checks that the file is current). A timeline step's ``params`` are those of the action its
``do`` names: each action's parameter schema (from :data:`twin.scenario.catalog.ACTIONS`) applies
under an ``if``/``then`` on ``do``, so an editor completes and checks them as the validator does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from twin.scenario.catalog import ACTIONS
from twin.scenario.model import scenario_model

SCHEMA_PATH = Path(__file__).resolve().parent.parent.parent / "scenarios" / "schema.json"
STEP = "Step"


def _action_params(defs: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``if do is X then params is X's parameters`` rule per action; the parameter models'
    own definitions go into ``defs``."""
    rules = []
    for name in sorted(ACTIONS):
        action = ACTIONS[name]
        params = action.params.model_json_schema()
        for key, sub in params.pop("$defs", {}).items():
            if defs.setdefault(key, sub) != sub:
                raise ValueError(f"{name}: parameter definition {key!r} clashes with another of that name")
        params["description"] = action.doc
        rules.append(
            {
                "if": {"properties": {"do": {"const": name}}, "required": ["do"]},
                "then": {"properties": {"params": params}},
            }
        )
    return rules


def schema_text() -> str:
    schema = scenario_model().model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Twin scenario"
    defs = schema["$defs"]
    defs[STEP]["allOf"] = _action_params(defs)
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
