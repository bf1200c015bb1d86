"""The scenario JSON Schema for editors: ``python -m twin.scenario.schema`` writes scenarios/schema.json
(a test checks that the file is current)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from twin.scenario.model import scenario_model

SCHEMA_PATH = Path(__file__).resolve().parent.parent.parent / "scenarios" / "schema.json"


def schema_text() -> str:
    schema = scenario_model().model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "Twin scenario"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_PATH.write_text(schema_text())
    sys.stdout.write(f"wrote {SCHEMA_PATH}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
